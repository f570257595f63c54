package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMalformedHostRefused: a Host that is not a host name, an IP address
// or a bracketed IPv6 literal with an optional numeric port is refused with
// 400 on both engines, before any pool is chosen: "evil.com#.example.com"
// and the like would otherwise match a "*.example.com" pool and reach the
// origin, which may build links (a password-reset mail) from Host. Valid
// forms still route.
func TestMalformedHostRefused(t *testing.T) {
	for _, engine := range bothEngines {
		t.Run(engine, func(t *testing.T) {
			a := newBackend(t, "a")
			cfg := pool1(PolicyFirst, a.srv.URL)
			cfg.Pools[0].Hosts = []string{"*"}
			h := startWith(t, cfg, nil, false, engine)
			raw := func(host string) string {
				c, err := net.Dial("tcp", h.front.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatalf("Host %q: %v", host, err)
				}
				resp.Body.Close()
				return resp.Status
			}
			bad := []string{"evil.com#.example.com", "evil.com?.example.com", `evil.com\.example.com`,
				"evil.com<script>.example.com", "evil.com!.example.com", "evil.com%2f.example.com",
				"www.example.com:evil", "www.example.com:80:80", "www.example.com:1234567",
				".example.com", "a..example.com", "[::1", "[::1]x", "[zz::1]", "[]"}
			for _, host := range bad {
				if got := raw(host); !strings.HasPrefix(got, "400") {
					t.Errorf("Host %q: %s, want 400", host, got)
				}
			}
			good := []string{"www.example.com", "WWW.Example.COM", "www.example.com:8080", "www.example.com.",
				"a-b_c.example.com", "127.0.0.1", "127.0.0.1:80", "[::1]", "[::1]:8080", "www.example.com:"}
			for _, host := range good {
				if got := raw(host); !strings.HasPrefix(got, "200") {
					t.Errorf("Host %q: %s, want 200", host, got)
				}
			}
			if n := a.hits.Load(); n != int64(len(good)) {
				t.Errorf("the origin saw %d requests, want only the %d with a valid Host", n, len(good))
			}
		})
	}
}
