package alerting

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestPagerDutyOneIncidentPerAlert: a real HTTP server stands in for the
// Events API. origin-b goes down, then origin-c 56s later: each gets its
// own trigger with its own dedup_key and summary (before, both used
// vigil/down/healthz/page, so PagerDuty merged origin-c into origin-b's
// open incident and nobody was paged for it, and the summary of two
// alerts lost the targets). origin-b recovers while origin-c is still
// down: origin-b's incident resolves and origin-c's stays open.
func TestPagerDutyOneIncidentPerAlert(t *testing.T) {
	pd := newRecorder(t)
	cfg := Config{Down: DownRule{For: 0}, DeadMan: DeadManRule{Disabled: true}, QuorumLost: QuorumLostRule{Disabled: true},
		EvaluationInterval: 5 * time.Second, Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "pd", PagerDuty: &PagerDutyConfig{URL: pd.srv.URL + "/v2/enqueue", RoutingKey: "rk-secret"}}}}
	cfg.SetKeys([]string{"down.for"})
	h := newHarness(t, t0, cfg, nil)
	h.interval = 4 * time.Second
	states := map[string]reporting.State{"origin-a": H, "origin-b": H, "origin-c": H}
	step := func(d time.Duration) {
		t.Helper()
		for end := h.clock.Now().Add(d); h.clock.Now().Before(end); {
			now := h.clock.Add(h.interval)
			for target, st := range states {
				h.store.add(verdict("healthz", target, "eu-west", now, st, h.interval))
			}
			h.eval()
		}
	}
	type event struct {
		Action, Key, Summary string
	}
	events := func() []event {
		var out []event
		for _, rec := range pd.all() {
			var ev pdEvent
			if err := json.Unmarshal(rec.Body, &ev); err != nil {
				t.Fatal(err)
			}
			e := event{Action: ev.EventAction, Key: ev.DedupKey}
			if ev.Payload != nil {
				e.Summary = ev.Payload.Summary
			}
			out = append(out, e)
		}
		return out
	}
	// distinct lists the distinct action/key pairs, in order of first
	// appearance, with the last summary seen for each.
	distinct := func() string {
		var order []string
		last := map[string]string{}
		for _, e := range events() {
			k := e.Action + " " + e.Key
			if _, ok := last[k]; !ok {
				order = append(order, k)
			}
			last[k] = e.Summary
		}
		var b strings.Builder
		for _, k := range order {
			fmt.Fprintf(&b, "%s: %s\n", k, last[k])
		}
		return b.String()
	}
	step(20 * time.Second)
	states["origin-b"] = U
	step(time.Minute)
	states["origin-c"] = U
	step(time.Minute)
	got := distinct()
	for _, want := range []string{
		"trigger vigil/down/healthz/origin-b/page: healthz × origin-b down in 1 region (eu-west)",
		"trigger vigil/down/healthz/origin-c/page: healthz × origin-c down in 1 region (eu-west)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("events lack %q:\n%s", want, got)
		}
	}
	// origin-b recovers; origin-c stays down.
	states["origin-b"] = H
	step(time.Minute)
	got = distinct()
	if !strings.Contains(got, "resolve vigil/down/healthz/origin-b/page") {
		t.Errorf("origin-b's incident not resolved:\n%s", got)
	}
	if strings.Contains(got, "resolve vigil/down/healthz/origin-c/page") {
		t.Errorf("origin-c's incident resolved while it is down:\n%s", got)
	}
	for _, rec := range pd.all() {
		var ev pdEvent
		_ = json.Unmarshal(rec.Body, &ev)
		if ev.RoutingKey != "rk-secret" || (ev.EventAction == "trigger" && (ev.Payload == nil || ev.Payload.Severity != "critical")) {
			t.Fatalf("event: %s", rec.Body)
		}
	}
}
