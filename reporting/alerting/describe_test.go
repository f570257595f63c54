package alerting

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// downReceivers are the three kinds of receiver a down page goes to, each
// a local HTTP recorder.
type downReceivers struct{ hook, slack, am *recorder }

// newDownAlerter runs an Alerter over the embedded SQLite store as `vigil
// run` sets it up for the reviewer's case: down.for 4s, quorum 1, with a
// webhook, a Slack and an Alertmanager receiver.
func newDownAlerter(t *testing.T, clock *fakeClock) (*Alerter, *store.Store, downReceivers) {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rs := downReceivers{newRecorder(t), newRecorder(t), newRecorder(t)}
	cfg := Config{Quorum: 1, Down: DownRule{For: 4 * time.Second}, DeadMan: DeadManRule{Disabled: true}, StatusPageURL: "http://127.0.0.1:9470",
		Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{
			{Name: "hook", Webhook: &WebhookConfig{URL: Secret(rs.hook.srv.URL + "/hook")}},
			{Name: "slack", Slack: &SlackConfig{URL: Secret(rs.slack.srv.URL + "/slack")}},
			{Name: "am", Alertmanager: &AlertmanagerConfig{URL: rs.am.srv.URL}},
		}}
	a, err := New(cfg, nil, st, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	return a, st, rs
}

// run is one run of api × o1 in eu, every 2s: fail or pass, with the state
// the canary (rise 2, fall 3) gave it.
func apiRun(at time.Time, ok bool, state reporting.State, streak int) reporting.Verdict {
	v := reporting.Verdict{Check: "api", Target: "o1", Region: "eu", Vantage: "eu-1", State: state, OK: ok,
		Streak: streak, At: at, Expires: at.Add(6 * time.Second), Interval: 2 * time.Second, StatusCode: 200,
		TTFB: 3 * time.Millisecond}
	if !ok {
		v.StatusCode, v.Cause, v.Err, v.Artifact = 500, "status", "status 500, want 200", "artifacts/api-o1-eu.txt"
	}
	return v
}

// firingPage decodes what each receiver got for the first firing
// notification: the webhook's alert, the Slack message text and the
// Alertmanager annotations.
func firingPage(t *testing.T, rs downReceivers) (WebhookAlert, string, map[string]string) {
	t.Helper()
	var hook WebhookAlert
	for _, p := range rs.hook.webhooks(t) {
		if p.Status == StatusFiring && len(p.Alerts) > 0 {
			hook = p.Alerts[0]
			break
		}
	}
	var slackText string
	for _, r := range rs.slack.all() {
		var m struct {
			Attachments []struct {
				Text string `json:"text"`
			} `json:"attachments"`
		}
		if err := json.Unmarshal(r.Body, &m); err != nil || len(m.Attachments) == 0 {
			t.Fatalf("slack body %s: %v", r.Body, err)
		}
		slackText = m.Attachments[0].Text
		break
	}
	var ann map[string]string
	for _, r := range rs.am.all() {
		var as []amAlert
		if err := json.Unmarshal(r.Body, &as); err != nil || len(as) == 0 {
			t.Fatalf("alertmanager body %s: %v", r.Body, err)
		}
		ann = as[0].Annotations
		break
	}
	if hook.AlertName != "VigilCheckDown" || slackText == "" || ann == nil {
		t.Fatalf("no firing page: webhook %+v, slack %q, alertmanager %v", hook, slackText, ann)
	}
	return hook, slackText, ann
}

// TestDownPageCarriesLastFailure: a down page that fires while the pair is
// still unhealthy although its latest run passed (it needs rise passes)
// names the failure that made it unhealthy — cause, error and screenshot
// of the last failing run — in the webhook JSON, the Slack text and the
// Alertmanager annotations, and says the latest run passed.
func TestDownPageCarriesLastFailure(t *testing.T) {
	base := time.Now().Truncate(time.Second)
	clock := &fakeClock{t: base}
	a, st, rs := newDownAlerter(t, clock)
	runs := []reporting.Verdict{
		apiRun(base, false, reporting.StateHealthy, 1),
		apiRun(base.Add(2*time.Second), false, reporting.StateHealthy, 2),
		apiRun(base.Add(4*time.Second), false, reporting.StateUnhealthy, 3), // fall 3
		apiRun(base.Add(6*time.Second), false, reporting.StateUnhealthy, 4),
		apiRun(base.Add(8*time.Second), true, reporting.StateUnhealthy, 1), // rise 2: one more pass needed
	}
	for _, v := range runs {
		clock.Set(v.At.Add(100 * time.Millisecond))
		if err := st.Publish(context.Background(), []reporting.Verdict{v}); err != nil {
			t.Fatal(err)
		}
		evalDelivered(t, a)
	}
	lastFail := runs[3].At.UTC().Format(time.RFC3339)
	hook, slackText, ann := firingPage(t, rs)
	if hook.Cause != "status" || hook.Error != "status 500, want 200" || !strings.HasSuffix(hook.ArtifactURL, "api-o1-eu.txt") {
		t.Errorf("webhook alert: cause %q error %q artifact %q, want the last failing run's", hook.Cause, hook.Error, hook.ArtifactURL)
	}
	want := "api × o1 down in 1 region (eu): status (status 500, want 200); latest run passed in eu (last failure " + lastFail + ")"
	if hook.Summary != want {
		t.Errorf("summary\n %q, want\n %q", hook.Summary, want)
	}
	if !strings.Contains(slackText, "status (status 500, want 200)") || !strings.Contains(slackText, "last failure "+lastFail) {
		t.Errorf("slack text %q lacks the failure", slackText)
	}
	if ann["cause"] != "status" || ann["error"] != "status 500, want 200" || ann["summary"] != want {
		t.Errorf("alertmanager annotations %v", ann)
	}
}

// TestDownPageSaysFlapHold: a down page that fires while flap damping
// holds the pair down (held_until ahead, the runs passing) carries the
// last failure and says "held down by flap damping until T"; the alert
// keeps both for as long as the pair stays unhealthy, 15 passes later.
func TestDownPageSaysFlapHold(t *testing.T) {
	base := time.Now().Truncate(time.Second)
	clock := &fakeClock{t: base}
	a, st, rs := newDownAlerter(t, clock)
	held := base.Add(5 * time.Minute)
	var runs []reporting.Verdict
	for i := range 3 {
		state := reporting.StateHealthy
		if i == 2 {
			state = reporting.StateUnhealthy
		}
		runs = append(runs, apiRun(base.Add(time.Duration(i)*2*time.Second), false, state, i+1))
	}
	for i := range 15 {
		v := apiRun(base.Add(time.Duration(3+i)*2*time.Second), true, reporting.StateUnhealthy, i+1)
		v.HeldUntil = held
		runs = append(runs, v)
	}
	for _, v := range runs {
		clock.Set(v.At.Add(100 * time.Millisecond))
		if err := st.Publish(context.Background(), []reporting.Verdict{v}); err != nil {
			t.Fatal(err)
		}
		evalDelivered(t, a)
	}
	lastFail := runs[2].At.UTC().Format(time.RFC3339)
	hold := "held down by flap damping until " + held.UTC().Format(time.RFC3339) + " (eu)"
	hook, slackText, ann := firingPage(t, rs)
	if hook.Cause != "status" || hook.Error != "status 500, want 200" {
		t.Errorf("webhook alert: cause %q error %q, want the last failing run's", hook.Cause, hook.Error)
	}
	want := "api × o1 down in 1 region (eu): status (status 500, want 200); latest run passed in eu (last failure " +
		lastFail + "); " + hold
	if hook.Summary != want {
		t.Errorf("webhook summary\n %q, want\n %q", hook.Summary, want)
	}
	if !strings.Contains(slackText, hold) || !strings.Contains(slackText, "status 500, want 200") {
		t.Errorf("slack text %q lacks the hold or the failure", slackText)
	}
	if ann["cause"] != "status" || ann["error"] != "status 500, want 200" || ann["summary"] != want {
		t.Errorf("alertmanager annotations %v", ann)
	}
	// The hold's end as a field of its own, for receivers that route on it.
	if hook.HeldUntil == nil || !hook.HeldUntil.Equal(held) {
		t.Errorf("webhook held_until %v, want %v", hook.HeldUntil, held)
	}
	if ann["held_until"] != held.UTC().Format(time.RFC3339) {
		t.Errorf("alertmanager held_until annotation %q, want %q", ann["held_until"], held.UTC().Format(time.RFC3339))
	}
	act := a.Active()
	if len(act) != 1 || act[0].Cause != "status" || act[0].Err != "status 500, want 200" || act[0].Summary != want {
		t.Fatalf("15 passes into the hold: active %+v, want cause status and summary %q", act, want)
	}
}

// TestCertAlertDaysAsCheck: a certificate 9 days 23 hours from expiry is
// "9 days" in the check's cert_min_days message and in the VigilCertificate
// summary alike (whole days, rounded down), not "10.0 days".
func TestCertAlertDaysAsCheck(t *testing.T) {
	now := time.Now()
	ch := checktest.NewChain(t, now.Add(90*24*time.Hour), now.Add(9*24*time.Hour+23*time.Hour))
	srv := ch.Serve(t)
	chk, err := checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: checktest.PEMFile(t, ch.Root)}},
		checks.Expect{CertMinDays: 30}, checks.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := chk.Run(context.Background(), checks.Target{URL: srv.URL})
	checkDays := regexp.MustCompile(`certificate expires in [^(]*\(`).FindString(r.Err)
	if r.Cause != checks.CauseCert || checkDays == "" {
		t.Fatalf("check: cause %q err %q, want a cert_min_days failure", r.Cause, r.Err)
	}

	clock := &fakeClock{t: time.Now()}
	mem := &memStore{clock: clock.Now}
	a, err := New(Config{Quorum: 1, Down: DownRule{Disabled: true}, DeadMan: DeadManRule{Disabled: true}}, nil, mem,
		Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	v := reporting.Verdict{Check: "web", Target: "o1", Region: "eu", Vantage: "eu-1", State: reporting.StateUnhealthy,
		Cause: string(r.Cause), Err: r.Err, CertExpiry: r.CertExpiry, At: clock.Now(), Expires: clock.Now().Add(time.Minute),
		Interval: 15 * time.Second}
	mem.add(v)
	if err := a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	act := a.Active()
	if len(act) != 1 || act[0].Rule != RuleCert {
		t.Fatalf("active %+v, want one cert_expiry alert", act)
	}
	want := "web × o1 " + checkDays + r.CertExpiry.UTC().Format(time.RFC3339) + "; limit 14 days) in 1 region (eu)"
	if checkDays != "certificate expires in 9 days (" || act[0].Summary != want {
		t.Errorf("check says %q (%s), alert says\n %q, want\n %q", checkDays, r.Err, act[0].Summary, want)
	}
}

// TestCertExpiryPhrase pins the alert's wording to the check's rule.
func TestCertExpiryPhrase(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		left time.Duration
		want string
	}{
		{9*day + 23*time.Hour, "expires in 9 days"},
		{day + time.Hour, "expires in 1 day"},
		{23 * time.Hour, "expires in less than a day"},
		{0, "expired less than a day ago"},
		{-3*day - time.Hour, "expired 3 days ago"},
	} {
		if got := certExpiryPhrase(t0.Add(c.left), t0); got != c.want {
			t.Errorf("%s left: %q, want %q", c.left, got, c.want)
		}
	}
}
