package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A reload (here one that changes nothing, as a SIGHUP or a touched file
// does) keeps counting the requests in flight: max_conns still holds for
// requests started before it, and they are released against the counter
// the new configuration reads.
func TestReloadKeepsInFlightLimit(t *testing.T) {
	release := make(chan struct{})
	var now, peak atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := now.Add(1)
		defer now.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if r.URL.Path == "/hold" {
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
		}
		w.Write([]byte("ok"))
	}))
	defer origin.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	cfg := pool1(PolicyLeastConn, origin.URL)
	cfg.Pools[0].Origins[0].MaxConns = 2
	cfg.Pools[0].Retry.Tries = 1
	h := start(t, cfg, nil, false)

	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i], _, _ = h.do("GET", "/hold", "") }()
	}
	eventually(t, "two requests held at the origin", func() bool { return now.Load() == 2 })
	if code, _, _ := h.do("GET", "/x", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("third request before the reload: %d, want 503 (max_conns 2 reached)", code)
	}
	if err := h.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	if st := h.p.Origins(); st[0].InFlight != 2 || !st[0].Full {
		t.Fatalf("after the reload /api/v1/origins says in_flight %d full %v, want 2 true", st[0].InFlight, st[0].Full)
	}
	for i := 0; i < 2; i++ {
		if code, _, _ := h.do("GET", "/x", ""); code != http.StatusServiceUnavailable {
			t.Fatalf("request %d after the reload: %d, want 503 (two requests still in flight, max_conns 2)", i+3, code)
		}
	}
	if p := peak.Load(); p > 2 {
		t.Fatalf("origin saw %d requests at once, max_conns is 2", p)
	}
	unblock()
	wg.Wait()
	if codes[0] != 200 || codes[1] != 200 {
		t.Fatalf("held requests answered %v, want 200s", codes)
	}
	// Released against the counter the new configuration reads.
	if st := h.p.Origins(); st[0].InFlight != 0 || st[0].Full {
		t.Fatalf("after the held requests ended: in_flight %d full %v, want 0 false", st[0].InFlight, st[0].Full)
	}
	if code, body, _ := h.do("GET", "/x", ""); code != 200 || body != "ok" {
		t.Fatalf("after release: %d %q, want 200", code, body)
	}
}

// connCounter counts the connections an origin accepts and those it saw close.
type connCounter struct{ opened, closed atomic.Int64 }

func (c *connCounter) hook(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		c.opened.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.closed.Add(1)
	}
}

func countingOrigin(t *testing.T, name string) (*httptest.Server, *connCounter) {
	t.Helper()
	c := &connCounter{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok " + name))
	}))
	srv.Config.ConnState = c.hook
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, c
}

// A reload keeps the origin keep-alive connections of origins whose address
// and TLS settings are unchanged, on the fast path (GET) and through the
// transport (POST); the connections of an origin removed from the pool are
// closed.
func TestReloadKeepsOriginConnections(t *testing.T) {
	a, ca := countingOrigin(t, "a")
	b, cb := countingOrigin(t, "b")
	cfg := pool1(PolicyRoundRobin, a.URL, b.URL)
	h := start(t, cfg, nil, false)
	traffic := func(when string) {
		t.Helper()
		for i := 0; i < 6; i++ {
			if code, body, _ := h.do("GET", "/", ""); code != 200 || !strings.HasPrefix(body, "ok ") {
				t.Fatalf("%s: GET %d %q", when, code, body)
			}
			if code, body, _ := h.do("POST", "/", "data"); code != 200 || !strings.HasPrefix(body, "ok ") {
				t.Fatalf("%s: POST %d %q", when, code, body)
			}
		}
	}
	traffic("before the reload")
	before := ca.opened.Load() + cb.opened.Load()
	if before == 0 || before > 4 {
		t.Fatalf("origins accepted %d connections for 24 sequential requests, want 1 or 2 each", before)
	}
	for i := 0; i < 3; i++ {
		if err := h.p.Reload(cfg); err != nil {
			t.Fatal(err)
		}
		traffic("after a no-op reload")
	}
	if after := ca.opened.Load() + cb.opened.Load(); after != before {
		t.Fatalf("origins accepted %d connections after three no-op reloads, had %d: the keep-alive connections were dropped", after, before)
	}
	if n := ca.closed.Load() + cb.closed.Load(); n != 0 {
		t.Fatalf("%d origin connections closed by no-op reloads", n)
	}

	// Removing b closes b's idle connections; a's GET connection stays.
	aGets := ca.opened.Load()
	cfg2 := pool1(PolicyRoundRobin, a.URL)
	if err := h.p.Reload(cfg2); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removed origin's idle connections to close", func() bool {
		return cb.closed.Load() == cb.opened.Load()
	})
	for i := 0; i < 4; i++ {
		if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
			t.Fatalf("after removing b: %d %q", code, body)
		}
	}
	if got := ca.opened.Load(); got != aGets {
		t.Fatalf("origin a accepted %d connections after b was removed, had %d: its GET connection should be kept", got, aGets)
	}
}

// A reload keeps the pool's retry budget: retries refused before it are
// still refused after it, instead of a fresh budget of 10 free retries.
func TestReloadKeepsRetryBudget(t *testing.T) {
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyRoundRobin, urls(bad, good)...)
	cfg.Pools[0].Passive.Consecutive5xx = -1
	cfg.Pools[0].Passive.SuccessRateStdev = -1
	h := start(t, cfg, nil, false)
	retries := func() float64 {
		v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"cause": CauseStatus5xx})
		return v
	}
	for i := 0; i < 60; i++ {
		h.do("GET", "/", "")
	}
	if d, _ := h.metric("vigil_proxy_retry_budget_exhausted_total", map[string]string{"pool": "web"}); d == 0 {
		t.Fatal("the budget refused no retry before the reload; the test needs it spent")
	}
	r0 := retries()
	if err := h.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	passed503 := 0
	for i := 0; i < 20; i++ {
		if code, _, _ := h.do("GET", "/", ""); code == http.StatusServiceUnavailable {
			passed503++
		}
	}
	// Kept budget: 20% of 20 more requests ≈ 4 more retries; a fresh one
	// would allow all 10 that the bad origin's answers call for.
	if got := retries() - r0; got > 6 || passed503 < 3 {
		t.Fatalf("after the reload: %v more retries, %d 503s passed to clients; want at most 6 and at least 3 (the spent budget kept)", got, passed503)
	}
}
