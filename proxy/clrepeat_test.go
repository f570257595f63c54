package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// verbatimOrigin answers every request on its connections with answer, verbatim,
// and closes the connection.
func verbatimOrigin(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				br := bufio.NewReader(c)
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				io.WriteString(c, answer)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// h2FramesOrigin is an h2c origin writing its answers frame by frame:
// HEADERS with :status 200 and fields, then body in a DATA frame ending the
// stream (net/http's HTTP/2 server would send one Content-Length only).
func h2FramesOrigin(t *testing.T, fields [][2]string, body string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.ReadFull(c, make([]byte, len(http2.ClientPreface))); err != nil {
					return
				}
				fr := http2.NewFramer(c, c)
				fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
				fr.WriteSettings()
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					switch f := f.(type) {
					case *http2.SettingsFrame:
						if !f.IsAck() {
							fr.WriteSettingsAck()
						}
					case *http2.MetaHeadersFrame:
						var hb bytes.Buffer
						enc := hpack.NewEncoder(&hb)
						enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
						for _, hf := range fields {
							enc.WriteField(hpack.HeaderField{Name: hf[0], Value: hf[1]})
						}
						fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: hb.Bytes(), EndHeaders: true})
						fr.WriteData(f.StreamID, true, []byte(body))
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestRepeatedContentLengthCollapsed: an origin's answer with the same
// Content-Length twice reaches the client with one (RFC 9110 §8.6), on
// both engines, over HTTP/1.1 and HTTP/2 origins; the stdlib engine passed
// both on. Differing values from an HTTP/2 origin (whose transport does not
// check them) are dropped, and the body is framed by the proxy.
func TestRepeatedContentLengthCollapsed(t *testing.T) {
	h1 := verbatimOrigin(t, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
	h2same := h2cOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Length"] = []string{"5", "5"}
		io.WriteString(w, "hello")
	})
	h2differ := h2FramesOrigin(t, [][2]string{{"content-length", "5"}, {"content-length", "6"}}, "hello")
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		for _, o := range []struct {
			name, url, proto string
		}{{"http1", h1, OriginHTTP1}, {"http2", h2same, OriginHTTP2}, {"http2 differing", h2differ, OriginHTTP2}} {
			t.Run(engineName+"/"+o.name, func(t *testing.T) {
				cfg := pool1(PolicyFirst, o.url)
				cfg.Pools[0].OriginProtocol = o.proto
				addr := runPlainProxy(t, cfg, engineName)
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				fmt.Fprintf(c, "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
				tp := textproto.NewReader(bufio.NewReader(c))
				status, err := tp.ReadLine()
				if err != nil {
					t.Fatal(err)
				}
				hdr, err := tp.ReadMIMEHeader()
				if err != nil {
					t.Fatalf("%s: head: %v", status, err)
				}
				var br io.Reader = tp.R
				if hdr.Get("Transfer-Encoding") == "chunked" {
					br = httputil.NewChunkedReader(tp.R)
				}
				body, _ := io.ReadAll(br)
				if !strings.Contains(status, " 200 ") || len(hdr["Content-Length"]) > 1 || string(body) != "hello" ||
					len(hdr["Content-Length"]) == 1 && hdr.Get("Content-Length") != "5" {
					t.Errorf("%s Content-Length %q Transfer-Encoding %q body %q; want 200 with one Content-Length: 5 (or none) and hello",
						status, hdr["Content-Length"], hdr["Transfer-Encoding"], body)
				}
			})
		}
	}
}
