package alerting

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// selfAlertExp is the exp_alerts entry of a vigil-self alert (labels: extra
// labels, "k: v, ..."), annotated with its summary and runbook text.
func selfAlertExp(name, rule, severity, labels, summary, runbook string) string {
	if labels != "" {
		labels = ", " + labels
	}
	return fmt.Sprintf(`
          - exp_labels: {alertname: %s, rule: %s, severity: %s, source: prometheus%s}
            exp_annotations:
              summary: %s
              description: %s`, name, rule, severity, labels, yq(summary), yq(runbook))
}

// TestPrometheusAlerterNotEvaluatingPromtool runs the generated
// VigilAlerterNotEvaluating with `promtool test rules`: an alerter whose
// evaluations stop working at minute 30 (InfluxDB down: its
// vigil_alert_last_evaluation_success_timestamp_seconds stops moving)
// fires once no evaluation worked for 2m (3 × the 15s evaluation_interval
// is less); one that dies at minute 20 (series gone, `up` 0) fires
// likewise; a healthy one never does.
func TestPrometheusAlerterNotEvaluatingPromtool(t *testing.T) {
	b, err := PrometheusRules(ExampleConfig, ExampleSLOs, ExampleChecks...)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(inst string) string {
		return "vigil alerter " + inst + " has not evaluated its rules for over 2m (store unreadable, alerter down, or no alerter scraped): " +
			"no vigil alert fires or resolves, so a new outage pages no one"
	}
	exp := func(inst string) string {
		return selfAlertExp("VigilAlerterNotEvaluating", RuleAlerterNotEvaluating, "page",
			"instance: "+inst+", job: vigil", sum(inst), runbookAlerterNotEvaluating)
	}
	// The gauge's value is the time in seconds of the last success: 60*i
	// at minute i while evaluations work.
	promtoolTest(t, writeRules(t, b), `  - interval: 1m
    input_series:
      - series: 'vigil_alert_last_evaluation_success_timestamp_seconds{instance="ok",job="vigil"}'
        values: '0+60x60'
      - series: 'up{instance="ok",job="vigil"}'
        values: '1x60'
      - series: 'vigil_alert_last_evaluation_success_timestamp_seconds{instance="influx-down",job="vigil"}'
        values: '0+60x30 1800x30'
      - series: 'up{instance="influx-down",job="vigil"}'
        values: '1x60'
      - series: 'vigil_alert_last_evaluation_success_timestamp_seconds{instance="dead",job="vigil"}'
        values: '0+60x20 stale'
      - series: 'up{instance="dead",job="vigil"}'
        values: '1x20 0x40'
    alert_rule_test:
      - {eval_time: 10m, alertname: VigilAlerterNotEvaluating, exp_alerts: []}
      - {eval_time: 21m, alertname: VigilAlerterNotEvaluating, exp_alerts: []}
      - eval_time: 23m
        alertname: VigilAlerterNotEvaluating
        exp_alerts:`+exp("dead")+`
      - eval_time: 31m
        alertname: VigilAlerterNotEvaluating
        exp_alerts:`+exp("dead")+`
      - eval_time: 33m
        alertname: VigilAlerterNotEvaluating
        exp_alerts:`+exp("dead")+exp("influx-down")+`
`)
}

// TestPrometheusAlerterAbsentPromtool: with no alerter scraped at all (no
// vigil_alert_last_evaluation_success_timestamp_seconds for 2m) the alert
// fires, without an instance; generated with alerting.disabled the rule
// is left out.
func TestPrometheusAlerterAbsentPromtool(t *testing.T) {
	b, err := PrometheusRules(ExampleConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	summary := "vigil alerter has not evaluated its rules for over 2m (store unreadable, alerter down, or no alerter scraped): " +
		"no vigil alert fires or resolves, so a new outage pages no one"
	promtoolTest(t, writeRules(t, b), `  - interval: 1m
    input_series:
      - series: 'up{instance="canary",job="vigil"}'
        values: '1x10'
    alert_rule_test:
      - eval_time: 5m
        alertname: VigilAlerterNotEvaluating
        exp_alerts:`+selfAlertExp("VigilAlerterNotEvaluating", RuleAlerterNotEvaluating, "page", "", summary, runbookAlerterNotEvaluating)+`
`)
	cfg := ExampleConfig
	cfg.Disabled = true
	b, err = PrometheusRules(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "VigilAlerterNotEvaluating") {
		t.Errorf("alerting.disabled: the rules still watch the alerter:\n%s", b)
	}
}

// TestPrometheusVerdictSourceAndInfluxPromtool runs the generated
// VigilProxyVerdictSourceDown (labelled verdict_source with the
// series' source URL; a one-minute blip does not fire, a source
// down from minute 23 fires 2m later) and VigilInfluxPointsDropped (3
// points dropped at minute 21 fire until they leave the 10m window; the
// reason that did not grow does not).
func TestPrometheusVerdictSourceAndInfluxPromtool(t *testing.T) {
	b, err := PrometheusRules(ExampleConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	src := "http://canary-us:9470/api/v1/verdicts"
	down := selfAlertExp("VigilProxyVerdictSourceDown", RuleVerdictSourceDown, "ticket",
		`instance: proxy, job: vigil, verdict_source: "`+src+`"`,
		"vigil proxy proxy cannot read verdict source "+src+" (for 2m): it routes on its last verdicts until they age out, then on passive detection alone",
		runbookVerdictSourceDown)
	dropped := selfAlertExp("VigilInfluxPointsDropped", RuleInfluxPointsDropped, "ticket",
		"instance: canary, job: vigil, reason: spool_full",
		"canary dropped about 3 InfluxDB points in 10m (reason spool_full): they are lost for good",
		runbookInfluxPointsDropped)
	promtoolTest(t, writeRules(t, b), `  - interval: 1m
    input_series:
      - series: 'vigil_proxy_verdict_source_up{instance="proxy",job="vigil",source="`+src+`"}'
        values: '1x10 0 1x10 0x20'
      - series: 'vigil_influx_points_dropped_total{instance="canary",job="vigil",reason="spool_full"}'
        values: '0x20 3x30'
      - series: 'vigil_influx_points_dropped_total{instance="canary",job="vigil",reason="rejected"}'
        values: '0x50'
    alert_rule_test:
      - {eval_time: 12m, alertname: VigilProxyVerdictSourceDown, exp_alerts: []}
      - {eval_time: 24m, alertname: VigilProxyVerdictSourceDown, exp_alerts: []}
      - eval_time: 26m
        alertname: VigilProxyVerdictSourceDown
        exp_alerts:`+down+`
      - {eval_time: 20m, alertname: VigilInfluxPointsDropped, exp_alerts: []}
      - eval_time: 22m
        alertname: VigilInfluxPointsDropped
        exp_alerts:`+dropped+`
      - {eval_time: 35m, alertname: VigilInfluxPointsDropped, exp_alerts: []}
`)
}

// TestAlerterLastEvaluationSuccessMetric scrapes /metrics of a real
// listener: vigil_alert_last_evaluation_success_timestamp_seconds is the
// alerter's start until an evaluation works, then the time of the last
// one that worked; evaluations that fail (the store unreadable) leave it
// where it was, so it grows old while InfluxDB is down.
func TestAlerterLastEvaluationSuccessMetric(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 17, 25, 0, 0, time.UTC)
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	reg := prometheus.NewRegistry()
	a, err := New(Config{EvaluationInterval: time.Second}, nil, store, Options{Registry: reg, Now: clock.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	scrape := func() string {
		t.Helper()
		c := &http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://" + ln.Addr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "vigil_alert_last_evaluation_success_timestamp_seconds ") {
				return strings.TrimPrefix(l, "vigil_alert_last_evaluation_success_timestamp_seconds ")
			}
		}
		t.Fatalf("no vigil_alert_last_evaluation_success_timestamp_seconds in /metrics:\n%s", body)
		return ""
	}
	secs := func(t time.Time) string { return fmt.Sprint(float64(t.Unix())) }
	if got := scrape(); got != secs(t0) {
		t.Fatalf("before any evaluation: %s, want the start %s", got, secs(t0))
	}
	t1 := clock.Add(15 * time.Second)
	if err := a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := scrape(); got != secs(t1) {
		t.Fatalf("after a working evaluation: %s, want %s", got, secs(t1))
	}
	store.mu.Lock()
	store.err = errors.New(`Post "http://127.0.0.1:28086/query": dial tcp 127.0.0.1:28086: connect: connection refused`)
	store.mu.Unlock()
	for range 3 {
		clock.Add(15 * time.Second)
		if err := a.Evaluate(context.Background()); err == nil {
			t.Fatal("evaluation worked with the store failing")
		}
	}
	if got := scrape(); got != secs(t1) {
		t.Fatalf("after failed evaluations: %s, want the last success %s", got, secs(t1))
	}
	store.mu.Lock()
	store.err = nil
	store.mu.Unlock()
	t2 := clock.Add(15 * time.Second)
	if err := a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := scrape(); got != secs(t2) {
		t.Fatalf("after the store came back: %s, want %s", got, secs(t2))
	}
}

// TestPrometheusAlerterRetiredPromtool runs the generated
// VigilAlerterNotEvaluating with `promtool test rules` over alerters that
// leave in the ways a deployment sees: "old" is removed from the scrape
// targets at minute 20 (a Kubernetes rollout gives the new pod another
// instance: its series and its `up` go stale) while "new" evaluates
// fine: nothing fires, not 2m later nor hours later. "crashing" is
// still discovered but down (`up` 0) from minute 20 and fires 2m later;
// "stuck" is scraped but its evaluations stop at minute 30 and fires
// 2m later. When the only alerter is removed and none replaces it, the
// alert fires without an instance.
func TestPrometheusAlerterRetiredPromtool(t *testing.T) {
	b, err := PrometheusRules(ExampleConfig, ExampleSLOs, ExampleChecks...)
	if err != nil {
		t.Fatal(err)
	}
	exp := func(inst string) string {
		summary := "vigil alerter " + inst + " has not evaluated its rules for over 2m (store unreadable, alerter down, or no alerter scraped): " +
			"no vigil alert fires or resolves, so a new outage pages no one"
		if inst == "" {
			summary = "vigil alerter has not evaluated its rules for over 2m (store unreadable, alerter down, or no alerter scraped): " +
				"no vigil alert fires or resolves, so a new outage pages no one"
		} else {
			inst = "instance: " + inst + ", job: vigil"
		}
		return selfAlertExp("VigilAlerterNotEvaluating", RuleAlerterNotEvaluating, "page", inst, summary, runbookAlerterNotEvaluating)
	}
	const g = "vigil_alert_last_evaluation_success_timestamp_seconds"
	promtoolTest(t, writeRules(t, b), `  - interval: 1m
    input_series:
      - series: '`+g+`{instance="old",job="vigil"}'
        values: '0+60x20 stale'
      - series: 'up{instance="old",job="vigil"}'
        values: '1x20 stale'
      - series: '`+g+`{instance="new",job="vigil"}'
        values: '_x15 900+60x200'
      - series: 'up{instance="new",job="vigil"}'
        values: '_x15 1x200'
    alert_rule_test:
      - {eval_time: 19m, alertname: VigilAlerterNotEvaluating, exp_alerts: []}
      - {eval_time: 23m, alertname: VigilAlerterNotEvaluating, exp_alerts: []}
      - {eval_time: 40m, alertname: VigilAlerterNotEvaluating, exp_alerts: []}
      - {eval_time: 3h, alertname: VigilAlerterNotEvaluating, exp_alerts: []}
  - interval: 1m
    input_series:
      - series: '`+g+`{instance="crashing",job="vigil"}'
        values: '0+60x20 stale'
      - series: 'up{instance="crashing",job="vigil"}'
        values: '1x20 0x40'
      - series: '`+g+`{instance="stuck",job="vigil"}'
        values: '0+60x30 1800x30'
      - series: 'up{instance="stuck",job="vigil"}'
        values: '1x60'
    alert_rule_test:
      - {eval_time: 21m, alertname: VigilAlerterNotEvaluating, exp_alerts: []}
      - eval_time: 23m
        alertname: VigilAlerterNotEvaluating
        exp_alerts:`+exp("crashing")+`
      - eval_time: 33m
        alertname: VigilAlerterNotEvaluating
        exp_alerts:`+exp("crashing")+exp("stuck")+`
  - interval: 1m
    input_series:
      - series: '`+g+`{instance="only",job="vigil"}'
        values: '0+60x20 stale'
      - series: 'up{instance="only",job="vigil"}'
        values: '1x20 stale'
    alert_rule_test:
      - {eval_time: 21m, alertname: VigilAlerterNotEvaluating, exp_alerts: []}
      - eval_time: 23m
        alertname: VigilAlerterNotEvaluating
        exp_alerts:`+exp("")+`
      - eval_time: 3h
        alertname: VigilAlerterNotEvaluating
        exp_alerts:`+exp("")+`
`)
}
