package proxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// rawGet sends one raw HTTP/1.1 request line for target to addr and returns
// the answer's status line.
func rawGet(t *testing.T, addr, target string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: x.test\r\nConnection: close\r\n\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	return strings.TrimRight(line, "\r\n")
}

// lineOrigin is an origin on a raw socket that answers every request 200
// "ok" and records its request lines, as it read them.
func lineOrigin(t *testing.T) (url string, lines func() []string) {
	var mu sync.Mutex
	var got []string
	url = checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			mu.Lock()
			got = append(got, strings.TrimRight(line, "\r\n"))
			mu.Unlock()
			for {
				h, err := br.ReadString('\n')
				if err != nil {
					return
				}
				if h == "\r\n" {
					break
				}
			}
			if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")); err != nil {
				return
			}
		}
	})
	return url, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestFragmentInTargetRefused: a request target with a '#' gets 400 on both
// engines and over HTTP/2, and reaches no origin. It used to be routed on
// its cleaned path and forwarded whole: /secret#/../public passed a
// /public pool's path_prefix, and an origin that parses the target as a URL
// served /secret. A %00 in the path (where C origins end it) gets 400 too,
// and so does an HTTP/2 request without :authority or host.
func TestFragmentInTargetRefused(t *testing.T) {
	origin, lines := lineOrigin(t)
	for _, eng := range []string{EngineFast, EngineStdlib} {
		t.Run(eng, func(t *testing.T) {
			cfg := pool1(PolicyFirst, origin)
			cfg.Pools[0].PathPrefix = "/public"
			h := startWith(t, cfg, nil, false, eng)
			addr := strings.TrimPrefix(h.front.URL, "http://")
			for _, target := range []string{"/secret#/../public", "/public#x", "/public/a#", "/public?q=1#f", "/public/%00/../../secret", "/public/a%00b"} {
				if got := rawGet(t, addr, target); !strings.HasPrefix(got, "HTTP/1.1 400 ") {
					t.Errorf("%s: %q, want 400", target, got)
				}
			}
			if got := rawGet(t, addr, "/public/ok"); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
				t.Fatalf("a plain target: %q", got)
			}
		})
	}

	cfg := pool1(PolicyFirst, origin)
	cfg.Pools[0].PathPrefix = "/public"
	addr, roots := runTLSProxy(t, cfg)
	for _, fields := range [][][2]string{
		{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/secret#/../public"}},
		{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/public/%00"}},
		{{":method", "GET"}, {":scheme", "https"}, {":path", "/public/no-authority"}},
	} {
		_, fr := h2Open(t, addr, roots, fields)
		if status, _ := h2Answer(t, fr); status != "400" && !strings.HasPrefix(status, "RST_STREAM") {
			t.Errorf("HTTP/2 %v: %s, want 400", fields, status)
		}
	}
	if l := lines(); len(l) != 2 || l[0] != "GET /public/ok HTTP/1.1" || l[1] != l[0] {
		t.Fatalf("the origin read %q, want only the two plain requests", l)
	}
}
