package alerting

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// histSeries renders the input series of a vigil_check_ttfb_seconds
// histogram (one sample per minute, minutes [0, n)) for the pair in lbl:
// runs(m) are the TTFBs of the runs made during minute m, in seconds.
func histSeries(lbl string, n int, runs func(m int) []float64) string {
	var b strings.Builder
	bounds := append(LatencyBuckets[:], 0) // 0 stands for +Inf
	for _, ub := range bounds {
		le := "+Inf"
		if ub > 0 {
			le = strconv.FormatFloat(ub, 'g', -1, 64)
		}
		var vals []string
		total := 0
		for m := 0; m < n; m++ {
			for _, r := range runs(m) {
				if ub == 0 || r <= ub {
					total++
				}
			}
			vals = append(vals, strconv.Itoa(total))
		}
		fmt.Fprintf(&b, "      - series: 'vigil_check_ttfb_seconds_bucket{%s,le=\"%s\"}'\n        values: '%s'\n", lbl, le, strings.Join(vals, " "))
	}
	var vals []string
	total := 0
	for m := 0; m < n; m++ {
		total += len(runs(m))
		vals = append(vals, strconv.Itoa(total))
	}
	fmt.Fprintf(&b, "      - series: 'vigil_check_ttfb_seconds_count{%s}'\n        values: '%s'\n", lbl, strings.Join(vals, " "))
	return b.String()
}

// TestPrometheusTTFBFromHistogram: with agent.latency_histograms the
// generated TTFB rule judges every run, not the one run each scrape
// happens to see through the last-run gauge. A check runs 4 times a
// minute and Prometheus scrapes once a minute:
//
//   - origin-a: one run in four takes 900 ms (p95 900 ms), but the run
//     before each scrape is fast, so the gauge only ever shows 100 ms;
//     the alert fires.
//   - origin-b: one run in forty takes 900 ms (p95 100 ms), and it is the
//     run before every tenth scrape, so 10 % of the gauge's samples are
//     900 ms; the alert stays quiet.
//   - origin-c: one slow run every 10 minutes: fewer than ttfb.min_samples
//     (3) runs in a 5m window, so no p95 and no alert, as the built-in rule.
//
// Pairs without a histogram keep the gauge (TestPrometheusTTFBScriptCheck).
func TestPrometheusTTFBFromHistogram(t *testing.T) {
	cfg := ExampleConfig
	cfg.Quorum = 1
	slo := SLO{Name: "asset-ttfb", Check: "asset", TTFBP95: 600 * time.Millisecond, Window: 5 * time.Minute}
	b, err := PrometheusRules(cfg, []SLO{slo}, CheckInterval{Check: "asset", Interval: 15 * time.Second, Tier: "deep"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 30
	var in strings.Builder
	type pair struct {
		target string
		runs   func(m int) []float64
		gauge  func(m int) float64
	}
	pairs := []pair{
		{"origin-a", func(int) []float64 { return []float64{0.1, 0.9, 0.1, 0.1} }, func(int) float64 { return 0.1 }},
		{"origin-b", func(m int) []float64 {
			if m%10 == 9 {
				return []float64{0.1, 0.1, 0.1, 0.9}
			}
			return []float64{0.1, 0.1, 0.1, 0.1}
		}, func(m int) float64 {
			if m%10 == 0 && m > 0 {
				return 0.9 // scraped right after the slow run of minute m-1
			}
			return 0.1
		}},
		{"origin-c", func(m int) []float64 {
			if m%10 == 5 {
				return []float64{0.9}
			}
			return nil
		}, func(int) float64 { return 0.9 }},
	}
	for _, p := range pairs {
		lbl := `check="asset",target="` + p.target + `",region="eu-west"`
		in.WriteString(histSeries(lbl, n, p.runs))
		var g []string
		for m := 0; m < n; m++ {
			g = append(g, strconv.FormatFloat(p.gauge(m), 'g', -1, 64))
		}
		fmt.Fprintf(&in, "      - series: 'vigil_ttfb_seconds{%s,tier=\"deep\"}'\n        values: '%s'\n", lbl, strings.Join(g, " "))
	}
	fire := `
          - exp_labels: {alertname: VigilTTFBSLOBreach, check: asset, target: origin-a, tier: deep, rule: ttfb, severity: ticket, slo: asset-ttfb, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a TTFB p95 over 5m above 600ms in 1 region'
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-a'`
	var evals []string
	for _, at := range []int{12, 20, 25} {
		evals = append(evals, fmt.Sprintf("      - eval_time: %dm\n        alertname: VigilTTFBSLOBreach\n        exp_alerts:%s", at, fire))
	}
	// The recorded p95 of origin-b is in the 100 ms bucket, not 900 ms.
	promtoolTest(t, writeRules(t, b), "  - interval: 1m\n    input_series:\n"+in.String()+
		"    alert_rule_test:\n"+strings.Join(evals, "\n")+"\n"+
		`    promql_expr_test:
      - expr: 'count(vigil:ttfb_seconds:p95_5m{target="origin-b"} <= 0.1)'
        eval_time: 20m
        exp_samples:
          - value: 1
      - expr: 'count(vigil:ttfb_seconds:p95_5m{target="origin-c"})'
        eval_time: 20m
        exp_samples: []
`)
}

// TestPrometheusTTFBBucketNote: the rule file says how exact each TTFB
// objective is with the histogram's bucket bounds.
func TestPrometheusTTFBBucketNote(t *testing.T) {
	if !sort.Float64sAreSorted(LatencyBuckets[:]) {
		t.Fatalf("LatencyBuckets not sorted: %v", LatencyBuckets)
	}
	for _, tt := range []struct {
		obj  time.Duration
		want string
	}{
		{600 * time.Millisecond, "600ms is a bucket bound"},
		{650 * time.Millisecond, "650ms lies between the bucket bounds 600ms and 750ms"},
		{time.Minute, "1m0s is above the histogram's last bound 30s"},
	} {
		b, err := PrometheusRules(ExampleConfig, []SLO{{Name: "x", Check: "asset", TTFBP95: tt.obj, Window: 5 * time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tt.want) {
			t.Errorf("objective %s: no %q in\n%s", tt.obj, tt.want, b)
		}
	}
}
