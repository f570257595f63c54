package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHTTP2PoolHTTP1FallbackDropsHopByHop: an origin_protocol http2 pool
// speaks HTTP/1.1 to an https origin that does not take h2; there, as on
// every other path, the fields named in Connection are hop-by-hop (RFC 9110
// §7.6.1): a field the client names in its Connection does not reach the
// origin, and one the origin names in `Connection: close, X-Hop` does not
// reach the client, on both engines; fields not named pass.
func TestHTTP2PoolHTTP1FallbackDropsHopByHop(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Proto", r.Proto)
		if v, ok := r.Header["X-Client-Hop"]; ok {
			w.Header().Set("X-Got-Client-Hop", v[0])
		}
		w.Header().Set("X-Got-Client-Kept", r.Header.Get("X-Client-Kept"))
		w.Header().Set("Connection", "close, X-Hop")
		w.Header().Set("X-Hop", "for the next hop only")
		w.Header().Set("X-Kept", "yes")
		io.WriteString(w, "answer")
	}))
	srv.EnableHTTP2 = false // ALPN offers http/1.1 alone
	srv.StartTLS()
	t.Cleanup(srv.Close)
	for _, proto := range []string{OriginHTTP2, OriginHTTP1} {
		for _, engineName := range bothEngines {
			for _, c := range []struct{ method, body string }{{"GET", ""}, {"POST", "a=1"}} {
				t.Run(proto+"/"+engineName+"/"+c.method, func(t *testing.T) {
					cfg := pool1(PolicyFirst, srv.URL)
					cfg.Pools[0].OriginProtocol = proto
					cfg.Pools[0].Retry.Tries = 1
					cfg.Pools[0].TLS.CAFile = writeCertPEM(t, srv.Certificate())
					h := startWith(t, cfg, nil, false, engineName)
					for i := range 2 { // a new origin connection each time: the origin closes it
						code, body, hdr := h.do(c.method, "/", c.body,
							"Connection", "X-Client-Hop", "X-Client-Hop", "secret", "X-Client-Kept", "kept")
						if code != http.StatusOK || body != "answer" || hdr.Get("X-Proto") != "HTTP/1.1" {
							t.Fatalf("request %d: %d %q over %q", i, code, body, hdr.Get("X-Proto"))
						}
						if v, ok := hdr["X-Got-Client-Hop"]; ok {
							t.Errorf("request %d: X-Client-Hop, named in the client's Connection, reached the origin: %q", i, v)
						}
						if v := hdr.Get("X-Got-Client-Kept"); v != "kept" {
							t.Errorf("request %d: X-Client-Kept lost on the way to the origin: %q", i, v)
						}
						if v, ok := hdr["X-Hop"]; ok {
							t.Errorf("request %d: X-Hop, named in the origin's Connection, reached the client: %q", i, v)
						}
						if hdr.Get("X-Kept") != "yes" {
							t.Errorf("request %d: X-Kept lost: %v", i, hdr)
						}
					}
				})
			}
		}
	}
}
