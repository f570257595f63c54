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
