package alerting

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestDeadManAgentFault: a canary that keeps publishing, but only verdicts
// of runs it could not make (browser_unavailable: its browser is gone),
// judges nothing: its dead-man alert fires, saying the check cannot run
// and why, and resolves once a run judges the target again. Such verdicts
// keep the state of the runs before them, so they neither start nor end a
// down alert.
func TestDeadManAgentFault(t *testing.T) {
	r := newDeadRig(t)
	r.runs = map[string][]string{"eu": {"journey"}}
	a := r.start([]string{"journey"})
	r.advance(a, time.Minute)
	if got := r.deadMan(); len(got) != 0 {
		t.Fatalf("while the runs are made: %v", got)
	}

	// From now on every run fails for the agent's own trouble.
	last := r.clock.Now()
	r.runs = map[string][]string{}
	publish := func(d time.Duration) {
		for end := r.clock.Now().Add(d); r.clock.Now().Before(end); {
			now := r.clock.Add(5 * time.Second)
			if now.Sub(t0)%deadEvery == 0 {
				v := verdict("journey", "origin-a", "eu", now, H, deadEvery)
				v.OK, v.Cause, v.Err = false, reporting.CauseBrowserUnavailable, "the run did not start: no browser: exec: \"chromium\": executable file not found in $PATH"
				v.Expires = last.Add(3 * deadEvery) // kept from the last counted run
				r.store.add(v)
			}
			if err := a.Evaluate(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := a.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
	}
	publish(2 * time.Minute)
	if got := strings.Join(r.deadMan(), ","); got != "firing journey/eu" {
		t.Fatalf("runs the agent cannot make for 2m: dead-man notifications %q, want firing journey/eu", got)
	}
	var firing *WebhookAlert
	for _, p := range r.hook.webhooks(t) {
		for i, al := range p.Alerts {
			if p.Rule == RuleDeadMan && al.Status == "firing" {
				firing = &p.Alerts[i]
			}
		}
	}
	if firing == nil || firing.Cause != reporting.CauseBrowserUnavailable ||
		!strings.Contains(firing.Summary, "check journey cannot run in region eu: no run judging a target since ") ||
		!strings.Contains(firing.Summary, "the agent's own trouble, not the targets': browser_unavailable (the run did not start: no browser") {
		t.Fatalf("firing dead-man alert: %+v; want the cause and a summary saying the check cannot run", firing)
	}

	r.runs = map[string][]string{"eu": {"journey"}}
	r.advance(a, 30*time.Second)
	if got := strings.Join(r.deadMan(), ","); got != "firing journey/eu,resolved journey/eu" {
		t.Fatalf("runs made again: %q, want the alert resolved", got)
	}
}
