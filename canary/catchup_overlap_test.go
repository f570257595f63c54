package canary

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestRestartCatchUpDoesNotSkipNextSlot: a restart's catch-up run for the
// slot the restart missed starts late in that slot and lasts its whole
// timeout against an origin that never answers, so it is still running
// when the next slot comes. That slot's run starts right after it instead
// of being skipped by the no-overlap rule (vigil_skipped_runs_total went to
// 1: the restart skipped a run although restarts skip none). A 1 s check
// with a 0.8 s timeout, restarted 0.3 s after a slot whose run it missed.
func TestRestartCatchUpDoesNotSkipNextSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 4 s (-short)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var hits []time.Time
	go func() { // a blackhole: accepts, never answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns, hits = append(conns, c), append(hits, time.Now())
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})

	const interval, timeout = time.Second, 800 * time.Millisecond
	cfg := testConfig(t, map[string]string{"o1": "http://" + ln.Addr().String()},
		CheckConfig{Name: "home", Targets: []string{"o1"}, Interval: interval, Timeout: timeout, HTTP: &checks.HTTPSpec{}})
	pairs := compile(t, cfg)
	key := slotKey(pairs[0].Key(), cfg)
	// Start 0.3 s after a slot (less than half an interval: its run is
	// made up), its run missed: the stored run is the slot's before.
	slot := slotAfter(key, interval, time.Now().Add(100*time.Millisecond))
	time.Sleep(time.Until(slot.Add(300 * time.Millisecond)))
	c, err := New(cfg, pairs, Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	last := slot.Add(-interval + 20*time.Millisecond)
	c.Restore([]reporting.Verdict{{Check: "home", Target: "o1", Region: "test-region", Vantage: "v1", State: reporting.StateUnhealthy,
		Cause: "timeout", At: last, Expires: last.Add(3 * interval)}})
	ctx, cancel := context.WithDeadline(context.Background(), slot.Add(3*interval+500*time.Millisecond))
	defer cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	got := offsets(slot, hits)
	mu.Unlock()
	t.Logf("runs at %v after the missed slot", got)
	// The missed slot's catch-up, then the slots at +1 s, +2 s, +3 s.
	if n := c.Skipped("home", "o1"); n != 0 || len(got) != 4 {
		t.Fatalf("%d runs skipped, runs at %v after the missed slot; want none skipped and 4 runs (the catch-up, then one per slot)", n, got)
	}
}
