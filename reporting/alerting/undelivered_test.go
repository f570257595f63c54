package alerting

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitRequests waits up to 5s for rec to have received n requests.
func waitRequests(t *testing.T, rec *recorder, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(rec.all()) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("receiver got %d requests, want %d", len(rec.all()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitRetrying waits up to 5s until each named receiver of the rig's
// last Alerter has failed an attempt and waits for its retry
// (vigil_alert_notifications_total{result="retry"} counted).
func (r *restartRig) waitRetrying(receivers ...string) {
	r.t.Helper()
	for _, name := range receivers {
		labels := map[string]string{"receiver": name, "result": ResultRetry}
		for deadline := time.Now().Add(5 * time.Second); counter(r.t, r.reg, "vigil_alert_notifications_total", labels) < 1; {
			if time.Now().After(deadline) {
				r.t.Fatalf("receiver %s: no failed attempt waiting for a retry", name)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// stop closes a as `vigil alerter` does on SIGTERM and returns Close's
// error.
func stop(t *testing.T, a *Alerter) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	err := a.Close(ctx)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %s", took)
	}
	return err
}

// amEnded decodes the Alertmanager posts from the from-th on and returns
// the alerts in them whose endsAt is at.
func (r *restartRig) amEnded(from int, at time.Time) []amAlert {
	r.t.Helper()
	var out []amAlert
	for _, rec := range r.am.all()[from:] {
		var as []amAlert
		if err := json.Unmarshal(rec.Body, &as); err != nil {
			r.t.Fatalf("alertmanager body: %v: %s", err, rec.Body)
		}
		for _, x := range as {
			if x.EndsAt.Equal(at) {
				out = append(out, x)
			}
		}
	}
	return out
}

// TestRestartDeliversResolveLostAtShutdown: the alert resolves while every
// receiver fails; the resolved notification is still waiting for a retry
// when the alerter is stopped, and its final attempt fails too. After a
// restart with the same state file, once the receivers work again, each
// receiver gets that resolve exactly once, although the alert no longer
// fires.
func TestRestartDeliversResolveLostAtShutdown(t *testing.T) {
	r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
	// A failed delivery waits a minute for its retry: it is in flight when
	// Close comes.
	r.retry = RetryConfig{Backoff: time.Minute}
	a := r.start()
	firedAt := r.fire(a)
	firing := r.hook.webhooks(t)[0].Alerts[0]

	for _, rec := range []*recorder{r.hook, r.pd, r.am} {
		rec.failNext(1<<30, http.StatusServiceUnavailable)
	}
	r.evaluate(a, H)
	resolvedAt := r.clock.Now()
	r.waitRetrying("ops", "pd", "am")
	if err := stop(t, a); err == nil || !strings.Contains(err.Error(), "3 notifications not delivered") {
		t.Fatalf("Close: %v, want 3 notifications not delivered", err)
	}

	for _, rec := range []*recorder{r.hook, r.pd, r.am} {
		rec.failNext(0, 0)
	}
	seenHook, seenPD, seenAM := len(r.hook.all()), len(r.pd.all()), len(r.am.all())
	r.clock.Add(time.Minute)
	a = r.start()
	r.step(a, H)
	r.step(a, H)

	hooks := r.hook.webhooks(t)[seenHook:]
	if len(hooks) != 1 {
		t.Fatalf("%d webhook notifications after the restart, want the lost resolve once: %+v", len(hooks), hooks)
	}
	if res := hooks[0]; res.Status != StatusResolved || res.GroupKey != "down/asset/page" || len(res.Alerts) != 1 ||
		res.Alerts[0].Fingerprint != firing.Fingerprint || !res.Alerts[0].StartsAt.Equal(firedAt) ||
		res.Alerts[0].EndsAt == nil || !res.Alerts[0].EndsAt.Equal(resolvedAt) {
		t.Fatalf("resolved notification after the restart: %+v, firing one was %+v", res, firing)
	}
	evs := r.pdEvents()[seenPD:]
	if len(evs) != 1 || evs[0].EventAction != "resolve" || evs[0].DedupKey != "vigil/down/asset/origin-a/page" {
		t.Fatalf("pagerduty events after the restart: %+v, want one resolve", evs)
	}
	if ended := r.amEnded(seenAM, resolvedAt); len(ended) != 1 || ended[0].Labels["target"] != "origin-a" {
		t.Fatalf("alertmanager resolved alerts after the restart: %+v, want one", ended)
	}

	// Delivered now: a clean stop and another restart send nothing more.
	if err := stop(t, a); err != nil {
		t.Fatalf("Close after the deliveries: %v", err)
	}
	seenHook, seenPD, seenAM = len(r.hook.all()), len(r.pd.all()), len(r.am.all())
	a = r.start()
	r.step(a, H)
	r.clock.Add(2 * time.Hour) // past repeat_interval as well
	r.step(a, H)
	if h, p, m := len(r.hook.all())-seenHook, len(r.pd.all())-seenPD, len(r.am.all())-seenAM; h+p+m != 0 {
		t.Fatalf("after a second restart: %d webhook, %d pagerduty, %d alertmanager requests; want none", h, p, m)
	}
}

// TestRestartDeliversFiringLostAtShutdown: the webhook fails the firing
// notification and the alerter is stopped while it waits for a retry.
// After a restart the webhook gets it on the first evaluation, not
// repeat_interval (1h) later, and PagerDuty, which had accepted it, gets
// no duplicate.
func TestRestartDeliversFiringLostAtShutdown(t *testing.T) {
	r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
	r.retry = RetryConfig{Backoff: time.Minute}
	r.hook.failNext(1<<30, http.StatusServiceUnavailable)
	a := r.start()
	r.step(a, H)
	r.step(a, U)
	r.step(a, U)
	r.evaluate(a, U) // fires
	firedAt := r.clock.Now()
	r.waitRetrying("ops")
	waitRequests(t, r.pd, 1)
	if err := stop(t, a); err == nil || !strings.Contains(err.Error(), "1 notification not delivered") {
		t.Fatalf("Close: %v, want 1 notification not delivered", err)
	}

	r.hook.failNext(0, 0)
	seenHook := len(r.hook.all())
	a = r.start()
	r.step(a, U)
	r.step(a, U)
	hooks := r.hook.webhooks(t)[seenHook:]
	if len(hooks) != 1 || hooks[0].Status != StatusFiring || len(hooks[0].Alerts) != 1 ||
		!hooks[0].Alerts[0].StartsAt.Equal(firedAt) {
		t.Fatalf("webhook notifications after the restart: %+v, want the lost firing one once", hooks)
	}
	if evs := r.pdEvents(); len(evs) != 1 {
		t.Fatalf("pagerduty got %d events, want the one trigger from before the restart: %+v", len(evs), evs)
	}

	// Delivered now: not again after another restart.
	if err := stop(t, a); err != nil {
		t.Fatalf("Close after the delivery: %v", err)
	}
	a = r.start()
	r.step(a, U)
	if n := len(r.hook.all()) - seenHook; n != 1 {
		t.Fatalf("%d webhook requests since the first restart, want 1", n)
	}
}

// TestRestartDoesNotResendDelivered: a notification the receiver accepted
// before the alerter stopped, including one accepted on the final attempt
// Close gives it, is not sent again after a restart.
func TestRestartDoesNotResendDelivered(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails int // webhook answers 503 to this many requests first
	}{
		{"accepted before shutdown", 0},
		{"accepted on the final attempt at shutdown", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
			r.retry = RetryConfig{Backoff: time.Minute}
			r.hook.failNext(tc.fails, http.StatusServiceUnavailable)
			a := r.start()
			r.step(a, H)
			r.step(a, U)
			r.step(a, U)
			r.evaluate(a, U) // fires
			if tc.fails > 0 {
				r.waitRetrying("ops")
			}
			waitRequests(t, r.hook, 1)
			waitRequests(t, r.pd, 1)
			if err := stop(t, a); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if n := len(r.hook.all()); n != tc.fails+1 {
				t.Fatalf("webhook got %d requests before the restart, want %d", n, tc.fails+1)
			}

			a = r.start()
			r.step(a, U)
			r.step(a, U)
			if n, p := len(r.hook.all()), len(r.pd.all()); n != tc.fails+1 || p != 1 {
				t.Fatalf("after the restart: webhook %d, pagerduty %d requests; want %d, 1 (nothing re-sent)", n, p, tc.fails+1)
			}
		})
	}
}

// TestFailedResolveRedeliveredWithBackoff: a resolve the webhook refused
// through all its retries is sent again retry.redeliver_backoff (10s) after
// the failure, not repeat_interval (1h); when that fails too the next try
// waits twice as long; once accepted it is not sent again.
func TestFailedResolveRedeliveredWithBackoff(t *testing.T) {
	r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
	a := r.start()
	r.fire(a)
	r.hook.failNext(10, http.StatusServiceUnavailable) // 2 × retry.attempts
	r.step(a, H)
	if n := len(r.hook.all()); n != 6 {
		t.Fatalf("webhook got %d requests, want 1 + 5 tries of the resolve", n)
	}
	r.step(a, H) // 15s later: past 10s, tried again (5 tries, all refused)
	if n := len(r.hook.all()); n != 11 {
		t.Fatalf("15s after the failure: %d webhook requests, want 11", n)
	}
	r.step(a, H) // 15s after the second failure: the wait is now 20s
	if n := len(r.hook.all()); n != 11 {
		t.Fatalf("15s after the second failure: %d webhook requests, want still 11", n)
	}
	r.step(a, H)
	r.step(a, H)
	hooks := r.hook.webhooks(t)
	if len(hooks) != 12 || hooks[11].Status != StatusResolved || len(hooks[11].Alerts) != 1 {
		t.Fatalf("30s after the second failure: %d webhook requests, last %+v; want the resolve accepted once more", len(hooks), hooks[len(hooks)-1])
	}
	if evs := r.pdEvents(); len(evs) != 2 {
		t.Fatalf("pagerduty got %d events, want trigger and resolve only", len(evs))
	}
}

// TestStateFileVersion1Loads: a state file written by the previous
// version (layout 1, testdata/state-v1.json: one down alert firing since
// 10:01, notified) is restored: the alert keeps firing without a new
// notification, its resolve goes out, and the file is rewritten in the
// current layout.
func TestStateFileVersion1Loads(t *testing.T) {
	r := newRestartRig(t, filepath.Join(t.TempDir(), "alerts.json"))
	b, err := os.ReadFile("testdata/state-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	firedAt := t0.Add(time.Minute)
	r.clock.Set(firedAt)
	a := r.start()
	if logs := r.logs.String(); strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "alerting: state restored") {
		t.Fatalf("loading a version 1 file:\n%s", logs)
	}
	if act := a.Active(); len(act) != 1 || !act[0].StartsAt.Equal(firedAt) {
		t.Fatalf("restored: %+v, want one alert firing since %s", act, firedAt)
	}
	r.step(a, U)
	if n, p := len(r.hook.all()), len(r.pd.all()); n != 0 || p != 0 {
		t.Fatalf("still firing: webhook %d, pagerduty %d notifications; want none (it was notified)", n, p)
	}
	r.step(a, H)
	hooks := r.hook.webhooks(t)
	if len(hooks) != 1 || hooks[0].Status != StatusResolved || hooks[0].Alerts[0].Fingerprint != "ad3cf5afea0cc7f8" {
		t.Fatalf("webhook after the resolve: %+v", hooks)
	}
	if evs := r.pdEvents(); len(evs) != 1 || evs[0].EventAction != "resolve" || evs[0].DedupKey != "vigil/down/asset/origin-a/page" {
		t.Fatalf("pagerduty after the resolve: %+v", evs)
	}
	f, err := readState(r.path)
	if err != nil || f.Version != stateVersion {
		t.Fatalf("rewritten state file: version %d, %v; want %d", f.Version, err, stateVersion)
	}
}
