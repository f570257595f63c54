package alerting

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
)

// receiverRig is an Alerter with one receiver of every kind, each on its
// own local recorder, and a down rule that fires on the first evaluation.
type receiverRig struct {
	clock                *fakeClock
	store                *memStore
	a                    *Alerter
	reg                  *prometheus.Registry
	hook, sl, pd, am, rb *recorder
	logs                 *strings.Builder
}

func newReceiverRig(t *testing.T) *receiverRig {
	r := &receiverRig{clock: &fakeClock{t: t0}, reg: prometheus.NewRegistry(), logs: &strings.Builder{},
		hook: newRecorder(t), sl: newRecorder(t), pd: newRecorder(t), am: newRecorder(t), rb: newRecorder(t)}
	r.pd.okStatus = http.StatusAccepted
	r.store = &memStore{clock: r.clock.Now}
	cfg := Config{
		Down:          DownRule{For: time.Second},
		StatusPageURL: "http://127.0.0.1:9470/",
		RunbookURL:    "https://runbooks.example/{check}",
		Retry:         RetryConfig{Attempts: 3, Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{
			{Name: "ops", Webhook: &WebhookConfig{URL: Secret(r.hook.srv.URL + "/hook/s3cr3t-token"),
				Headers: map[string]Secret{"authorization": "Bearer hdr-secret"}}},
			{Name: "chat", Slack: &SlackConfig{URL: Secret(r.sl.srv.URL + "/services/T0/B0/slack-secret"), Channel: "#oncall"}},
			{Name: "pd", Severities: []string{SeverityPage}, PagerDuty: &PagerDutyConfig{RoutingKey: "pd-routing-secret", URL: r.pd.srv.URL + "/v2/enqueue"}},
			{Name: "am", Alertmanager: &AlertmanagerConfig{URL: r.am.srv.URL + "/"}},
			{Name: "broken", Webhook: &WebhookConfig{URL: Secret(r.rb.srv.URL + "/hook/other-token")}},
		},
	}
	a, err := New(cfg, nil, r.store, Options{Now: r.clock.Now, Registry: r.reg,
		Log: slog.New(slog.NewTextHandler(lockedWriter{r.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	r.a = a
	return r
}

// lockedWriter serialises writes to a strings.Builder.
type lockedWriter struct{ b *strings.Builder }

var logMu = make(chan struct{}, 1)

func (w lockedWriter) Write(p []byte) (int, error) {
	logMu <- struct{}{}
	defer func() { <-logMu }()
	return w.b.Write(p)
}

func (r *receiverRig) step(t *testing.T, st reporting.State) {
	t.Helper()
	now := r.clock.Add(15 * time.Second)
	v := verdict("asset", "origin-a", "eu", now.Add(-time.Second), st, 15*time.Second)
	if st != reporting.StateHealthy {
		v.Artifact = "asset-origin-a shot 1.png" // a name under <data_dir>/artifacts
	}
	r.store.add(v)
	if err := r.a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestReceiverPayloads(t *testing.T) {
	r := newReceiverRig(t)
	r.pd.failNext(1, http.StatusInternalServerError) // the trigger is retried once
	r.rb.failNext(100, http.StatusBadRequest)        // a permanent failure, never retried
	r.step(t, reporting.StateHealthy)
	r.step(t, reporting.StateUnhealthy) // pending
	r.step(t, reporting.StateUnhealthy) // fires (for 1s)
	firedAt := r.clock.Now()
	r.step(t, reporting.StateUnhealthy) // still firing: AM gets it again, others nothing
	r.step(t, reporting.StateHealthy)   // resolves
	resolvedAt := r.clock.Now()

	t.Run("webhook", func(t *testing.T) {
		reqs := r.hook.all()
		if len(reqs) != 2 {
			t.Fatalf("%d requests, want firing + resolved", len(reqs))
		}
		if reqs[0].Path != "/hook/s3cr3t-token" || reqs[0].Header.Get("Authorization") != "Bearer hdr-secret" ||
			reqs[0].Header.Get("Content-Type") != "application/json" {
			t.Fatalf("request: path %q headers %v", reqs[0].Path, reqs[0].Header)
		}
		ps := r.hook.webhooks(t)
		f := ps[0]
		if f.Version != "1" || f.GroupKey != "down/asset/page" || f.Status != StatusFiring || f.Title != "[FIRING:1] VigilCheckDown asset (page)" {
			t.Fatalf("firing: %+v", f)
		}
		a := f.Alerts[0]
		if a.ArtifactURL != "http://127.0.0.1:9470/artifacts/asset-origin-a%20shot%201.png" ||
			a.StatusURL != "http://127.0.0.1:9470/check/asset?target=origin-a" ||
			a.RunbookURL != "https://runbooks.example/asset" || a.Cause != "connect_refused" ||
			a.Error == "" || a.Labels["severity"] != "page" || a.Fingerprint == "" || !a.StartsAt.Equal(firedAt) {
			t.Fatalf("alert: %+v", a)
		}
		for _, want := range []string{"screenshot: http://127.0.0.1:9470/artifacts/", "status: http://127.0.0.1:9470/check/asset", "eu"} {
			if !strings.Contains(f.Text, want) {
				t.Errorf("text lacks %q:\n%s", want, f.Text)
			}
		}
		res := ps[1]
		if res.Status != StatusResolved || res.Alerts[0].Status != StatusResolved || !res.Alerts[0].EndsAt.Equal(resolvedAt) ||
			res.Title != "[RESOLVED] VigilCheckDown asset (page)" {
			t.Fatalf("resolved: %+v", res)
		}
	})

	t.Run("slack", func(t *testing.T) {
		reqs := r.sl.all()
		if len(reqs) != 2 || reqs[0].Path != "/services/T0/B0/slack-secret" {
			t.Fatalf("%d requests", len(reqs))
		}
		var m struct {
			Text        string `json:"text"`
			Channel     string `json:"channel"`
			Attachments []struct {
				Color, Title, Text string
				TitleLink          string `json:"title_link"`
			} `json:"attachments"`
		}
		for i, wantColor := range []string{"danger", "good"} {
			if err := json.Unmarshal(reqs[i].Body, &m); err != nil {
				t.Fatal(err)
			}
			if m.Channel != "#oncall" || len(m.Attachments) != 1 || m.Attachments[0].Color != wantColor {
				t.Fatalf("slack message %d: %s", i, reqs[i].Body)
			}
		}
		if err := json.Unmarshal(reqs[0].Body, &m); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(m.Text, "[FIRING:1]") || !strings.Contains(m.Attachments[0].Text, "down in 1 region (eu)") ||
			m.Attachments[0].TitleLink != "http://127.0.0.1:9470/check/asset?target=origin-a" {
			t.Fatalf("slack firing: %s", reqs[0].Body)
		}
	})

	t.Run("pagerduty", func(t *testing.T) {
		reqs := r.pd.all()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want trigger (500), trigger retried, resolve", len(reqs))
		}
		if string(reqs[0].Body) != string(reqs[1].Body) {
			t.Fatalf("retry changed the body:\n%s\n%s", reqs[0].Body, reqs[1].Body)
		}
		type ev struct {
			RoutingKey  string `json:"routing_key"`
			EventAction string `json:"event_action"`
			DedupKey    string `json:"dedup_key"`
			Payload     *struct {
				Summary, Source, Severity, Component string
			} `json:"payload"`
			Links  []struct{ Href, Text string } `json:"links"`
			Images []struct{ Src string }        `json:"images"`
		}
		var trig, res ev
		if err := json.Unmarshal(reqs[1].Body, &trig); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(reqs[2].Body, &res); err != nil {
			t.Fatal(err)
		}
		if trig.RoutingKey != "pd-routing-secret" || trig.EventAction != "trigger" || trig.DedupKey != "vigil/down/asset/origin-a/page" ||
			trig.Payload == nil || trig.Payload.Severity != "critical" || trig.Payload.Source != "vigil" ||
			trig.Payload.Component != "asset" || !strings.Contains(trig.Payload.Summary, "asset × origin-a down") ||
			len(trig.Links) != 2 || len(trig.Images) != 1 {
			t.Fatalf("trigger: %s", reqs[1].Body)
		}
		if res.EventAction != "resolve" || res.DedupKey != trig.DedupKey || res.RoutingKey != "pd-routing-secret" || res.Payload != nil {
			t.Fatalf("resolve: %s", reqs[2].Body)
		}
		for res, want := range map[string]float64{ResultSuccess: 2, ResultRetry: 1, ResultFailure: 0, ResultDropped: 0} {
			if v := counter(t, r.reg, "vigil_alert_notifications_total", map[string]string{"receiver": "pd", "result": res}); v != want {
				t.Errorf("notifications{pd,%s} = %v, want %v", res, v, want)
			}
		}
	})

	t.Run("alertmanager", func(t *testing.T) {
		reqs := r.am.all()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want one per evaluation with an active or resolved alert", len(reqs))
		}
		var last []struct {
			Labels      map[string]string
			Annotations map[string]string
			StartsAt    time.Time
			EndsAt      time.Time
		}
		if reqs[0].Path != "/api/v2/alerts" {
			t.Fatalf("path %q", reqs[0].Path)
		}
		if err := json.Unmarshal(reqs[1].Body, &last); err != nil {
			t.Fatal(err)
		}
		if len(last) != 1 || last[0].Labels["alertname"] != "VigilCheckDown" || last[0].Labels["target"] != "origin-a" ||
			!last[0].EndsAt.Equal(firedAt.Add(15*time.Second).Add(5*time.Minute)) || last[0].Annotations["summary"] == "" {
			t.Fatalf("active re-send: %s", reqs[1].Body)
		}
		if err := json.Unmarshal(reqs[2].Body, &last); err != nil {
			t.Fatal(err)
		}
		if len(last) != 1 || !last[0].EndsAt.Equal(resolvedAt) {
			t.Fatalf("resolve: %s", reqs[2].Body)
		}
	})

	t.Run("permanent failure", func(t *testing.T) {
		if n := len(r.rb.all()); n != 2 {
			t.Fatalf("broken receiver got %d requests, want 2 (a 400 is not retried)", n)
		}
		f := r.a.DeliveryFailures()
		if len(f) != 1 || !strings.Contains(f["broken"], "status 400") {
			t.Fatalf("DeliveryFailures = %v", f)
		}
		if v := counter(t, r.reg, "vigil_alert_notifications_total", map[string]string{"receiver": "broken", "result": ResultFailure}); v != 2 {
			t.Errorf("notifications{broken,failure} = %v", v)
		}
	})

	t.Run("no secrets in logs or errors", func(t *testing.T) {
		logMu <- struct{}{}
		logs := r.logs.String()
		<-logMu
		all := logs + strings.Join(mapValues(r.a.DeliveryFailures()), " ")
		for _, s := range []string{"s3cr3t-token", "other-token", "slack-secret", "pd-routing-secret", "hdr-secret"} {
			if strings.Contains(all, s) {
				t.Errorf("secret %q leaked:\n%s", s, all)
			}
		}
		if !strings.Contains(logs, "delivery failed") {
			t.Errorf("no delivery failure logged:\n%s", logs)
		}
	})
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestRetryRecoversAndClearsFailure(t *testing.T) {
	r := newReceiverRig(t)
	r.hook.failNext(3, http.StatusServiceUnavailable) // 3 attempts: the first firing fails for good
	r.step(t, reporting.StateUnhealthy)
	r.step(t, reporting.StateUnhealthy)
	if f := r.a.DeliveryFailures(); !strings.Contains(f["ops"], "status 503") || strings.Contains(f["ops"], "s3cr3t") {
		t.Fatalf("after 3 failed attempts: %v", f)
	}
	if !strings.Contains(r.a.DeliveryFailures()["ops"], r.hook.srv.Listener.Addr().String()+"/…") {
		t.Fatalf("redacted URL missing host: %v", r.a.DeliveryFailures())
	}
	// 15s later (past retry.redeliver_backoff, 10s) the firing
	// notification is sent again and goes through.
	r.step(t, reporting.StateUnhealthy)
	if _, ok := r.a.DeliveryFailures()["ops"]; ok {
		t.Fatalf("failure not cleared by a success: %v", r.a.DeliveryFailures())
	}
	hooks := r.hook.webhooks(t)
	if len(hooks) != 4 || hooks[3].Status != StatusFiring {
		t.Fatalf("%d requests, want 3 failed + the firing one again", len(hooks))
	}
	r.step(t, reporting.StateHealthy)
	if hooks := r.hook.webhooks(t); len(hooks) != 5 || hooks[4].Status != StatusResolved {
		t.Fatalf("%d requests, want the resolve last", len(hooks))
	}
}

func TestEvaluateDoesNotWaitForReceivers(t *testing.T) {
	block := make(chan struct{})
	r := newRecorder(t)
	r.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		<-block
	})
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	a, err := New(Config{Down: DownRule{For: time.Second},
		Receivers: []Receiver{{Name: "slow", Webhook: &WebhookConfig{URL: Secret(r.srv.URL)}}}},
		nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []reporting.State{reporting.StateUnhealthy, reporting.StateUnhealthy, reporting.StateHealthy, reporting.StateUnhealthy} {
		now := clock.Add(15 * time.Second)
		store.add(verdict("asset", "origin-a", "eu", now, st, 15*time.Second))
		done := make(chan error, 1)
		go func() { done <- a.Evaluate(context.Background()) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Evaluate blocked behind a hanging receiver")
		}
	}
	close(block)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestAlertJSON(t *testing.T) {
	a := Alert{Rule: RuleDown, Severity: SeverityPage, Check: "asset", Target: "origin-a", Regions: []string{"eu"},
		TTFB: 1500 * time.Millisecond, Silenced: "weekly", StartsAt: t0}
	a.finish()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"alertname":"VigilCheckDown"`, `"ttfb_ms":1500`, `"silenced":"weekly"`, `"starts_at":"2026-11-02T10:00:00Z"`, `"status":"firing"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
}

// TestWebhookSinceOfRestoredAlert: an alert restored from a state file
// written before alerts had a start time sends its firing time as "since",
// not the zero time.
func TestWebhookSinceOfRestoredAlert(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if w := webhookAlert(Alert{Rule: "down", StartsAt: t0}); !w.Since.Equal(t0) {
		t.Errorf("since %s, want the firing time %s", w.Since, t0)
	}
	t1 := t0.Add(-time.Minute)
	if w := webhookAlert(Alert{Rule: "down", StartsAt: t0, Since: t1}); !w.Since.Equal(t1) {
		t.Errorf("since %s, want %s", w.Since, t1)
	}
}
