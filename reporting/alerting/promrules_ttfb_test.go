package alerting

import (
	"testing"
	"time"
)

// TestPrometheusTTFBScriptCheck: a TTFB SLO on a script check fires from
// Prometheus as the built-in rule does. A script exports no
// probe_http_duration_seconds, only probe_success, probe_duration_seconds,
// probe_http_status_code and the verdict's TTFB (vigil_ttfb_seconds);
// the generated rule must judge that TTFB.
func TestPrometheusTTFBScriptCheck(t *testing.T) {
	cfg := ExampleConfig
	cfg.Quorum = 1
	b, err := PrometheusRules(cfg, []SLO{{Name: "login-ttfb", Check: "login-flow", TTFBP95: 300 * time.Millisecond, Window: 5 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	const lbl = `check="login-flow",target="origin-a",tier="synthetic",region="eu-west"`
	promtoolTest(t, writeRules(t, b), `  - interval: 1m
    input_series:
      - series: 'probe_success{`+lbl+`}'
        values: '1x4 0x15'
      - series: 'probe_duration_seconds{`+lbl+`}'
        values: '0.1x4 0.45x15'
      - series: 'probe_http_status_code{`+lbl+`}'
        values: '200x20'
      - series: 'vigil_ttfb_seconds{`+lbl+`}'
        values: '0.05x4 0.402x15'
    alert_rule_test:
      - {eval_time: 3m, alertname: VigilTTFBSLOBreach, exp_alerts: []}
      - eval_time: 12m
        alertname: VigilTTFBSLOBreach
        exp_alerts:
          - exp_labels: {alertname: VigilTTFBSLOBreach, check: login-flow, target: origin-a, tier: synthetic, rule: ttfb, severity: ticket, slo: login-ttfb, source: prometheus}
            exp_annotations:
              summary: 'login-flow × origin-a TTFB p95 over 5m above 300ms in 1 region'
              status_url: 'http://127.0.0.1:9470/check/login-flow?target=origin-a'
`)
}
