package alerting

import (
	"fmt"
	"strings"
	"testing"
)

// TestPrometheusBurnRunsFloor: as the built-in burn_rate rule, the
// generated burn-rate ratios divide by at least the runs the check's
// interval makes in the window (asset runs every 15 s in ExampleChecks:
// 240 runs an hour), so a young store's single failure pages nobody. A
// store 5 minutes old, every 15 s, in two regions: origin-a failed its
// first run and passed 19 (1 of 20 is a 50× burn of 99.9 %; over the
// floor, 1 of 240 over 1h is 4.2×, under 14.4×, and 1 of 1440 over 6h
// 0.7×, under 6×): no alert. origin-b fails every run (20 of 240 over 1h,
// 83×; 20 of 5760 over 1d, 3.5×): it pages and opens the ticket, as the
// built-in rule does at min_runs.
func TestPrometheusBurnRunsFloor(t *testing.T) {
	b, err := PrometheusRules(ExampleConfig, ExampleSLOs, ExampleChecks...)
	if err != nil {
		t.Fatal(err)
	}
	const n = 21 // samples every 15 s: 0 .. 5m, 20 runs
	values := func(inc func(i int) bool) string {
		var sb strings.Builder
		v := 0
		for i := 0; i < n; i++ {
			if i > 0 && inc(i) {
				v++
			}
			fmt.Fprintf(&sb, "%d ", v)
		}
		return strings.TrimSpace(sb.String())
	}
	var in strings.Builder
	for _, region := range []string{"eu", "us"} {
		for target, fails := range map[string]func(int) bool{
			"origin-a": func(i int) bool { return i == 1 },
			"origin-b": func(int) bool { return true },
		} {
			lbl := `check="asset",target="` + target + `",region="` + region + `"`
			fmt.Fprintf(&in, "      - series: 'vigil_checks_total{%s,result=\"pass\"}'\n        values: '%s'\n", lbl,
				values(func(i int) bool { return !fails(i) }))
			fmt.Fprintf(&in, "      - series: 'vigil_checks_total{%s,result=\"fail\"}'\n        values: '%s'\n", lbl, values(fails))
		}
	}
	alerts := `
          - exp_labels: {alertname: VigilErrorBudgetBurn, check: asset, target: origin-b, tier: deep, rule: burn_rate, severity: page, slo: asset-availability, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-b: error budget of asset-availability (objective 99.9%): fast burn in 2 regions (1h/5m or 6h/30m)'
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-b'
              windows: '1h/5m,6h/30m'
          - exp_labels: {alertname: VigilErrorBudgetBurn, check: asset, target: origin-b, tier: deep, rule: burn_rate, severity: ticket, slo: asset-availability, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-b: error budget of asset-availability (objective 99.9%): slow burn in 2 regions (1d/2h or 3d/6h)'
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-b'
              windows: '1d/2h,3d/6h'`
	promtoolTest(t, writeRules(t, b), "  - interval: 15s\n    input_series:\n"+in.String()+`    alert_rule_test:
      - eval_time: 5m
        alertname: VigilErrorBudgetBurn
        exp_alerts:`+alerts+`
    promql_expr_test:
      # origin-a over 1h: 1 failed run ÷ max(20 runs, 240) = 1/240.
      - expr: 'round(1 / vigil:slo_error_ratio:rate1h{target="origin-a"})'
        eval_time: 5m
        exp_samples:
          - labels: '{check="asset",target="origin-a",region="eu",slo="asset-availability"}'
            value: 240
          - labels: '{check="asset",target="origin-a",region="us",slo="asset-availability"}'
            value: 240
`)
}
