package grafana

import (
	"testing"
	"time"

	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// TestAlertRulesKeepFiringFor: the provisioned rules hold a firing alert
// as vigil's alerter and the generated Prometheus rules do (README "Keep
// firing"), under the key Grafana's file provisioning reads
// (keepFiringFor; the API model's keep_firing_for is ignored in a file).
func TestAlertRulesKeepFiringFor(t *testing.T) {
	// The TTFB rule reads 10 minutes: ttfb.keep_firing_for's default is the
	// SLO window, at most vigilalerting.TTFBKeepMax. The burn rule has only the
	// 1h/5m pair: burn_rate.keep_firing_for's default is the short window
	// of the slowest pair that held. down.keep_firing_for defaults to 0s.
	var burnShort time.Duration
	for _, w := range vigilalerting.BurnWindows {
		if w.Long == BurnRateLong && w.Short == BurnRateShort {
			burnShort = w.Short
		}
	}
	if burnShort == 0 {
		t.Fatalf("no alerter burn pair %s/%s", BurnRateLong, BurnRateShort)
	}
	want := map[string]string{
		"vigil-origin-down":       "",
		"vigil-ttfb-p95":          shortDur(min(10*time.Minute, vigilalerting.TTFBKeepMax)),
		"vigil-availability-burn": shortDur(burnShort),
		// The second page pair, 6h/30m: held for its short window.
		"vigil-availability-burn-6h": "30m",
	}
	for uid, keep := range want {
		rule := provisionedRule(t, uid)
		if _, ok := rule["keep_firing_for"]; ok {
			t.Errorf("%s: keep_firing_for is the API's key; file provisioning reads keepFiringFor", uid)
		}
		got, _ := rule["keepFiringFor"].(string)
		if got != keep {
			t.Errorf("%s: keepFiringFor = %q, want %q", uid, got, keep)
		}
	}
}

// TestAlertRulesLabels: the provisioned rules carry the labels the
// alerter's and the Prometheus rules' alerts carry, so one notification
// policy routes all three: rule (down, ttfb, burn_rate), severity, and
// source (grafana, where the others say vigil and prometheus); slo on the
// TTFB and burn-rate rules only, as theirs.
func TestAlertRulesLabels(t *testing.T) {
	want := map[string]map[string]any{
		"vigil-origin-down":          {"rule": vigilalerting.RuleDown, "severity": "page", "source": "grafana"},
		"vigil-ttfb-p95":             {"rule": vigilalerting.RuleTTFB, "severity": "ticket", "source": "grafana", "slo": "latency"},
		"vigil-availability-burn":    {"rule": vigilalerting.RuleBurnRate, "severity": "page", "source": "grafana", "slo": "availability"},
		"vigil-availability-burn-6h": {"rule": vigilalerting.RuleBurnRate, "severity": "page", "source": "grafana", "slo": "availability"},
	}
	for uid, labels := range want {
		got, _ := provisionedRule(t, uid)["labels"].(map[string]any)
		if len(got) != len(labels) {
			t.Errorf("%s: labels %v, want %v", uid, got, labels)
		}
		for k, v := range labels {
			if got[k] != v {
				t.Errorf("%s: label %s = %v, want %v", uid, k, got[k], v)
			}
		}
	}
}
