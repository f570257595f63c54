package proxy

import (
	"sync"
	"testing"
	"time"
)

// least_conn honours weights when traffic is low: with every origin idle at
// each pick (sequential requests) the pick is a weighted random choice, so
// weights 1:2 split about 1:2 instead of all going to the heavier origin.
func TestBalancerLeastConnWeightsSequential(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyLeastConn, urls(a, b)...)
	cfg.Pools[0].Origins[1].Weight = 2
	h := start(t, cfg, nil, false)
	const n = 300
	for i := 0; i < n; i++ {
		if code, body, _ := h.do("GET", "/", ""); code != 200 {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
	// Expected 100/200; ±40 is about five standard deviations.
	if got := hitsOf(a, b); got[0] < 60 || got[0] > 140 {
		t.Fatalf("weights 1:2, %d sequential requests: hits %v, want about [100 200]", n, got)
	}
}

// Under least_conn an origin back from a drain ramps up during slow_start:
// a small share at first, a larger one later, all of its share at the end
// (it got none during the ramp, then half at once).
func TestBalancerLeastConnSlowStart(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyLeastConn, urls(a, b)...)
	cfg.Pools[0].SlowStart = 4 * time.Second
	h := start(t, cfg, nil, false)
	h.p.Drain("o0", "maintenance")
	h.p.Undrain("o0")
	back := time.Now()
	share := func() int64 {
		before := a.hits.Load()
		for i := 0; i < 100; i++ {
			if code, body, _ := h.do("GET", "/", ""); code != 200 {
				t.Fatalf("%d %s", code, body)
			}
		}
		return a.hits.Load() - before
	}
	early := share()
	earlyAt := time.Since(back)
	time.Sleep(time.Until(back.Add(3 * time.Second)))
	late := share()
	time.Sleep(time.Until(back.Add(4200 * time.Millisecond)))
	after := share()
	t.Logf("returning origin's share of 100: %d (within %v of its return), %d (at 3s), %d (after slow_start 4s)", early, earlyAt.Round(time.Millisecond), late, after)
	// Effective weight 10% → 100% of 1 over 4s: early ≈ 9-20%, at 3s ≈ 43%,
	// after 50%.
	if early < 1 || early > 35 {
		t.Errorf("right after its return the origin got %d of 100 requests, want a small share (about 10%%)", early)
	}
	if late < 20 || late <= early {
		t.Errorf("3s into slow_start 4s the origin got %d of 100 requests (%d right after its return), want a growing share", late, early)
	}
	if after < 30 {
		t.Errorf("after slow_start the origin got %d of 100 requests, want about half", after)
	}
}

// With a little concurrency (two clients, each waiting for its answer) the
// returning origin still gets about its slow-start share: being idle while
// the other serves one request is a near tie, not a win.
func TestBalancerLeastConnSlowStartConcurrent(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	a.mode.Store(modeSlow) // 50ms answers keep requests in flight
	b.mode.Store(modeSlow)
	cfg := pool1(PolicyLeastConn, urls(a, b)...)
	cfg.Pools[0].SlowStart = time.Minute // stays near 10% during the test
	h := start(t, cfg, nil, false)
	h.p.Drain("o0", "maintenance")
	h.p.Undrain("o0")
	var wg sync.WaitGroup
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				if code, body, _ := h.do("GET", "/", ""); code != 200 {
					t.Errorf("%d %s", code, body)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Effective weights 1:10 → about 7 of 80; idle-wins would give about 40.
	if got := a.hits.Load(); got < 1 || got > 24 {
		t.Fatalf("during slow_start, with two concurrent clients, the returning origin got %d of 80 requests, want about 10%%", got)
	}
}
