package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestOriginIdleTimeout: pools[].origin_idle_timeout bounds how long an
// idle origin connection is reused, on the fast path (GET) and through Go's
// transport (POST): a request after a longer pause goes out on a new
// connection (counted at the origin) and never on one the origin may be
// closing; one within it reuses the connection. Was: fixed at 50s, so an
// origin closing idle connections sooner (Node.js and Apache: 5s) made a
// POST that met the close fail with 502.
func TestOriginIdleTimeout(t *testing.T) {
	url, conns := connCountingOrigin(t, 0)
	cfg := pool1(PolicyFirst, url)
	cfg.Pools[0].OriginIdleTimeout = 200 * time.Millisecond
	h := startWith(t, cfg, nil, false, testEngine())
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			body := ""
			if method == "POST" {
				body = "x"
			}
			send := func() {
				t.Helper()
				if code, b, _ := h.do(method, "/", body); code != 200 || b != "ok" {
					t.Fatalf("%s: %d %q", method, code, b)
				}
			}
			send()
			before := conns.Load()
			time.Sleep(50 * time.Millisecond)
			send()
			if got := conns.Load() - before; got != 0 {
				t.Errorf("%d new origin connections for a request 50ms after the last, want the idle one reused", got)
			}
			time.Sleep(600 * time.Millisecond)
			send()
			if got := conns.Load() - before; got != 1 {
				t.Errorf("%d new origin connections for a request 600ms after the last, want 1 (idle ones dropped after origin_idle_timeout 200ms)", got)
			}
		})
	}
}

// TestOriginIdleTimeoutCountsIdleTimeOnly: origin_idle_timeout counts from
// the end of the last answer, not from the start of its request: an origin
// that takes longer than the timeout to answer keeps its connection for
// requests sent right after (was, on the fast path: a new connection for
// every answer slower than origin_idle_timeout).
func TestOriginIdleTimeoutCountsIdleTimeOnly(t *testing.T) {
	url, conns := connCountingOrigin(t, 400*time.Millisecond)
	cfg := pool1(PolicyFirst, url)
	cfg.Pools[0].OriginIdleTimeout = 300 * time.Millisecond
	h := startWith(t, cfg, nil, false, testEngine())
	for _, method := range []string{"GET", "POST"} {
		before := conns.Load()
		for i := range 3 {
			if code, b, _ := h.do(method, "/", map[string]string{"GET": "", "POST": "x"}[method]); code != 200 || b != "ok" {
				t.Fatalf("%s %d: %d %q", method, i, code, b)
			}
		}
		if got := conns.Load() - before; got > 1 {
			t.Errorf("%s: %d origin connections for 3 back-to-back requests of 400ms each, want at most 1 (each was idle about 0s, origin_idle_timeout 300ms)", method, got)
		}
	}
}

// connCountingOrigin is an origin answering "ok" after delay; the counter
// counts the connections it accepted.
func connCountingOrigin(t *testing.T, delay time.Duration) (string, *atomic.Int64) {
	t.Helper()
	conns := new(atomic.Int64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, conns
}
