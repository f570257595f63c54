package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestUnsolicitedOriginBytesLogged: an origin that sends more than its
// answer's framing said (with the answer, or later while the connection is
// idle) has that connection dropped, the bytes never reach a client, and
// the drop is logged at warn with the origin, once (rate-limited). Was:
// dropped silently on the fast path.
func TestUnsolicitedOriginBytesLogged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(c net.Conn)
	}{
		{"with the answer", func(c net.Conn) { c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA")) }},
		{"while idle", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
			time.Sleep(50 * time.Millisecond)
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEXTRA"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					tc.serve(c)
				}
			})
			h, logs := startCapturing(t, pool1(PolicyFirst, origin), EngineFast)
			for i := range 3 {
				code, body, _ := h.do("GET", "/x", "")
				if code != 200 || body != "ok" {
					t.Fatalf("request %d: %d %q, want the origin's own answer", i, code, body)
				}
				time.Sleep(100 * time.Millisecond)
			}
			got := logs.lines("level=WARN", "origin sent bytes after its answer", "origin=o0")
			if len(got) != 1 {
				t.Errorf("want one warn line naming the origin (rate-limited), got:\n%s", strings.Join(logs.lines("unsolicited", "sent bytes"), "\n"))
			}
		})
	}
}
