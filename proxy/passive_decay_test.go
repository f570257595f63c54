package proxy

import (
	"context"
	"log/slog"
	"regexp"
	"sync"
	"testing"
	"time"
)

// TestPassiveEjectionCountGrowsWhileFailing: an origin that keeps failing
// (every 5th request answers 503) is ejected again and again for ever longer
// (1, 2, 3 × ejection): its ejection count does not decay in the periods it
// spends in rotation failing between ejections, though each of them is longer
// than one ejection period (the window starts empty after a return and needs
// min_requests). Once it is healthy the count decays to 0 again.
func TestPassiveEjectionCountGrowsWhileFailing(t *testing.T) {
	// Long enough against the time between the failing origin's failures
	// (every 5th of its requests, ~200ms apart) for a loaded machine not to
	// leave a whole period without one, which rightly decays the count.
	const ejection = 800 * time.Millisecond
	partial, good := newBackend(t, "partial"), newBackend(t, "good")
	partial.mode.Store(modePartial)
	cfg := pool1(PolicyRoundRobin, urls(partial, good)...)
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: -1, SuccessRateStdev: -1,
		FailureRate: 15, MinRequests: 10, Window: 2 * time.Second, Ejection: ejection, MaxEjection: time.Minute}
	logs := &tryLogs{}
	h := startLog(t, cfg, nil, true, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))

	// Steady traffic: one request every 20ms, so the partial origin gets one
	// every 40ms while in rotation and needs ~400ms for min_requests.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 2500 && ctx.Err() == nil; i++ { // 50s at most
			h.do("GET", "/", "")
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() { stop(); wg.Wait() }()

	ejected := regexp.MustCompile(`origin ejected.* for=(\S+) ejections=(\d+)`)
	within(t, 25*time.Second, "three ejections of the failing origin", func() bool {
		return len(logs.lines("origin ejected", "origin=o0")) >= 3
	})
	for i, line := range logs.lines("origin ejected", "origin=o0")[:3] {
		m := ejected.FindStringSubmatch(line)
		wantFor, wantN := (time.Duration(i+1) * ejection).String(), string(rune('1'+i))
		if m == nil || m[1] != wantFor || m[2] != wantN {
			t.Fatalf("ejection %d: %q, want for=%s ejections=%s (the count must grow while the origin fails)", i+1, line, wantFor, wantN)
		}
	}

	// Healthy from now on: after its third ejection (2.4s) it returns and
	// the count drops by one per ejection period in rotation.
	partial.mode.Store(modeOK)
	within(t, 25*time.Second, "the ejection count decaying to 0 once the origin is healthy", func() bool {
		st := adminOrigins(t, h.p)[0]
		return !st.PassiveEjected && st.Ejections == 0
	})
	if n := len(logs.lines("origin ejected", "origin=o0")); n != 3 {
		t.Errorf("the healthy origin was ejected again: %d ejections logged", n)
	}
}

// within is eventually with a time limit of its own, for conditions that
// take seconds by design.
func within(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
	}
}
