package alerting

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// run is one check's state and tier in a routing test's tick.
type run struct {
	state reporting.State
	tier  string
}

// checks publishes one eu verdict per check (target origin-a) with its
// tier and evaluates.
func (h *harness) checks(runs map[string]run) {
	h.t.Helper()
	now := h.clock.Add(h.interval)
	for check, r := range runs {
		v := verdict(check, "origin-a", "eu", now.Add(-time.Second), r.state, h.interval)
		v.Tier = r.tier
		h.store.add(v)
	}
	h.eval()
}

// seen lists, per notification a webhook recorder received, "status
// check" plus the alerts' "status check" in order.
func seen(t *testing.T, r *recorder) []string {
	t.Helper()
	var out []string
	for _, p := range r.webhooks(t) {
		line := p.Status + " " + p.Check + ":"
		for _, a := range p.Alerts {
			line += " " + a.Status + "/" + a.Check
		}
		out = append(out, line)
	}
	return out
}

func webhookTo(name string, r *recorder, checks, sevs, tiers []string) Receiver {
	return Receiver{Name: name, Checks: checks, Severities: sevs, Tiers: tiers,
		Webhook: &WebhookConfig{URL: Secret(r.srv.URL + "/hook")}}
}

// TestReceiverChecksRoute: receivers[].checks sends a check's alerts to
// the receivers naming it (by name or glob) and to no other, firing and
// resolved alike; with severities both must match; a receiver without
// checks gets every check.
func TestReceiverChecksRoute(t *testing.T) {
	checkout, low, ticketOnly := newRecorder(t), newRecorder(t), newRecorder(t)
	cfg := Config{Down: DownRule{For: time.Second}, DeadMan: DeadManRule{Disabled: true},
		Receivers: []Receiver{
			webhookTo("checkout", checkout, []string{"checkout-*"}, nil, nil),
			webhookTo("team-low", low, []string{"legacy-db", "legacy-?pi"}, []string{SeverityPage}, nil),
			webhookTo("checkout-tickets", ticketOnly, []string{"checkout-*"}, []string{SeverityTicket}, nil),
		}}
	h := newHarness(t, t0, cfg, nil)
	down := map[string]run{"checkout-api": {U, "deep"}, "legacy-db": {U, "shallow"}, "legacy-api": {U, "shallow"}}
	h.checks(down)
	h.checks(down) // all three fire
	up := map[string]run{"checkout-api": {H, "deep"}, "legacy-db": {H, "shallow"}, "legacy-api": {H, "shallow"}}
	h.checks(up) // all three resolve

	want := map[*recorder][]string{
		checkout:   {"firing checkout-api: firing/checkout-api", "resolved checkout-api: resolved/checkout-api"},
		ticketOnly: nil, // down alerts are page
	}
	for r, w := range want {
		if got := seen(t, r); !slices.Equal(got, w) {
			t.Errorf("%s: got %q, want %q", r.srv.URL, got, w)
		}
	}
	got := seen(t, low)
	slices.Sort(got)
	if w := []string{"firing legacy-api: firing/legacy-api", "firing legacy-db: firing/legacy-db",
		"resolved legacy-api: resolved/legacy-api", "resolved legacy-db: resolved/legacy-db"}; !slices.Equal(got, w) {
		t.Errorf("team-low: got %q, want %q", got, w)
	}
	if n := len(h.hook.all()); n != 6 {
		t.Errorf("receiver without checks: %d notifications, want 6 (3 checks firing and resolved): %q", n, seen(t, h.hook))
	}
}

// TestReceiverTiersRoute: receivers[].tiers sends alerts of checks of
// those tiers, from their verdicts' tier; an alert of a check whose tier
// is not known goes only to receivers without tiers.
func TestReceiverTiersRoute(t *testing.T) {
	deep, shallow := newRecorder(t), newRecorder(t)
	cfg := Config{Down: DownRule{For: time.Second}, DeadMan: DeadManRule{Disabled: true},
		Receivers: []Receiver{
			webhookTo("deep", deep, nil, nil, []string{reporting.TierDeep, reporting.TierSynthetic}),
			webhookTo("shallow", shallow, nil, nil, []string{reporting.TierShallow}),
		}}
	h := newHarness(t, t0, cfg, nil)
	down := map[string]run{"checkout": {U, "synthetic"}, "healthz": {U, "shallow"}, "untiered": {U, ""}}
	h.checks(down)
	h.checks(down)
	h.checks(map[string]run{"checkout": {H, "synthetic"}, "healthz": {H, "shallow"}, "untiered": {H, ""}})
	if got, w := seen(t, deep), []string{"firing checkout: firing/checkout", "resolved checkout: resolved/checkout"}; !slices.Equal(got, w) {
		t.Errorf("deep: got %q, want %q", got, w)
	}
	if got, w := seen(t, shallow), []string{"firing healthz: firing/healthz", "resolved healthz: resolved/healthz"}; !slices.Equal(got, w) {
		t.Errorf("shallow: got %q, want %q", got, w)
	}
	if n := len(h.hook.all()); n != 6 {
		t.Errorf("receiver without tiers: %d notifications, want 6: %q", n, seen(t, h.hook))
	}
}

// TestResolveFollowsFiringRoute: a group keeps the route its firing
// alerts took until it resolves. A check whose tier changes while its
// alert fires (its config reloaded on the canaries) has its resolve sent
// to the receiver that was paged, and nothing, neither the firing alert
// nor its resolve, to the receiver of the new tier.
func TestResolveFollowsFiringRoute(t *testing.T) {
	deep, shallow := newRecorder(t), newRecorder(t)
	cfg := Config{Down: DownRule{For: time.Second}, DeadMan: DeadManRule{Disabled: true}, RepeatInterval: time.Hour,
		Receivers: []Receiver{
			webhookTo("deep", deep, nil, nil, []string{reporting.TierDeep}),
			webhookTo("shallow", shallow, nil, nil, []string{reporting.TierShallow}),
		}}
	h := newHarness(t, t0, cfg, nil)
	h.checks(map[string]run{"asset": {U, "deep"}})
	h.checks(map[string]run{"asset": {U, "deep"}}) // fires, to deep
	h.checks(map[string]run{"asset": {U, "shallow"}})
	h.checks(map[string]run{"asset": {U, "shallow"}})
	h.checks(map[string]run{"asset": {H, "shallow"}}) // resolves
	if got, w := seen(t, deep), []string{"firing asset: firing/asset", "resolved asset: resolved/asset"}; !slices.Equal(got, w) {
		t.Errorf("deep (paged): got %q, want %q", got, w)
	}
	if got := seen(t, shallow); len(got) != 0 {
		t.Errorf("shallow: got %q, want nothing", got)
	}
	// The next episode takes the check's new tier.
	h.checks(map[string]run{"asset": {U, "shallow"}})
	h.checks(map[string]run{"asset": {U, "shallow"}})
	if got, w := seen(t, shallow), []string{"firing asset: firing/asset"}; !slices.Equal(got, w) {
		t.Errorf("shallow, next episode: got %q, want %q", got, w)
	}
	if n := len(deep.all()); n != 2 {
		t.Errorf("deep, next episode: %d notifications, want still 2", n)
	}
}

// amPosted is what a recorder posing as Alertmanager received: per POST,
// "check=endsAt-in-the-past?" for each alert.
func amPosted(t *testing.T, r *recorder, now time.Time) (active, resolved map[string]int) {
	t.Helper()
	active, resolved = map[string]int{}, map[string]int{}
	for _, rec := range r.all() {
		if rec.Path != "/api/v2/alerts" {
			t.Fatalf("Alertmanager receiver posted to %s", rec.Path)
		}
		var as []amAlert
		if err := json.Unmarshal(rec.Body, &as); err != nil {
			t.Fatalf("Alertmanager body: %v: %s", err, rec.Body)
		}
		for _, a := range as {
			if a.EndsAt.After(now) {
				active[a.Labels["check"]]++
			} else {
				resolved[a.Labels["check"]]++
			}
		}
	}
	return active, resolved
}

// TestStreamReceiverRouted: an Alertmanager receiver with checks and
// tiers is posted only the alerts of matching checks, active and
// resolved.
func TestStreamReceiverRouted(t *testing.T) {
	am, all := newRecorder(t), newRecorder(t)
	cfg := Config{Down: DownRule{For: time.Second}, DeadMan: DeadManRule{Disabled: true},
		Receivers: []Receiver{
			{Name: "am-checkout", Checks: []string{"checkout-*"}, Tiers: []string{reporting.TierDeep},
				Alertmanager: &AlertmanagerConfig{URL: am.srv.URL}},
			{Name: "am-all", Alertmanager: &AlertmanagerConfig{URL: all.srv.URL}},
		}}
	h := newHarness(t, t0, cfg, nil)
	down := map[string]run{"checkout-api": {U, "deep"}, "checkout-web": {U, "shallow"}, "legacy-db": {U, "deep"}}
	h.checks(down)
	h.checks(down)
	h.checks(down)
	h.checks(map[string]run{"checkout-api": {H, "deep"}, "checkout-web": {H, "shallow"}, "legacy-db": {H, "deep"}})
	now := h.clock.Now()
	active, resolved := amPosted(t, am, now)
	if len(active) != 1 || active["checkout-api"] != 2 || len(resolved) != 1 || resolved["checkout-api"] != 1 {
		t.Errorf("am-checkout: active %v, resolved %v; want checkout-api only, active twice and resolved once", active, resolved)
	}
	active, resolved = amPosted(t, all, now)
	if len(active) != 3 || len(resolved) != 3 {
		t.Errorf("am-all: active %v, resolved %v; want all three checks", active, resolved)
	}
}

// TestReceiverRouteConfig: bad globs, empty names and unknown tiers are
// errors naming the key; RouteWarnings names entries matching none of
// the file's checks.
func TestReceiverRouteConfig(t *testing.T) {
	cfg := Config{Receivers: []Receiver{
		{Name: "ok", Checks: []string{"checkout-*"}, Webhook: &WebhookConfig{URL: "http://127.0.0.1:1/h"}},
		{Name: "bad", Checks: []string{"[", ""}, Tiers: []string{"deep", "browser"},
			Webhook: &WebhookConfig{URL: "http://127.0.0.1:1/h"}},
	}}
	err := cfg.ValidateAndSetDefaults()
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{
		`receivers[1].checks[0]: "[": bad glob: syntax error in pattern`,
		`receivers[1].checks[1]: empty`,
		`receivers[1].tiers[1]: "browser": unknown tier (want shallow, deep or synthetic)`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\nlacks %q", err, w)
		}
	}
	if !errors.Is(err, ErrBadGlob) || !errors.Is(err, ErrUnknownTier) {
		t.Errorf("errors.Is: %v", err)
	}
	if strings.Contains(err.Error(), "receivers[0]") {
		t.Errorf("valid receiver reported: %v", err)
	}

	ok := Config{Receivers: []Receiver{
		{Name: "low", Checks: []string{"legacy-*", "checkout", "gone"}, Webhook: &WebhookConfig{URL: "http://127.0.0.1:1/h"}},
	}}
	if err := ok.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	got := ok.RouteWarnings([]string{"checkout", "asset"})
	if len(got) != 2 || !strings.HasPrefix(got[0], `receivers[0].checks[0]: "legacy-*" matches no check of this file`) ||
		!strings.HasPrefix(got[1], `receivers[0].checks[2]: "gone" matches no check`) {
		t.Errorf("RouteWarnings: %q", got)
	}
	if got := ok.RouteWarnings(nil); got != nil {
		t.Errorf("RouteWarnings without checks: %q, want none", got)
	}
}
