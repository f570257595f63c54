package alerting

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// statuses lists the webhook notifications as "status:rule".
func statuses(t *testing.T, r *recorder) []string {
	t.Helper()
	var out []string
	for _, p := range r.webhooks(t) {
		out = append(out, p.Status+":"+p.Rule)
	}
	return out
}

// TestExpiredVerdictsKeepDownFiring: when verdicts stop arriving (the
// store cannot be written, the canary stopped) a firing down alert is not
// resolved as its verdicts expire: no fresh verdict is not a recovery. It
// resolves on the first fresh healthy verdict. Issue r3 H1.
func TestExpiredVerdictsKeepDownFiring(t *testing.T) {
	cfg := Config{Quorum: 2, Down: DownRule{For: 30 * time.Second}, DeadMan: DeadManRule{Disabled: true},
		QuorumLost: QuorumLostRule{Disabled: true}}
	h := newHarness(t, t0, cfg, nil)
	h.tick(map[string]reporting.State{"eu": H, "us": H})
	h.tick(map[string]reporting.State{"eu": U, "us": U})
	pendingAt := h.clock.Now()
	h.tick(map[string]reporting.State{"eu": U, "us": U})
	h.tick(map[string]reporting.State{"eu": U, "us": U})
	firedAt := h.clock.Now()
	if got := statuses(t, h.hook); strings.Join(got, " ") != "firing:down" {
		t.Fatalf("before the outage: %v, want one firing down", got)
	}
	text := h.hook.webhooks(t)[0].Text
	want := "since " + pendingAt.Format(time.RFC3339) + ", firing since " + firedAt.Format(time.RFC3339)
	if !strings.Contains(text, want) {
		t.Errorf("text lacks %q:\n%s", want, text)
	}
	if a := h.hook.webhooks(t)[0].Alerts[0]; !a.Since.Equal(pendingAt) || !a.StartsAt.Equal(firedAt) {
		t.Errorf("since %s starts_at %s, want %s and %s", a.Since, a.StartsAt, pendingAt, firedAt)
	}

	// No verdict is written for 20 minutes: every verdict expires (3 × 15s).
	for range 80 {
		h.clock.Add(h.interval)
		h.eval()
	}
	if got := statuses(t, h.hook); strings.Join(got, " ") != "firing:down" {
		t.Fatalf("20 minutes without verdicts: notifications %v, want only the first firing", got)
	}
	act := h.a.Active()
	if len(act) != 1 || act[0].Rule != RuleDown || !act[0].StartsAt.Equal(firedAt) ||
		!strings.Contains(act[0].Summary, "no fresh verdict from eu, us since") {
		t.Fatalf("20 minutes without verdicts: active %+v, want the down alert kept", act)
	}

	// One region comes back healthy: the other's last word still counts
	// for a firing alert, quorum 2 is not met by fresh data alone, yet
	// only fresh data can resolve: eu healthy + us stale unhealthy = 1.
	h.tick(map[string]reporting.State{"eu": H})
	if got := statuses(t, h.hook); strings.Join(got, " ") != "firing:down resolved:down" {
		t.Fatalf("after a fresh healthy verdict: %v, want the resolve", got)
	}
}

// TestStaleVerdictsNeverFire: a pair whose only unhealthy verdicts are
// stale does not start firing, even when a down alert for another pair
// fires (held alerts are per pair).
func TestStaleVerdictsNeverFire(t *testing.T) {
	h := newHarness(t, t0, Config{Quorum: 1, Down: DownRule{For: time.Second}, DeadMan: DeadManRule{Disabled: true}}, nil)
	h.store.add(verdict("asset", "origin-b", "eu", t0.Add(-10*time.Minute), U, 15*time.Second))
	h.tick(map[string]reporting.State{"eu": U})
	h.tick(map[string]reporting.State{"eu": U})
	act := h.a.Active()
	if len(act) != 1 || act[0].Target != "origin-a" {
		t.Fatalf("active %+v, want only asset × origin-a", act)
	}
}

// TestRestartLongerThanExpiryKeepsPage: a restart that lasts longer than
// the verdicts' expiry neither resolves the restored page on the first
// evaluation nor pages again once the canary's first verdicts arrive
// (while it still warms up, state unknown, and then unhealthy again).
// Issue r3 H2.
func TestRestartLongerThanExpiryKeepsPage(t *testing.T) {
	r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
	firedAt := r.fire(r.start())

	r.clock.Add(10 * time.Minute) // down: every verdict expired (45s)
	a := r.start()
	if err := a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.step(a, reporting.StateUnknown) // the canary's first run after the restart
	r.step(a, reporting.StateUnknown)
	r.step(a, U)
	r.step(a, U)
	if act := a.Active(); len(act) != 1 || !act[0].StartsAt.Equal(firedAt) {
		t.Fatalf("after the restart: active %+v, want the page firing since %s", act, firedAt)
	}
	if got := statuses(t, r.hook); strings.Join(got, " ") != "firing:down" {
		t.Fatalf("webhook after the restart: %v, want only the first firing (no resolve, no new page)", got)
	}
	if ev := r.pdEvents(); len(ev) != 1 {
		t.Fatalf("pagerduty after the restart: %d events, want 1 (no new incident)", len(ev))
	}
	r.step(a, H)
	if got := statuses(t, r.hook); strings.Join(got, " ") != "firing:down resolved:down" {
		t.Fatalf("after recovery: %v", got)
	}
}

// TestRemovedPairResolvesBurnRate: a target removed from the config
// (SetPairs after a reload) resolves its down and burn-rate alerts at the
// next evaluation, though its rollups and stale verdicts stay in the
// store, and they do not come back after a restart. Issue r3 M2.
func TestRemovedPairResolvesBurnRate(t *testing.T) {
	dir := t.TempDir()
	slo := SLO{Name: "asset-availability", Check: "asset", Objective: 99}
	cfg := Config{Down: DownRule{For: time.Second}, BurnRate: BurnRateRule{NoTicket: true, MinRuns: 1},
		DeadMan: DeadManRule{Disabled: true}}
	hook := newRecorder(t)
	cfg.Receivers = []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}}}
	cfg.Retry.Backoff = 5 * time.Millisecond
	clock := &fakeClock{t: t0}
	st := &memStore{clock: clock.Now}
	start := func() *Alerter {
		a, err := New(cfg, []SLO{slo}, st, Options{Now: clock.Now, StatePath: filepath.Join(dir, "alerts.json")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close(context.Background()) })
		a.SetChecks([]string{"asset"})
		return a
	}
	eval := func(a *Alerter) {
		t.Helper()
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Flush(ctx)
	}
	a := start()
	a.SetPairs(map[string][]string{"asset": {"origin-a", "origin-c"}})
	// Every 5 minutes: 4 failed runs of the 12 the 1h window expects
	// burn 33× the 1% budget, and the 5m window's one run failed.
	for i := range 6 {
		now := clock.Add(5 * time.Minute)
		st.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), H, 5*time.Minute))
		s := H
		if i >= 2 {
			s = U
		}
		st.add(verdict("asset", "origin-c", "eu", now.Add(-time.Second), s, 5*time.Minute))
		eval(a)
	}
	var rules []string
	for _, x := range a.Active() {
		rules = append(rules, x.Rule+"/"+x.Target)
	}
	if strings.Join(rules, " ") != "burn_rate/origin-c down/origin-c" {
		t.Fatalf("before the removal: active %v", rules)
	}

	a.SetPairs(map[string][]string{"asset": {"origin-a"}}) // reload without origin-c
	clock.Add(15 * time.Second)
	st.add(verdict("asset", "origin-a", "eu", clock.Now().Add(-time.Second), H, 15*time.Second))
	eval(a)
	if act := a.Active(); len(act) != 0 {
		t.Fatalf("after removing origin-c: active %+v, want none", act)
	}
	var resolved []string
	for _, p := range hook.webhooks(t) {
		if p.Status == StatusResolved {
			resolved = append(resolved, p.Rule)
		}
	}
	if strings.Join(resolved, " ") != "burn_rate down" && strings.Join(resolved, " ") != "down burn_rate" {
		t.Fatalf("resolved notifications %v, want burn_rate and down", resolved)
	}

	b := start()
	b.SetPairs(map[string][]string{"asset": {"origin-a"}})
	clock.Add(15 * time.Second)
	eval(b)
	if act := b.Active(); len(act) != 0 {
		t.Fatalf("after a restart: active %+v, want none", act)
	}
}

// TestRemovedPairResolvesTTFB: a target removed from the config (SetPairs
// after a reload) resolves its firing TTFB alert at the next evaluation,
// though its slow runs are still in the SLO window (here 1h, which would
// otherwise hold it firing up to an hour), as the down and burn-rate
// alerts resolve.
func TestRemovedPairResolvesTTFB(t *testing.T) {
	slo := SLO{Name: "asset-ttfb", Check: "asset", TTFBP95: 600 * time.Millisecond, Window: time.Hour}
	cfg := Config{DeadMan: DeadManRule{Disabled: true}}
	hook := newRecorder(t)
	cfg.Receivers = []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}}}
	cfg.Retry.Backoff = 5 * time.Millisecond
	clock := &fakeClock{t: t0}
	st := &memStore{clock: clock.Now}
	a, err := New(cfg, []SLO{slo}, st, Options{Now: clock.Now, StatePath: filepath.Join(t.TempDir(), "alerts.json")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	a.SetChecks([]string{"asset"})
	a.SetPairs(map[string][]string{"asset": {"origin-a", "origin-c"}})
	eval := func() {
		t.Helper()
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Flush(ctx)
	}
	for range 6 {
		now := clock.Add(15 * time.Second)
		st.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), H, 15*time.Second))
		slow := verdict("asset", "origin-c", "eu", now.Add(-time.Second), H, 15*time.Second)
		slow.TTFB = 900 * time.Millisecond
		st.add(slow)
		eval()
	}
	if act := a.Active(); len(act) != 1 || act[0].Rule != RuleTTFB || act[0].Target != "origin-c" {
		t.Fatalf("before the removal: active %+v, want the ttfb alert of origin-c", act)
	}

	a.SetPairs(map[string][]string{"asset": {"origin-a"}}) // reload without origin-c
	clock.Add(15 * time.Second)
	st.add(verdict("asset", "origin-a", "eu", clock.Now().Add(-time.Second), H, 15*time.Second))
	eval()
	if act := a.Active(); len(act) != 0 {
		t.Fatalf("after removing origin-c: active %+v, want none", act)
	}
	var got []string
	for _, p := range hook.webhooks(t) {
		got = append(got, p.Status+":"+p.Rule)
	}
	if strings.Join(got, " ") != "firing:ttfb resolved:ttfb" {
		t.Fatalf("webhooks %v, want the ttfb alert firing, then resolved", got)
	}
}
