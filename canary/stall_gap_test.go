package canary

import (
	"testing"
	"time"
)

// TestCatchUpLeavesHalfAnInterval: after a stall (a pair more than an
// interval behind), the catch-up run is followed by the pair's next slot
// only when that is at least half an interval away; a slot right behind it
// used to fire too, probing the origin twice within a second (about a
// fifth of pairs after a 20 s SIGSTOP). Slots stay on the pair's grid.
func TestCatchUpLeavesHalfAnInterval(t *testing.T) {
	const interval = 10 * time.Second
	for _, stall := range []time.Duration{30 * time.Second, 39 * time.Second, 39500 * time.Millisecond, 34 * time.Second} {
		p := plan{interval: interval}
		p.first("k", t0)
		slot := p.base
		now := slot.Add(stall) // the catch-up run fires now
		next := p.advance(now)
		if next.Sub(now) < interval/2 || next.Sub(now) > interval+interval/2 {
			t.Errorf("stall %s: next run %s after the catch-up, want between half an interval and 1.5 intervals", stall, next.Sub(now))
		}
		if off := next.Sub(slot) % interval; off != 0 {
			t.Errorf("stall %s: next run %s off the pair's slot grid", stall, off)
		}
	}
}
