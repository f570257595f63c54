package alerting

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPrometheusBurnMinRuns: as the built-in burn_rate rule, the generated
// burn-rate alerts count a region only once it made burn_rate.min_runs
// (default 10) runs in the pair's long window, so a new check failing its
// first runs in two regions pages nobody; once it keeps failing past 10
// runs, it pages (and opens the slow-burn ticket). One run a minute,
// every run fails from the start (the check's interval is 1m: the ratios'
// floor, the runs it makes in a window, is the runs made).
func TestPrometheusBurnMinRuns(t *testing.T) {
	b, err := PrometheusRules(ExampleConfig, ExampleSLOs, CheckInterval{Check: "asset", Interval: time.Minute, Tier: "deep"})
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for _, region := range []string{"eu", "us", "ap"} {
		lbl := `check="asset",target="origin-a",region="` + region + `"`
		fails := region != "ap"
		fmt.Fprintf(&in, "      - series: 'vigil_checks_total{%s,result=\"pass\"}'\n        values: '%s'\n", lbl,
			counterValues(30, func(int) bool { return !fails }))
		fmt.Fprintf(&in, "      - series: 'vigil_checks_total{%s,result=\"fail\"}'\n        values: '%s'\n", lbl,
			counterValues(30, func(int) bool { return fails }))
	}
	page := `
          - exp_labels: {alertname: VigilErrorBudgetBurn, check: asset, target: origin-a, tier: deep, rule: burn_rate, severity: page, slo: asset-availability, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a: error budget of asset-availability (objective 99.9%): fast burn in 2 regions (1h/5m or 6h/30m)'
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-a'
              windows: '1h/5m,6h/30m'
          - exp_labels: {alertname: VigilErrorBudgetBurn, check: asset, target: origin-a, tier: deep, rule: burn_rate, severity: ticket, slo: asset-availability, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a: error budget of asset-availability (objective 99.9%): slow burn in 2 regions (1d/2h or 3d/6h)'
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-a'
              windows: '1d/2h,3d/6h'`
	promtoolTest(t, writeRules(t, b), "  - interval: 1m\n    input_series:\n"+in.String()+`    alert_rule_test:
      - {eval_time: 3m, alertname: VigilErrorBudgetBurn, exp_alerts: []}
      - {eval_time: 8m, alertname: VigilErrorBudgetBurn, exp_alerts: []}
      - eval_time: 15m
        alertname: VigilErrorBudgetBurn
        exp_alerts:`+page+`
`)
}
