package proxy

import (
	"bufio"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestTrailerFieldsFiltered: of an origin's trailer fields only those
// allowed in a trailer reach the client; framing, routing, cookie,
// authentication and hop-by-hop fields (also one the answer's Connection
// names) are dropped, declared or not, on the fast path and through Go's
// transport, on both engines. Was: all passed on, so a client merging
// trailers saw a second Content-Length, a Set-Cookie and a Host.
func TestTrailerFieldsFiltered(t *testing.T) {
	origin := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		c.Write([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: X-Hop\r\nTrailer: X-Ok, Set-Cookie\r\n\r\n" +
			"5\r\nhello\r\n0\r\nContent-Length: 999\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n" +
			"Set-Cookie: sid=evil\r\nHost: evil\r\nX-Hop: 1\r\nX-Ok: 1\r\nX-Checksum: abc\r\n\r\n"))
	})
	for _, engineName := range bothEngines {
		for _, tc := range []struct{ name, req string }{
			{"GET", "GET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"},
			{"POST", "POST /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 1\r\n\r\nb"},
		} {
			t.Run(engineName+"/"+tc.name, func(t *testing.T) {
				h := startWith(t, pool1(PolicyFirst, origin), nil, false, engineName)
				c, err := net.Dial("tcp", h.front.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(c, tc.req)
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("answer %v %v", resp, err)
				}
				b, err := io.ReadAll(resp.Body)
				if err != nil || string(b) != "hello" {
					t.Fatalf("body %q %v", b, err)
				}
				got := slices.Sorted(maps.Keys(resp.Trailer))
				if want := []string{"X-Checksum", "X-Ok"}; !slices.Equal(got, want) {
					t.Errorf("trailer fields %v (%v), want %v", got, resp.Trailer, want)
				}
				if v := resp.Header.Get("Trailer"); v != "" && v != "X-Ok" {
					t.Errorf("Trailer header %q announces dropped fields", v)
				}
			})
		}
	}
}
