package scripts

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// slotBrowser is a browser of its own with one slot, for the contention
// tests (the shared test browser has four).
func slotBrowser(t *testing.T) *Browser {
	t.Helper()
	needChromium(t)
	b := NewBrowser(BrowserConfig{MaxConcurrent: 1})
	t.Cleanup(func() { b.Close() })
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBrowserSlotWaitDoesNotCountAgainstTimeout: healthy browser checks
// that queue for the browser's only slot all pass, although each one's
// caller gives it a context with the check's timeout before it queues, as
// `vigil check` does; the wait shows in the first browser step's
// browser_slot_wait_ms, not in its duration.
func TestBrowserSlotWaitDoesNotCountAgainstTimeout(t *testing.T) {
	b := slotBrowser(t)
	o := newPageOrigin(t)
	// Each run needs 2.5 s plus its tab and navigation, which the timeout
	// covers (0.5-3 s on a loaded 2-core machine); the last run waits for
	// two others (5 s at least), so a wait counted against its timeout
	// (with its own 2.5 s, 7.5 s or more) fails it.
	const timeout = 6 * time.Second
	r := browserRunner(t, b, "", `[{browser: {navigate: /tiny}}, {browser: {sleep: 2500ms}}]`, timeout)
	results := make(chan checks.Result, 3)
	for range 3 {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			results <- r.Run(ctx, checks.Target{Name: "x", URL: o.URL})
		}()
	}
	var longest checks.Result
	maxWait := -1.0
	for range 3 {
		res := <-results
		if !res.OK {
			t.Errorf("queued run failed: %s: %s", res.Cause, res.Err)
			continue
		}
		if res.Phases.Total > timeout {
			t.Errorf("run took %s, over its timeout %s", res.Phases.Total, timeout)
		}
		if w := res.Steps[0].Metrics["browser_slot_wait_ms"]; w > maxWait {
			maxWait, longest = w, res
		}
	}
	if maxWait < 4800 {
		t.Fatalf("longest browser_slot_wait_ms %.0f, want the last run to have waited for two others (2 × 2.5 s at least)", maxWait)
	}
	// Its first step's duration leaves the wait out.
	if d := longest.Steps[0].Duration; d > time.Duration(maxWait)*time.Millisecond-2*time.Second {
		t.Errorf("first step of the run that waited %.0fms took %s: the slot wait counted in it", maxWait, d)
	}
}

// TestBrowserSlotWaitIsBounded: a run that gets no browser slot within
// SlotWait does not start, and says so with cause browser_unavailable
// (could not run), not timeout; a cancelled wait is internal.
func TestBrowserSlotWaitIsBounded(t *testing.T) {
	b := slotBrowser(t)
	o := newPageOrigin(t)
	holder := browserRunner(t, b, "", `[{browser: {navigate: /tiny}}, {browser: {sleep: 2s}}]`, 15*time.Second)
	held := make(chan checks.Result, 1)
	go func() { held <- holder.Run(context.Background(), checks.Target{Name: "x", URL: o.URL}) }()
	// Wait (bounded) until the holder has the slot.
	for deadline := time.Now().Add(5 * time.Second); len(b.sem) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first run never took the slot")
		}
	}
	waiter, err := New(mustScript(t, `[{browser: {navigate: /tiny}}, {always: true, browser: {sleep: 1ms}}]`),
		Options{Check: "waiter", Timeout: 5 * time.Second, SlotWait: 300 * time.Millisecond, Browser: b})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := waiter.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	if res.OK || res.Cause != checks.CauseBrowserUnavailable || !res.CouldNotRun() {
		t.Fatalf("cause %s (%s), want browser_unavailable", res.Cause, res.Err)
	}
	for _, want := range []string{"did not start", "no browser slot came free within 300ms", "all 1 (agent.browser.max_concurrent)"} {
		if !strings.Contains(res.Err, want) {
			t.Errorf("err %q lacks %q", res.Err, want)
		}
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("gave up after %s, want about SlotWait (300ms)", took)
	}
	if len(res.Steps) != 2 || !res.Steps[0].Skipped || !res.Steps[1].Skipped {
		t.Errorf("steps %+v, want both skipped", res.Steps)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res = waiter.Run(ctx, checks.Target{Name: "x", URL: o.URL})
	if res.Cause != checks.CauseInternal || !strings.Contains(res.Err, "canceled while waiting for a browser slot") {
		t.Errorf("cancelled wait: cause %s (%s), want internal", res.Cause, res.Err)
	}
	if res := <-held; !res.OK {
		t.Errorf("slot holder: %s: %s", res.Cause, res.Err)
	}
}
