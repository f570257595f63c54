package alerting

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// pdKey is the dedup_key of check c's down alert in the gbRig.
func pdKey(c string) string { return "vigil/down/" + c + "/origin-a/page" }

// actions is "action key" for each check of cs.
func actions(action string, cs ...string) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = action + " " + pdKey(c)
	}
	return out
}

// TestPagerDutyGroupSendsOnlyNewTriggers: with group_by [severity], a
// group of 10 firing checks that gains an 11th sends PagerDuty one
// trigger, the new alert's, not 11 (each re-trigger of an acknowledged
// incident adds to its timeline); a check recovering sends its resolve
// alone; a repeat_interval repeat re-triggers every firing alert, as
// before, and so does its redelivery when PagerDuty did not accept it; a
// trigger PagerDuty did not accept is sent again, alone, once it
// recovers.
func TestPagerDutyGroupSendsOnlyNewTriggers(t *testing.T) {
	r := newGBRig(t)
	r.noSlack = true
	a := r.startWith([]string{"severity"}, func(c *Config) { c.RepeatInterval = 2 * time.Minute })
	st := nChecks(10, U)
	r.step(a, st)
	r.step(a, st) // 10 checks fire: one group, 10 incidents
	ten := []string{"c01", "c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09", "c10"}
	if got := r.pdActions(0); !slices.Equal(got, actions("trigger", ten...)) {
		t.Fatalf("10 checks fired: pagerduty got %q", got)
	}
	seen := len(r.pdEvents())

	st["c11"] = U
	r.step(a, st)
	r.step(a, st) // c11 fires: the group's notification lists 11
	if hooks := r.hook.webhooks(t); len(hooks) != 2 || len(hooks[1].Alerts) != 11 {
		t.Fatalf("c11 fired: %d webhook notifications, want 2, the last with 11 alerts", len(hooks))
	}
	if got := r.pdActions(seen); !slices.Equal(got, actions("trigger", "c11")) {
		t.Fatalf("c11 fired in a group of 10 firing: pagerduty got %d events %q, want only c11's trigger", len(got), got)
	}
	seen = len(r.pdEvents())

	st["c03"] = H
	r.step(a, st) // c03 recovers
	if got := r.pdActions(seen); !slices.Equal(got, actions("resolve", "c03")) {
		t.Fatalf("c03 recovered: pagerduty got %d events %q, want only c03's resolve", len(got), got)
	}
	seen = len(r.pdEvents())

	// repeat_interval (2m) after the last notification: every firing
	// alert is triggered again.
	firing := []string{"c01", "c02", "c04", "c05", "c06", "c07", "c08", "c09", "c10", "c11"}
	for range 7 {
		r.step(a, st)
	}
	if got := r.pdActions(seen); len(got) != 0 {
		t.Fatalf("before repeat_interval: pagerduty got %q", got)
	}
	r.step(a, st)
	if got := r.pdActions(seen); !slices.Equal(got, actions("trigger", firing...)) {
		t.Fatalf("repeat_interval: pagerduty got %d events %q, want a trigger per firing alert", len(got), got)
	}
	seen = len(r.pdEvents())

	// PagerDuty fails every attempt of c12's notification: once it
	// recovers (retry.redeliver_backoff, 10s, later) only c12's trigger
	// goes out again.
	r.pd.failNext(1000, http.StatusServiceUnavailable)
	st["c12"] = U
	r.step(a, st)
	r.step(a, st)
	if f := a.DeliveryFailures(); f["pd"] == "" {
		t.Fatalf("pagerduty failing: delivery failures %v", f)
	}
	r.pd.failNext(0, 0)
	seen = len(r.pdEvents())
	r.step(a, st)
	if got := r.pdActions(seen); !slices.Equal(got, actions("trigger", "c12")) {
		t.Fatalf("redelivery of c12's notification: pagerduty got %d events %q, want only c12's trigger", len(got), got)
	}
	seen = len(r.pdEvents())

	// A repeat PagerDuty does not accept is a repeat when redelivered:
	// every firing alert is triggered again.
	firing = append(firing, "c12")
	for range 6 {
		r.step(a, st)
	}
	if got := r.pdActions(seen); len(got) != 0 {
		t.Fatalf("before the second repeat: pagerduty got %q", got)
	}
	r.pd.failNext(1000, http.StatusServiceUnavailable)
	r.step(a, st) // the repeat: every attempt fails
	if f := a.DeliveryFailures(); f["pd"] == "" {
		t.Fatalf("pagerduty failing the repeat: delivery failures %v", f)
	}
	r.pd.failNext(0, 0)
	seen = len(r.pdEvents())
	r.step(a, st)
	if got := r.pdActions(seen); !slices.Equal(got, actions("trigger", firing...)) {
		t.Fatalf("redelivery of the failed repeat: pagerduty got %d events %q, want a trigger per firing alert", len(got), got)
	}
	if n := len(r.hook.webhooks(t)); n != 6 {
		t.Fatalf("webhook: %d notifications, want 6", n)
	}
	if !strings.HasPrefix(r.pd.all()[0].Path, "/v2/enqueue") {
		t.Fatalf("pagerduty path %q", r.pd.all()[0].Path)
	}
}
