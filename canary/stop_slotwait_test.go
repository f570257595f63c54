package canary

import (
	"context"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/scripts"
	"github.com/vigil-synthetics/vigil/scripts/scripttest"
)

// TestStopEndsBrowserSlotWait: a scheduled browser run is queued for the
// browser's only slot (held by another run) longer than its check's
// timeout. Stopping the canary ends that wait at once: Run returns while the
// other run still holds the slot, and the run that never started publishes
// no verdict.
func TestStopEndsBrowserSlotWait(t *testing.T) {
	b, url := scripttest.HoldBrowserSlot(t)
	// The holder took the slot just before HoldBrowserSlot returned and keeps
	// it for about 5s. A queued run whose wait the stop did not end gets the
	// slot only then, and Run returns after that: Run must return before it
	// (with half a second to spare for the holder's page load), or within 5s
	// of the stop, whichever is earlier.
	slotFree := time.Now().Add(4500 * time.Millisecond)
	nav := "/"
	cfg := testConfig(t, map[string]string{"o": url}, CheckConfig{Name: "queued", Targets: []string{"o"},
		Interval: time.Second, Timeout: 500 * time.Millisecond,
		Script: scripts.Script{{Browser: &scripts.BrowserStep{Navigate: &nav}}}})
	pairs, err := cfg.Compile(CompileOptions{Version: "test", DataDir: t.TempDir(), Browser: b})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	c, err := New(cfg, pairs, Options{Sink: sink, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	// A skipped run means the first one was still queued an interval
	// (about 1s) later: past its 500ms timeout.
	waitFor(t, "a run skipped while the first one waits for the browser slot", func() bool { return c.Skipped("queued", "o") > 0 })
	cancel()
	stopped := time.Now()
	if left := slotFree.Sub(stopped); left < time.Second {
		t.Fatalf("the canary stopped only %s before the holder frees the browser slot: too late to tell whether the stop ended the queued run's wait", left)
	}
	bound := min(slotFree.Sub(stopped), 5*time.Second)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if took := time.Since(stopped); took > bound {
			t.Errorf("Run returned %s after the stop, want within %s (before the holder frees the browser slot)", took, bound.Round(time.Millisecond))
		}
	case <-time.After(bound):
		t.Errorf("Run did not return within %s of the stop (before the holder frees the browser slot): the queued browser run kept waiting for its slot", bound.Round(time.Millisecond))
		<-done
	}
	if vs := sink.of("queued", "o"); len(vs) != 0 {
		t.Errorf("published %d verdicts (first: %s %s), want none for a run that never started", len(vs), vs[0].Cause, vs[0].Err)
	}
}

// TestRunContextLeavesTimeoutToScripts: a script enforces its timeout
// itself (from when it holds its browser slot), so its run's context has no
// deadline and a later cancellation reaches it; other checks get the
// check's timeout.
func TestRunContextLeavesTimeoutToScripts(t *testing.T) {
	nav := "/"
	cfg := testConfig(t, map[string]string{"o": "http://127.0.0.1:1"},
		CheckConfig{Name: "s", Targets: []string{"o"}, Interval: time.Second, Timeout: 500 * time.Millisecond,
			Script: scripts.Script{{Browser: &scripts.BrowserStep{Navigate: &nav}}}},
		CheckConfig{Name: "h", Targets: []string{"o"}, Interval: time.Second, Timeout: 500 * time.Millisecond,
			HTTP: &checks.HTTPSpec{}})
	for _, p := range compile(t, cfg) {
		ctx, cancel := p.RunContext(context.Background())
		dl, has := ctx.Deadline()
		cancel()
		switch p.Check.Name {
		case "s":
			if has {
				t.Errorf("script run context has a deadline in %s, want none (the script times itself)", time.Until(dl))
			}
		case "h":
			if !has || time.Until(dl) > 500*time.Millisecond {
				t.Errorf("http run context: deadline %v (%v), want the check's 500ms", has, time.Until(dl))
			}
		}
	}
}
