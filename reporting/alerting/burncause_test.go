package alerting

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestBurnRateCarriesCause: a burn-rate alert says why the budget burns,
// as a down alert does: the most common cause of the failed runs of its
// regions in the fastest holding pair's short window and the newest
// error with that cause, in the webhook's cause and error, at the end of
// the summary, and in the Alertmanager annotations. A run that failed
// only its TTFB assertion (cause ttfb) is not a failure here, nor is one
// the agent could not make.
func TestBurnRateCarriesCause(t *testing.T) {
	hook, am := burnScenario(t)
	var burn *WebhookAlert
	for _, p := range hook.webhooks(t) {
		for i, x := range p.Alerts {
			if x.Rule == RuleBurnRate && x.Status == StatusFiring {
				burn = &p.Alerts[i]
			}
		}
	}
	if burn == nil {
		t.Fatalf("no burn-rate alert in the webhooks: %+v", hook.webhooks(t))
	}
	if burn.Cause != "status" || burn.Error != "status 502 not in 200" {
		t.Errorf("webhook cause %q, error %q; want status, the newest error status 502 not in 200", burn.Cause, burn.Error)
	}
	if !strings.HasSuffix(burn.Summary, "in 2 regions (eu, us): status (status 502 not in 200)") {
		t.Errorf("summary %q does not end with the cause and error", burn.Summary)
	}
	var ann map[string]string
	for _, rec := range am.all() {
		var alerts []amAlert
		if err := json.Unmarshal(rec.Body, &alerts); err != nil {
			t.Fatalf("alertmanager body: %v: %s", err, rec.Body)
		}
		for _, x := range alerts {
			if x.Labels["rule"] == RuleBurnRate {
				ann = x.Annotations
			}
		}
	}
	if ann["cause"] != "status" || ann["error"] != "status 502 not in 200" {
		t.Errorf("alertmanager annotations %v, want cause status and error status 502 not in 200", ann)
	}
}

// burnScenario fires a page burn-rate alert of asset × origin-a in eu and
// us (burn 11.1111…× over 6h/30m) and returns the webhook and
// Alertmanager receivers' recorders once its notifications are delivered.
// us first has 3 runs the agent could not make and 4 that failed only
// their TTFB assertion, then a refused connection; eu 2 answers with
// status 503, then 502.
func burnScenario(t *testing.T) (hook, am *recorder) {
	t.Helper()
	slo := SLO{Name: "asset-availability", Check: "asset", Objective: 99}
	cfg := Config{Quorum: 2, Down: DownRule{Disabled: true}, BurnRate: BurnRateRule{NoTicket: true, MinRuns: 1},
		DeadMan: DeadManRule{Disabled: true}}
	hook, am = newRecorder(t), newRecorder(t)
	cfg.Receivers = []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}},
		{Name: "am", Alertmanager: &AlertmanagerConfig{URL: am.srv.URL}}}
	cfg.Retry.Backoff = 5 * time.Millisecond
	clock := &fakeClock{t: t0}
	st := &memStore{clock: clock.Now}
	a, err := New(cfg, []SLO{slo}, st, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	// us: 3 runs the agent could not make, 4 that failed only their TTFB
	// assertion, then a refused connection; eu: 2 answers with status 503
	// then 502. Both burn at the 9th run (eu's 2 of 9 and us's 1 of 9
	// count as failed: over 6 × the 1% budget), when the alert fires.
	for i := range 9 {
		now := clock.Add(15 * time.Second).Add(-time.Second)
		for _, r := range []string{"eu", "us", "ap"} {
			v := verdict("asset", "origin-a", r, now, H, 15*time.Second)
			switch {
			case r == "us" && i < 3:
				v.OK, v.Cause, v.Err = false, "agent", "too many open files"
			case r == "us" && i < 7:
				v.OK, v.Cause, v.Err = false, "ttfb", "ttfb 2.1s above 2s"
			case r == "us" && i >= 8:
				v = verdict("asset", "origin-a", r, now, U, 15*time.Second) // connect_refused
			case r == "eu" && i >= 7:
				v.OK, v.State, v.Cause, v.Err = false, U, "status", "status 503 not in 200"
				if i == 8 {
					v.Err = "status 502 not in 200"
				}
			}
			v.Interval = 0 // the ratios of the 9 runs alone (no expected-runs floor)
			st.add(v)
		}
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return hook, am
}

// TestAlertValueRounded: the webhook's value is a JSON number and the
// Alertmanager value annotation its text, both rounded to 4 significant
// digits (11.11 for a burn of 11.1111…), not Go's shortest float
// ("11.11111111111111").
func TestAlertValueRounded(t *testing.T) {
	hook, am := burnScenario(t)
	var raw string
	for _, rec := range hook.all() {
		if strings.Contains(string(rec.Body), `"rule":"burn_rate"`) {
			raw = string(rec.Body)
		}
	}
	if !strings.Contains(raw, `"value":11.11,`) {
		t.Errorf("webhook body has no \"value\":11.11: %s", raw)
	}
	var ann map[string]string
	for _, rec := range am.all() {
		var alerts []amAlert
		if err := json.Unmarshal(rec.Body, &alerts); err != nil {
			t.Fatalf("alertmanager body: %v: %s", err, rec.Body)
		}
		for _, x := range alerts {
			if x.Labels["rule"] == RuleBurnRate {
				ann = x.Annotations
			}
		}
	}
	if ann["value"] != "11.11" {
		t.Errorf("alertmanager value annotation %q, want 11.11", ann["value"])
	}
	for v, want := range map[float64]float64{16.15384615384614: 16.15, 3.9999999999999964: 4, 0.9: 0.9,
		0.123456: 0.1235, 172865.4: 172865, 999.96: 1000, -2.345678: -2.346} {
		if got := roundValue(v); got != want {
			t.Errorf("roundValue(%v) = %v, want %v", v, got, want)
		}
	}
}
