package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestConnectionCloseNamesDroppedViaTransport: an origin's answer with
// `Connection: close, X-Hop` has X-Hop dropped (RFC 9110 §7.6.1) when the
// request goes through the pool's http.Transport rather than the fast
// path (an https origin, a request with a body; an interim 103 before it),
// on both engines, as on the fast path; a field it does not name is kept.
// Was: Go's transport deleted the whole Connection header of an answer
// holding "close", and X-Hop reached the client.
func TestConnectionCloseNamesDroppedViaTransport(t *testing.T) {
	answer := func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/hints" {
			w.Header().Set("Link", "</a.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
		}
		w.Header().Set("Connection", "close, X-Hop")
		w.Header().Set("X-Hop", "for the next hop only")
		w.Header().Set("X-Kept", "yes")
		io.WriteString(w, "answer")
	}
	secure := httptest.NewTLSServer(http.HandlerFunc(answer))
	t.Cleanup(secure.Close)
	plain := httptest.NewServer(http.HandlerFunc(answer))
	t.Cleanup(plain.Close)
	for _, engineName := range bothEngines {
		for _, c := range []struct {
			name, origin, method, path, body string
		}{
			{"https origin", secure.URL, "GET", "/", ""},
			{"https origin, 103 first", secure.URL, "GET", "/hints", ""},
			{"https origin, body", secure.URL, "POST", "/", "a=1"},
			{"http origin, body", plain.URL, "POST", "/", "a=1"},
			{"http origin, GET (fast path)", plain.URL, "GET", "/", ""},
		} {
			t.Run(engineName+"/"+c.name, func(t *testing.T) {
				cfg := pool1(PolicyFirst, c.origin)
				cfg.Pools[0].Retry.Tries = 1
				if c.origin == secure.URL {
					cfg.Pools[0].TLS.CAFile = writeCertPEM(t, secure.Certificate())
				}
				h := startWith(t, cfg, nil, false, engineName)
				for i := range 2 { // a new origin connection each time: the origin closes it
					code, body, hdr := h.do(c.method, c.path, c.body)
					if code != http.StatusOK || body != "answer" {
						t.Fatalf("request %d: %d %q", i, code, body)
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
