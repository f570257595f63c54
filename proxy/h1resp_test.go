package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// rawResponder is an origin that answers every request on a connection with
// answer (then closes when close is set).
func rawResponder(t testing.TB, answer string, close bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	resp := []byte(answer) // once: a benchmark counts the origin's allocations too
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 { // the empty line ending the head
							break
						}
					}
					if _, err := c.Write(resp); err != nil || close {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestOriginResponseFraming: what the fast path does with each origin
// response framing, as the client sees it.
func TestOriginResponseFraming(t *testing.T) {
	tests := []struct {
		name, answer string
		close        bool
		wantStatus   int
		wantBody     string
		wantErr      bool // the client must see a broken body
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, 200, "hello", false},
		{"chunked with trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n0\r\nX-T: v\r\n\r\n", false, 200, "hello", false},
		{"close-delimited", "HTTP/1.0 200 OK\r\n\r\nuntil close", true, 200, "until close", false},
		{"truncated content-length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", true, 200, "", true},
		{"truncated chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", true, 200, "", true},
		{"CL and TE: chunked wins", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false, 200, "hello", false},
		{"same CL twice", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", false, 200, "ok", false},
		{"differing CLs", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!", false, 502, "", false},
		{"bad CL", "HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\nok", false, 502, "", false},
		{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok", false, 502, "", false},
		{"NUL in field", "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nok", false, 502, "", false},
		{"unknown coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok", false, 502, "", false},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", false, 502, "", false},
		{"204 ignores body fields", "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", false, 204, "", false},
		{"chunk extension after white space", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 ;e=1\r\nhello\r\n3\t; a=\"b\"\r\n!!!\r\n0\r\n\r\n", false, 200, "hello!!!", false},
		{"chunk line with bare LF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", true, 200, "", true},
		{"white space inside chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1 0\r\nhello\r\n0\r\n\r\n", true, 200, "", true},
		{"interim 103 skipped", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false, 200, "ok", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			origin := rawResponder(t, tt.answer, tt.close)
			cfg := pool1(PolicyFirst, origin)
			cfg.Pools[0].Retry.Tries = 1
			h := startWith(t, cfg, nil, false, EngineFast)
			for i := 0; i < 2; i++ { // the second request may reuse the origin connection
				resp, err := h.client.Get(h.front.URL + "/")
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.wantStatus {
					t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantStatus)
				}
				if tt.wantErr {
					if err == nil {
						t.Fatalf("body %q read without error, want a broken body", b)
					}
					return
				}
				if err != nil || tt.wantStatus == 200 && string(b) != tt.wantBody {
					t.Fatalf("body %q, %v; want %q", b, err, tt.wantBody)
				}
				if tt.name == "chunked with trailer" && resp.Trailer.Get("X-T") != "v" {
					t.Errorf("trailer %v", resp.Trailer)
				}
			}
		})
	}
}

// FuzzReadResponse checks the origin response reader against net/http's:
// what it accepts, net/http accepts with the same status, framing, fields
// and body.
func FuzzReadResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n0\r\nX-T: v\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 404\r\nConnection: close\r\ncontent-length: 0\r\n\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		var rb respBuf
		resp, err := readResponse(bufio.NewReader(bytes.NewReader(data)), method, &rb)
		if err != nil {
			return
		}
		body, berr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		want, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), &http.Request{Method: method})
		if err != nil {
			t.Fatalf("accepted, net/http refuses: %v", err)
		}
		wbody, werr := io.ReadAll(io.LimitReader(want.Body, 1<<20))
		if resp.StatusCode != want.StatusCode {
			t.Fatalf("status %d; net/http %d", resp.StatusCode, want.StatusCode)
		}
		if resp.StatusCode < 200 {
			return // interim answers carry no body; the next response follows
		}
		if head || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
			if resp.Body != http.NoBody {
				t.Fatal("a response without body has one")
			}
			return
		}
		if resp.StatusCode != want.StatusCode || resp.ContentLength != want.ContentLength ||
			len(resp.TransferEncoding) != len(want.TransferEncoding) {
			t.Fatalf("status %d CL %d TE %v; net/http %d %d %v", resp.StatusCode, resp.ContentLength,
				resp.TransferEncoding, want.StatusCode, want.ContentLength, want.TransferEncoding)
		}
		if want.Close && !resp.Close {
			t.Fatal("net/http closes the connection, the reader would reuse it")
		}
		if berr == nil && werr != nil && strings.Contains(werr.Error(), "unexpected EOF reading trailer") {
			return // net/http wants two more bytes after a bare-LF end of trailer
		}
		if (berr == nil) != (werr == nil) || berr == nil && !bytes.Equal(body, wbody) {
			t.Fatalf("body %q %v; net/http %q %v", body, berr, wbody, werr)
		}
		for k, vv := range want.Header {
			if strings.Join(resp.Header[k], "\x00") != strings.Join(vv, "\x00") {
				t.Fatalf("field %s %q; net/http %q", k, resp.Header[k], vv)
			}
		}
	})
}
