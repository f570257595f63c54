package grafana

import (
	"fmt"
	"strings"
	"testing"
	"time"

	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// slowBurnLines is 3 days of runs every 5 minutes (864 per region) of
// check api in three regions against edge-d, edge-e and edge-f, each
// failing once: edge-d 60 minutes ago in eu-west and us-east, edge-e 3
// hours ago in eu-west and us-east, edge-f 60 minutes ago in us-east only.
// Against a 99.9 % objective: edge-d burns 3.5× over 1d and 42× over 2h
// (the 1d/2h ticket pair), and 1.2× over 3d and 14× over 6h (3d/6h);
// edge-e only the 3d/6h pair (its failure is outside the 2h window); no
// pair's short window of 5m or 30m holds a failure, so no page; edge-f
// burns in one region, below the quorum of 2.
func slowBurnLines(now time.Time) string {
	fail := map[string]int{"edge-d": 12, "edge-e": 36, "edge-f": 12} // run k = now − k × 5m
	var sb strings.Builder
	for k := 0; k < 864; k++ {
		at := now.Add(-time.Duration(k) * 5 * time.Minute)
		for _, region := range sampleRegions {
			for _, target := range []string{"edge-d", "edge-e", "edge-f"} {
				ok := !(k == fail[target] && (region == "us-east" || region == "eu-west" && target != "edge-f"))
				fmt.Fprintf(&sb, "vigil_verdict,check=api,region=%s,target=%s,tier=deep,vantage=%s-1 ok=%t,cause=%q,state=\"healthy\",ttfb_ms=100 %d\n",
					region, target, region, ok, map[bool]string{true: "", false: "status"}[ok], at.UnixNano())
			}
		}
	}
	return sb.String()
}

// TestSlowBurnTicketRules evaluates the ticket pairs in a real InfluxDB
// 1.8 over 3 days of verdicts: vigil-availability-burn-1d (3× the budget
// over 1d and 2h) and vigil-availability-burn-3d (1× over 3d and 6h), the
// alerter's and the Prometheus rules' slow burn, each fire for the pairs
// that burn in 2 regions, not for one burning in a single region, and the
// page rules stay quiet. They carry severity ticket and the pair's
// windows, and hold for the pair's short window.
func TestSlowBurnTicketRules(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	db.write(t, slowBurnLines(now))
	eval := now.Add(time.Second)
	for _, tt := range []struct {
		uid, windows, keep string
		want               map[string]string
	}{
		{"vigil-availability-burn-1d", "1d/2h", "2h", map[string]string{
			"api/edge-d": "api × edge-d burns its error budget above 3x over 1d and 2h in 2 regions"}},
		{"vigil-availability-burn-3d", "3d/6h", "6h", map[string]string{
			"api/edge-d": "api × edge-d burns its error budget above 1x over 3d and 6h in 2 regions",
			"api/edge-e": "api × edge-e burns its error budget above 1x over 3d and 6h in 2 regions"}},
		{"vigil-availability-burn", "1h/5m", "5m", map[string]string{}},
		{"vigil-availability-burn-6h", "6h/30m", "30m", map[string]string{}},
	} {
		rule := provisionedRule(t, tt.uid)
		got := firing(t, db, rule, eval)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s firing %v, want %v", tt.uid, got, tt.want)
		}
		labels, _ := rule["labels"].(map[string]any)
		ann, _ := rule["annotations"].(map[string]any)
		sev := vigilalerting.SeverityPage
		if strings.HasSuffix(tt.uid, "-1d") || strings.HasSuffix(tt.uid, "-3d") {
			sev = vigilalerting.SeverityTicket
		}
		if labels["severity"] != sev || labels["rule"] != vigilalerting.RuleBurnRate || ann["windows"] != tt.windows || rule["keepFiringFor"] != tt.keep {
			t.Errorf("%s: labels %v, windows %v, keepFiringFor %v; want severity %s, rule burn_rate, windows %s, keepFiringFor %s",
				tt.uid, labels, ann["windows"], rule["keepFiringFor"], sev, tt.windows, tt.keep)
		}
	}
}
