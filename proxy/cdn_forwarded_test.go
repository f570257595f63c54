package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestTrustedForwardedProto: behind a CDN or load balancer that ends TLS
// and is listed in trusted_proxies, origins get the scheme, host and port
// it saw the client use (X-Forwarded-Proto/-Host/-Port, Forwarded's proto
// and host), as Caddy keeps them; before, they were told proto=http and the
// CDN's own Host, and built http:// links and redirects. Values that are
// not valid, or fields named in Connection, are not believed; from a peer
// not listed every one is replaced, as before.
func TestTrustedForwardedProto(t *testing.T) {
	type seen struct{ proto, host, port, fwd string }
	for _, engine := range bothEngines {
		t.Run(engine, func(t *testing.T) {
			var mu sync.Mutex
			var last seen
			o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				last = seen{r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Forwarded-Host"), r.Header.Get("X-Forwarded-Port"), r.Header.Get("Forwarded")}
				mu.Unlock()
			}))
			defer o.Close()
			for _, tc := range []struct {
				name    string
				trusted []string
				method  string
				hdr     []string
				want    seen
			}{
				{"trusted CDN", []string{"127.0.0.1/32"}, "GET",
					[]string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "www.shop.example", "X-Forwarded-Port", "443", "Forwarded", "for=203.0.113.7;proto=https;host=www.shop.example"},
					seen{"https", "www.shop.example", "443", `for=127.0.0.1;host="www.shop.example";proto=https`}},
				{"trusted CDN, a POST", []string{"127.0.0.1/32"}, "POST",
					[]string{"X-Forwarded-Proto", "HTTPS", "X-Forwarded-Host", "www.shop.example:8443"},
					seen{"https", "www.shop.example:8443", "", ""}},
				{"trusted, Forwarded only", []string{"127.0.0.0/8"}, "GET",
					[]string{"Forwarded", `for=198.51.100.1;proto=http, for=203.0.113.7;proto=https;host="cdn.shop.example"`},
					seen{"https", "cdn.shop.example", "", `for=127.0.0.1;host="cdn.shop.example";proto=https`}},
				{"trusted, invalid values", []string{"127.0.0.1/32"}, "GET",
					[]string{"X-Forwarded-Proto", "ftp", "X-Forwarded-Host", "evil.example/x", "X-Forwarded-Port", "99999"},
					seen{"http", "origin.test", "", ""}},
				{"trusted, named in Connection", []string{"127.0.0.1/32"}, "GET",
					[]string{"X-Forwarded-Proto", "https", "Connection", "X-Forwarded-Proto"},
					seen{"http", "origin.test", "", ""}},
				{"untrusted peer", []string{"10.0.0.0/8"}, "GET",
					[]string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "www.shop.example", "X-Forwarded-Port", "443", "Forwarded", "proto=https;host=www.shop.example"},
					seen{"http", "origin.test", "", `for=127.0.0.1;host="origin.test";proto=http`}},
				{"no trusted_proxies", nil, "GET",
					[]string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "www.shop.example"},
					seen{"http", "origin.test", "", ""}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					cfg := pool1(PolicyFirst, o.URL)
					cfg.TrustedProxies = tc.trusted
					h := startWith(t, cfg, nil, false, engine)
					body := ""
					if tc.method == "POST" {
						body = "x"
					}
					req, _ := http.NewRequest(tc.method, h.front.URL+"/", strings.NewReader(body))
					req.Host = "origin.test"
					for i := 0; i+1 < len(tc.hdr); i += 2 {
						req.Header.Set(tc.hdr[i], tc.hdr[i+1])
					}
					resp, err := h.client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != 200 {
						t.Fatalf("%d", resp.StatusCode)
					}
					mu.Lock()
					got := last
					mu.Unlock()
					if got != tc.want {
						t.Fatalf("the origin got %+v, want %+v", got, tc.want)
					}
				})
			}
		})
	}
}

// TestTrustedHTTPSNotRedirected: redirect_https leaves alone a request a
// trusted proxy says came in over https (a CDN that ends TLS): redirected,
// it would come back over plain HTTP again, forever. An untrusted claim is
// redirected.
func TestTrustedHTTPSNotRedirected(t *testing.T) {
	a := newBackend(t, "a")
	cert, key, _ := selfSigned(t)
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].Hosts = []string{"www.shop.example"}
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", cert, key
	cfg.RedirectHTTPS = true
	cfg.TrustedProxies = []string{"127.0.0.1/32"}
	h := start(t, cfg, nil, false)
	h.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func() int {
		req, _ := http.NewRequest("GET", h.front.URL+"/", nil)
		req.Host = "www.shop.example"
		req.Header.Set("X-Forwarded-Proto", "https")
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != 200 {
		t.Fatalf("trusted X-Forwarded-Proto: https: %d, want 200 (served, not redirected)", code)
	}
	cfg.TrustedProxies = []string{"10.0.0.0/8"}
	if err := h.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if code := get(); code != http.StatusPermanentRedirect {
		t.Fatalf("untrusted X-Forwarded-Proto: https: %d, want 308", code)
	}
}
