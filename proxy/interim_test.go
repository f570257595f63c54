package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestInterimAnswersForwarded: an origin's 103 Early Hints reaches an
// HTTP/1.1 client before the final answer, with its Link field, on both
// engines, on the fast path (GET) and through Go's transport (POST), as a
// proxy must forward 1xx (RFC 9110 §15.2; was: dropped). The final answer
// does not carry the hint's fields, and the hint no Content-Length the
// origin put on it. An HTTP/1.0 client gets no 1xx.
func TestInterimAnswersForwarded(t *testing.T) {
	origin := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			c.Write([]byte("HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\nContent-Length: 5\r\n\r\n" +
				"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		}
	})
	for _, engineName := range bothEngines {
		h := startWith(t, pool1(PolicyFirst, origin), nil, false, engineName)
		for _, tc := range []struct {
			name, req string
			hints     bool
		}{
			{"GET", "GET /x HTTP/1.1\r\nHost: x\r\n\r\n", true},
			{"POST", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nb", true},
			{"HTTP/1.0 GET", "GET /x HTTP/1.0\r\nHost: x\r\n\r\n", false},
		} {
			t.Run(engineName+"/"+tc.name, func(t *testing.T) {
				c, err := net.Dial("tcp", h.front.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(c, tc.req)
				tp := textproto.NewReader(bufio.NewReader(c))
				line, err := tp.ReadLine()
				if err != nil {
					t.Fatal(err)
				}
				if tc.hints {
					hdr, err := tp.ReadMIMEHeader()
					if line != "HTTP/1.1 103 Early Hints" || err != nil || hdr.Get("Link") != "</s.css>; rel=preload" {
						t.Fatalf("first answer %q %v %v, want 103 Early Hints with the origin's Link", line, hdr, err)
					}
					if v, ok := hdr["Content-Length"]; ok {
						t.Errorf("103 carries Content-Length %q: never on a 1xx (RFC 9110 §8.6)", v)
					}
					if line, err = tp.ReadLine(); err != nil {
						t.Fatal(err)
					}
				}
				if line != "HTTP/1.1 200 OK" && line != "HTTP/1.0 200 OK" {
					t.Fatalf("answer %q, want the final 200", line)
				}
				hdr, err := tp.ReadMIMEHeader()
				if err != nil || hdr.Get("Link") != "" {
					t.Fatalf("final answer's header %v %v, want no Link", hdr, err)
				}
			})
		}
	}
}

// TestInterimAnswersForwardedHTTP2: an HTTP/2 client on the TLS listener
// gets the origin's 103 (its own HEADERS frame with :status 103 and the
// Link field) before the final 200.
func TestInterimAnswersForwardedHTTP2(t *testing.T) {
	origin := checktest.CannedOrigin(t, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"+
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	addr, roots := runTLSProxy(t, pool1(PolicyFirst, origin))
	_, fr := h2Open(t, addr, roots, [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "x"}, {":path", "/x"}})
	dec := hpack.NewDecoder(4096, nil)
	var got []string
	for len(got) < 2 {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("after answers %q: %v", got, err)
		}
		hf, ok := f.(*http2.HeadersFrame)
		if !ok {
			if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
				fr.WriteSettingsAck()
			}
			continue
		}
		fields, err := dec.DecodeFull(hf.HeaderBlockFragment())
		if err != nil {
			t.Fatal(err)
		}
		var status, link string
		for _, f := range fields {
			switch f.Name {
			case ":status":
				status = f.Value
			case "link":
				link = f.Value
			}
		}
		got = append(got, status+" "+link)
	}
	if got[0] != "103 </s.css>; rel=preload" || got[1] != "200 " {
		t.Fatalf("answers %q, want 103 with the Link, then 200 without", got)
	}
}

// TestInterimAnswersBoundedThroughTransport: through Go's transport (a
// POST) as on the fast path, ten interim answers are passed and an eleventh
// fails the try (cause protocol, 502); setting the transport's interim hook
// had lifted its own bound (was: 50 passed, then the 200).
func TestInterimAnswersBoundedThroughTransport(t *testing.T) {
	for _, tc := range []struct {
		hints int
		want  int
	}{{10, 200}, {11, 502}} {
		origin := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			c.Write([]byte(strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n", tc.hints) +
				"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		})
		for _, engineName := range bothEngines {
			t.Run(fmt.Sprintf("%s/%d", engineName, tc.hints), func(t *testing.T) {
				cfg := pool1(PolicyFirst, origin)
				cfg.Pools[0].Retry.Tries = 1
				h := startWith(t, cfg, nil, false, engineName)
				resps, _, _ := rawExchange(t, h, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nb")
				var hints, final int
				for _, r := range resps {
					if r.StatusCode == 103 {
						hints++
					} else {
						final = r.StatusCode
					}
				}
				if final != tc.want || hints > 10 {
					t.Fatalf("%d interim answers then %d; want at most 10, then %d", hints, final, tc.want)
				}
			})
		}
	}
}

// TestInterimNotAfterTheTryEnded: an origin floods interim answers to a
// client that does not read, and the try ends at try_timeout while the
// transport is still passing one on: the proxy's own 504 follows the
// interim answers sent so far and none comes after it (was: the transport's
// goroutine went on writing interim answers into the handler's answer, a
// data race on the header map).
func TestInterimNotAfterTheTryEnded(t *testing.T) {
	link := "Link: </" + strings.Repeat("a", 16<<10) + ">; rel=preload\r\n"
	origin := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		c.SetWriteDeadline(time.Now().Add(3 * time.Second))
		for i := 0; i < 10; i++ {
			if _, err := io.WriteString(c, "HTTP/1.1 103 Early Hints\r\n"+link+"\r\n"); err != nil {
				break
			}
		}
		time.Sleep(3 * time.Second)
	})
	for _, engineName := range bothEngines {
		t.Run(engineName, func(t *testing.T) {
			cfg := pool1(PolicyFirst, origin)
			cfg.Pools[0].Retry.Tries = 1
			cfg.Pools[0].Retry.TryTimeout = 500 * time.Millisecond
			cfg.Pools[0].ConnectTimeout = 200 * time.Millisecond
			cfg.SendTimeout = 5 * time.Second
			h := startWith(t, cfg, nil, false, engineName)
			c, err := net.Dial("tcp", h.front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(4096)
			io.WriteString(c, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nb")
			time.Sleep(1500 * time.Millisecond) // not reading: the proxy's writes block
			c.SetDeadline(time.Now().Add(6 * time.Second))
			br := bufio.NewReaderSize(c, 64<<10)
			var final string
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					break
				}
				if !strings.HasPrefix(line, "HTTP/1.1 ") {
					continue
				}
				if final != "" {
					t.Fatalf("%q after the final answer %q", strings.TrimSpace(line), final)
				}
				if !strings.HasPrefix(line, "HTTP/1.1 103") {
					final = strings.TrimSpace(line)
				}
			}
			if !strings.HasPrefix(final, "HTTP/1.1 504") {
				t.Fatalf("final answer %q, want the proxy's 504", final)
			}
		})
	}
}
