package proxy

import (
	"testing"
	"time"
)

// TestRoundRobinContinuesAcrossReloads: a reload (even one changing
// nothing, as a config manager's periodic SIGHUP) does not restart the
// round robin: with a reload before every second request, three equal
// origins still share the requests (the third used to get none).
func TestRoundRobinContinuesAcrossReloads(t *testing.T) {
	bs := []*backend{newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")}
	cfg := pool1(PolicyRoundRobin, urls(bs...)...)
	h := start(t, cfg, nil, false)
	for i := 0; i < 12; i++ {
		if i%2 == 0 {
			if err := h.p.Reload(pool1(PolicyRoundRobin, urls(bs...)...)); err != nil {
				t.Fatal(err)
			}
		}
		if code, body, _ := h.do("GET", "/", ""); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	for _, b := range bs {
		if n := b.hits.Load(); n != 4 {
			t.Errorf("origin %s got %d of 12 requests, want 4 each", b.name, n)
		}
	}
}

// TestSlowStartForOriginAddedByReload: an origin a reload adds (a cold
// cache node) ramps up under slow_start like a returning one, shown in the
// API, instead of taking its full share at once; origins present at start
// do not ramp.
func TestSlowStartForOriginAddedByReload(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.Pools[0].SlowStart = time.Minute
	h := start(t, cfg, nil, false)
	for _, o := range h.p.Origins() {
		if o.SlowStartUntil != nil {
			t.Fatalf("origin %s ramps at start", o.Name)
		}
	}
	next := pool1(PolicyRoundRobin, urls(a, b, c)...)
	next.Pools[0].SlowStart = time.Minute
	if err := h.p.Reload(next); err != nil {
		t.Fatal(err)
	}
	st := h.p.Origins()
	if st[2].SlowStartUntil == nil || st[0].SlowStartUntil != nil {
		t.Fatalf("after the reload: slow_start_until of the added origin %v, of a kept one %v; want only the added one ramping", st[2].SlowStartUntil, st[0].SlowStartUntil)
	}
	for i := 0; i < 60; i++ {
		if code, body, _ := h.do("GET", "/", ""); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	// Effective weight 10% of 1 against 1 and 1: about 3 of 60.
	if n := c.hits.Load(); n > 9 {
		t.Errorf("the origin added by the reload got %d of 60 requests during slow start, want about 3", n)
	}
}
