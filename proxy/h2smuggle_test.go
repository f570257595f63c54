package proxy

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestHTTP2DeclaredLengthWithoutBody: an HTTP/2 GET or HEAD that declares a
// content-length but ends its stream with no body (malformed, RFC 9113
// §8.1.1) reaches the origin without that Content-Length, so the origin
// does not read the next request on the reused connection as its body
// (request smuggling: was, the next client's request was eaten and got
// 400, or a request of the attacker's choosing was parsed from it).
func TestHTTP2DeclaredLengthWithoutBody(t *testing.T) {
	var mu sync.Mutex
	var seen []string // request line and Content-Length, per request the origin parsed
	origin := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body := make([]byte, 64)
			n, _ := req.Body.Read(body)
			mu.Lock()
			seen = append(seen, req.Method+" "+req.RequestURI+" cl="+req.Header.Get("Content-Length")+" body="+string(body[:n]))
			mu.Unlock()
			if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")); err != nil {
				return
			}
		}
	})
	cfg := pool1(PolicyFirst, origin)
	cfg.Pools[0].Hosts = []string{"localhost"}
	addr, roots := runTLSProxy(t, cfg)
	for _, method := range []string{"GET", "HEAD"} {
		_, fr := h2Open(t, addr, roots, [][2]string{{":method", method}, {":scheme", "https"}, {":authority", "localhost"},
			{":path", "/one"}, {"content-length", "20"}})
		status, _ := h2Answer(t, fr)
		if status != "200" && status != "400" {
			t.Fatalf("%s with content-length and no body: %s", method, status)
		}
		_, fr = h2Open(t, addr, roots, [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/two-victim"}})
		if status, body := h2Answer(t, fr); status != "200" || body != "ok" {
			t.Fatalf("the next client's request after a %s declaring content-length: %s %q, want the origin's 200", method, status, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		if strings.Contains(s, "cl=20") || strings.Contains(s, "victim") && !strings.HasPrefix(s, "GET /two-victim ") {
			t.Errorf("origin parsed %q: a declared length without a body reached it", s)
		}
	}
	if n := strings.Count(strings.Join(seen, "\n"), "GET /two-victim "); n != 2 {
		t.Errorf("origin parsed the victim's request %d times, want 2:\n%s", n, strings.Join(seen, "\n"))
	}
}

// TestHTTP2PathWithSpaceRefused: an HTTP/2 :path with a space gets 400 and
// reaches no origin (was: written into the origin's request line as is, so
// "/x HTTP/1.0" made a lenient origin see another target and version than
// the one routed), as nginx refuses it.
func TestHTTP2PathWithSpaceRefused(t *testing.T) {
	origin, lines := lineOrigin(t)
	cfg := pool1(PolicyFirst, origin)
	cfg.Pools[0].Hosts = []string{"localhost"}
	addr, roots := runTLSProxy(t, cfg)
	for _, path := range []string{"/x HTTP/1.0", "/a?b c", "/tab\tx"} {
		_, fr := h2Open(t, addr, roots, [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", path}})
		if status, _ := h2Answer(t, fr); status != "400" && !strings.HasPrefix(status, "RST_STREAM") {
			t.Errorf(":path %q: %s, want 400", path, status)
		}
	}
	_, fr := h2Open(t, addr, roots, [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/ok?q=%20"}})
	if status, _ := h2Answer(t, fr); status != "200" {
		t.Fatalf("a well-formed :path: %s", status)
	}
	if l := lines(); len(l) != 1 || l[0] != "GET /ok?q=%20 HTTP/1.1" {
		t.Errorf("origin read request lines %q, want only the well-formed one", l)
	}
}
