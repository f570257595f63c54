package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestClientLeavesMidBody: a client that leaves while its origin is silent
// mid-body (a long poll, a stream between events) has the origin
// connection closed within about a second and frees the origin's max_conns
// slot for the next client; the origin is not charged. On the fast path
// (GET) and through Go's transport (a request with a body), on both
// engines. Was, on the fast engine: the connection and slot held until
// body_timeout (60s by default), new clients answered 503 meanwhile, and a
// timeout charged to the origin.
func TestClientLeavesMidBody(t *testing.T) {
	for _, engineName := range bothEngines {
		for _, tc := range []struct{ name, req string }{
			{"GET", "GET /poll HTTP/1.1\r\nHost: x\r\n\r\n"},
			{"POST", "POST /poll HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nb"},
		} {
			t.Run(engineName+"/"+tc.name, func(t *testing.T) {
				released := make(chan time.Time, 8)
				origin := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if req.URL.Path == "/ok" {
						c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
						return
					}
					c.Write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n"))
					c.SetReadDeadline(time.Now().Add(15 * time.Second))
					br.ReadByte() // until the proxy closes the connection
					released <- time.Now()
				})
				cfg := pool1(PolicyFirst, origin)
				cfg.Pools[0].Origins[0].MaxConns = 1
				cfg.Pools[0].BodyTimeout = 20 * time.Second
				h := startWith(t, cfg, nil, false, engineName)
				c, err := net.Dial("tcp", h.front.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(c, tc.req)
				cbr := bufio.NewReader(c)
				resp, err := http.ReadResponse(cbr, nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("answer %v %v, want the origin's 200", resp, err)
				}
				if b := make([]byte, 2); func() error { _, err := io.ReadFull(resp.Body, b); return err }() != nil || string(b) != "ab" {
					t.Fatalf("first bytes %q, want the origin's \"ab\"", b)
				}
				left := time.Now()
				c.Close()
				select {
				case at := <-released:
					if d := at.Sub(left); d > 2500*time.Millisecond {
						t.Errorf("origin connection closed %v after the client left, want within about 1s", d)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("origin connection still open 10s after the client left")
				}
				eventually(t, "the next client gets the freed origin", func() bool {
					code, body, _ := h.do("GET", "/ok", "")
					return code == 200 && body == "ok"
				})
				if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": CauseTimeout}); v != 0 {
					t.Errorf("tries_total{result=timeout} = %v, want 0: the client left, the origin did nothing wrong", v)
				}
			})
		}
	}
}
