package grafana

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// deadManLines writes the newest verdicts of checks api (run every 30 s),
// nightly (every 1 h) and legacy (in no rule's checks) per region, ago
// before now: api is silent in eu-west for 5 minutes; in us-east one
// vantage stopped 10 minutes ago but the other wrote 20 s ago (the region
// is not silent); ap-south stopped 25 hours ago (forgotten:
// dead_man.forget_after is 24h); nightly is silent for 2 hours in eu-west
// (below its 3h window) and 4 hours in us-east; legacy for 1 hour.
func deadManLines(now time.Time) string {
	newest := []struct {
		check, region, vantage string
		ago                    time.Duration
	}{
		{"api", "eu-west", "eu-west-1", 5 * time.Minute},
		{"api", "us-east", "us-east-1", 20 * time.Second},
		{"api", "us-east", "us-east-2", 10 * time.Minute},
		{"api", "ap-south", "ap-south-1", 25 * time.Hour},
		{"nightly", "eu-west", "eu-west-1", 2 * time.Hour},
		{"nightly", "us-east", "us-east-1", 4 * time.Hour},
		{"legacy", "eu-west", "eu-west-1", time.Hour},
	}
	var sb strings.Builder
	for _, n := range newest {
		// The newest verdict and two older ones, two targets each.
		for i := 0; i < 3; i++ {
			at := now.Add(-n.ago - time.Duration(i)*time.Minute)
			for _, target := range []string{"edge-a", "edge-b"} {
				fmt.Fprintf(&sb, "vigil_verdict,check=%s,region=%s,target=%s,tier=deep,vantage=%s ok=true,state=\"healthy\",ttfb_ms=80 %d\n",
					n.check, n.region, target, n.vantage, at.UnixNano())
			}
		}
	}
	return sb.String()
}

// TestDeadManRules evaluates the dead-man rules in a real InfluxDB 1.8.
// With the checks' intervals (Options.Checks), there is one rule per
// interval over its checks only, as alerting.PrometheusRules writes
// VigilCanarySilent: window dead_man.intervals × the interval (at least
// 2m), pending 2 × the interval, label interval; it fires for a region ×
// check whose newest verdict from any vantage and target is older than
// the window, not for a region with one live vantage, one silent for
// longer than dead_man.forget_after, or a check in no rule. The committed
// rule, without checks, judges every check over 10 minutes.
func TestDeadManRules(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	db.write(t, deadManLines(now))
	// The verdicts' ages are whole seconds + 1.25: the summaries round
	// them to whole seconds.
	eval := now.Add(1250 * time.Millisecond)

	cfg := vigilalerting.Config{}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	checks := []vigilalerting.CheckInterval{{Check: "api", Interval: 30 * time.Second, Tier: "shallow"}, {Check: "nightly", Interval: time.Hour}}
	raw, err := Options{Alerting: &cfg, Checks: checks}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	prom, err := vigilalerting.PrometheusRules(cfg, nil, checks...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		uid, interval, window, pending string
		threshold                      float64
		want                           map[string]string
	}{
		{"vigil-dead-man-30s", "30s", "2m", "1m", 120, map[string]string{
			"api/eu-west": "no verdict of check api in region eu-west for 301 s (more than 2m)"}},
		{"vigil-dead-man-1h", "1h", "3h", "2h", 3 * 3600, map[string]string{
			"nightly/us-east": "no verdict of check nightly in region us-east for 14401 s (more than 3h)"}},
	} {
		rule := ruleOf(t, raw, tt.uid)
		got := firing(t, db, rule, eval)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s firing %v, want %v", tt.uid, got, tt.want)
		}
		labels, _ := rule["labels"].(map[string]any)
		if labels["rule"] != vigilalerting.RuleDeadMan || labels["severity"] != "ticket" || labels["interval"] != tt.interval || rule["for"] != tt.pending {
			t.Errorf("%s: labels %v, for %v; want rule dead_man, severity ticket, interval %s, for %s", tt.uid, labels, rule["for"], tt.interval, tt.pending)
		}
		if _, ok := rule["keepFiringFor"]; ok {
			t.Errorf("%s: keepFiringFor %v; dead_man has no hold (the alerter's and the Prometheus rules' have none)", tt.uid, rule["keepFiringFor"])
		}
		if th := threshold(t, rule); th != tt.threshold {
			t.Errorf("%s: threshold %v s, want %v (the window %s)", tt.uid, th, tt.threshold, tt.window)
		}
		// The Prometheus rule of the same interval: same window, for and label.
		promRule := fmt.Sprintf("[%s]) > 0)\n        for: %s\n        labels:\n          interval: '%s'", tt.window, tt.pending, tt.interval)
		if !strings.Contains(string(prom), promRule) {
			t.Errorf("%s: the Prometheus rules have no VigilCanarySilent with window %s, for %s, interval %s:\n%s", tt.uid, tt.window, tt.pending, tt.interval, prom)
		}
	}

	// The committed rule: every check, 10 minutes.
	rule := provisionedRule(t, "vigil-dead-man")
	got := firing(t, db, rule, eval)
	var names []string
	for k := range got {
		names = append(names, k)
	}
	if want := "[legacy/eu-west nightly/eu-west nightly/us-east]"; fmt.Sprint(slices.Sorted(slices.Values(names))) != want {
		t.Errorf("vigil-dead-man firing %v, want %s", got, want)
	}
	if rule["for"] != "7m" || threshold(t, rule) != 600 {
		t.Errorf("vigil-dead-man: for %v, threshold %v; want 7m (6m40s, 2 × 10m / 3 intervals, rounded up to the minute) and 600 s", rule["for"], threshold(t, rule))
	}
}

// threshold is the limit of a rule's threshold expression.
func threshold(t *testing.T, rule map[string]any) float64 {
	t.Helper()
	for _, d := range rule["data"].([]any) {
		model := d.(map[string]any)["model"].(map[string]any)
		if model["type"] != "threshold" {
			continue
		}
		p := model["conditions"].([]any)[0].(map[string]any)["evaluator"].(map[string]any)["params"].([]any)[0]
		switch v := p.(type) {
		case int:
			return float64(v)
		case float64:
			return v
		}
	}
	t.Fatalf("rule %v: no threshold", rule["uid"])
	return 0
}
