package alerting

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPrometheusTTFBOneSlowRun: the generated TTFB alert, over the
// histogram, needs 2 runs over the objective in the window, as the
// built-in rule (TTFBMinSlowRuns). A check runs twice a minute (10 runs in
// the 5m window): origin-a has one 900 ms run at minute 10, whose
// interpolated p95 is above 600 ms for the 5 minutes it stays in the
// window, and does not fire; origin-b has two, at minutes 10 and 11, and
// fires.
func TestPrometheusTTFBOneSlowRun(t *testing.T) {
	cfg := ExampleConfig
	cfg.Quorum = 1
	slo := SLO{Name: "asset-ttfb", Check: "asset", TTFBP95: 600 * time.Millisecond, Window: 5 * time.Minute}
	b, err := PrometheusRules(cfg, []SLO{slo}, CheckInterval{Check: "asset", Interval: 30 * time.Second, Tier: "deep"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	var in strings.Builder
	slowAt := map[string][]int{"origin-a": {10}, "origin-b": {10, 11}}
	for _, target := range []string{"origin-a", "origin-b"} {
		in.WriteString(histSeries(`check="asset",target="`+target+`",region="eu-west"`, n, func(m int) []float64 {
			for _, s := range slowAt[target] {
				if m == s {
					return []float64{0.1, 0.9}
				}
			}
			return []float64{0.1, 0.1}
		}))
	}
	fire := `
          - exp_labels: {alertname: VigilTTFBSLOBreach, check: asset, target: origin-b, tier: deep, rule: ttfb, severity: ticket, slo: asset-ttfb, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-b TTFB p95 over 5m above 600ms in 1 region'
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-b'`
	evals := []string{fmt.Sprintf("      - eval_time: 13m\n        alertname: VigilTTFBSLOBreach\n        exp_alerts:%s", fire)}
	promtoolTest(t, writeRules(t, b), "  - interval: 1m\n    input_series:\n"+in.String()+
		"    alert_rule_test:\n"+strings.Join(evals, "\n")+"\n"+
		`    promql_expr_test:
      - expr: 'count(vigil:ttfb_seconds:p95_5m{target="origin-a"} > 0.6)'
        eval_time: 13m
        exp_samples:
          - value: 1
`)
}
