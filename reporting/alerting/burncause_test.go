package alerting

import (
	"context"
	"encoding/json"
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
	slo := SLO{Name: "asset-availability", Check: "asset", Objective: 99}
	cfg := Config{Quorum: 2, Down: DownRule{Disabled: true}, BurnRate: BurnRateRule{NoTicket: true, MinRuns: 1},
		DeadMan: DeadManRule{Disabled: true}}
	hook, am := newRecorder(t), newRecorder(t)
	cfg.Receivers = []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}},
		{Name: "am", Alertmanager: &AlertmanagerConfig{URL: am.srv.URL}}}
	cfg.Retry.Backoff = 5 * time.Millisecond
	clock := &fakeClock{t: t0}
	st := &memStore{clock: clock.Now}
	a, err := New(cfg, []SLO{slo}, st, Options{Now: clock.Now})
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
