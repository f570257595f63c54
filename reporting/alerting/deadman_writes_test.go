package alerting

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestDeadManNamesFailingWrites: while the alerting process's own verdict
// writes fail (a full disk), a dead-man alert says so, naming the first
// line of the store's error, instead of only that the verdicts stopped.
func TestDeadManNamesFailingWrites(t *testing.T) {
	h := newHarness(t, t0, Config{QuorumLost: QuorumLostRule{Disabled: true}}, nil)
	var writeErr error
	h.a.writeHealth = func() error { return writeErr }
	for range 4 {
		h.store.add(verdict("asset", "origin-a", "eu", h.clock.Now(), H, time.Minute))
		h.clock.Add(time.Minute)
		h.eval()
	}
	writeErr = errors.Join(errors.New("sink embedded: writes failing since 2026-11-30T10:04:00Z: database or disk is full"),
		errors.New("sink influxdb: second line"))
	for range 40 {
		h.clock.Add(15 * time.Second)
		h.eval()
		if len(h.hook.all()) > 0 {
			break
		}
	}
	got := h.hook.webhooks(t)
	if len(got) != 1 || got[0].Rule != RuleDeadMan {
		t.Fatalf("notifications %+v, want one dead-man alert", got)
	}
	sum := got[0].Alerts[0].Summary
	if !strings.Contains(sum, "no verdict for check asset from region eu") ||
		!strings.HasSuffix(sum, "; verdict writes of the alerting process are failing, the likely reason: sink embedded: writes failing since 2026-11-30T10:04:00Z: database or disk is full") {
		t.Errorf("summary %q: want the dead-man text and the store's first error line", sum)
	}
}
