package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestSlotWaitEndsOnCancelAfterTimeout: a browser run queued for the only
// browser slot longer than its timeout (the caller passes no deadline, see
// EnforcesTimeout) gives up within a second when its context is cancelled,
// or when the stop of WithSlotWaitCancel is done: it did not start
// (WaitCanceled, cause internal), it does not wait out SlotWait.
func TestSlotWaitEndsOnCancelAfterTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(cancel context.Context) context.Context
	}{
		{name: "caller cancels", ctx: func(c context.Context) context.Context { return c }},
		{name: "canary stops", ctx: func(c context.Context) context.Context {
			return WithSlotWaitCancel(context.Background(), c)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBrowser(BrowserConfig{MaxConcurrent: 1})
			b.sem <- struct{}{} // another run holds the only slot
			r, err := New(mustScript(t, `[{browser: {navigate: /tiny}}]`),
				Options{Check: "w", Timeout: 200 * time.Millisecond, SlotWait: 5 * time.Second, Browser: b})
			if err != nil {
				t.Fatal(err)
			}
			if !r.EnforcesTimeout() {
				t.Fatal("EnforcesTimeout false with a Timeout")
			}
			stop, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(500*time.Millisecond, cancel) // after the 200ms timeout
			start := time.Now()
			res := r.Run(tc.ctx(stop), checks.Target{Name: "x", URL: "http://127.0.0.1:1"})
			if took := time.Since(start); took > 1500*time.Millisecond {
				t.Errorf("the queued run ended %s after it queued, %s after the cancel; want within 1s of it", took, took-500*time.Millisecond)
			}
			if !WaitCanceled(res) || res.Cause != checks.CauseInternal || res.Err != "the run was canceled while waiting for a browser slot" {
				t.Errorf("cause %s (%s), want internal: canceled while waiting", res.Cause, res.Err)
			}
			if len(res.Steps) != 1 || !res.Steps[0].Skipped {
				t.Errorf("steps %+v, want the step skipped", res.Steps)
			}
		})
	}
}
