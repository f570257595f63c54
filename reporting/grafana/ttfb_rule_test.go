package grafana

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTTFBRuleNeedsQuorum evaluates the provisioned vigil-ttfb-p95 rule
// over the sample data in a real InfluxDB 1.8, as vigil's ttfb rule
// judges: per check × target, the regions whose TTFB p95 over the window
// is above the objective with at least TTFBMinSamples runs, firing from
// Quorum regions. ap-south is slow for every pair (one region: below the
// quorum, nobody is paged for one vantage's network); api → edge-b is made
// slow in eu-west too for the last 10 minutes and fires in 2 regions;
// home → edge-a is slow in two new regions but with 2 runs each in the
// window (fewer than TTFBMinSamples), so they do not count.
func TestTTFBRuleNeedsQuorum(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	db.write(t, sampleLines(now))
	var slow strings.Builder
	start := now.Add(-30 * time.Minute)
	for i := 40; i < 60; i++ { // runs every 30 s: the last 10 minutes
		at := start.Add(time.Duration(i) * 30 * time.Second)
		fmt.Fprintf(&slow, "vigil_verdict,check=api,region=eu-west,target=edge-b,tier=shallow,vantage=eu-west-1 ttfb_ms=910 %d\n", at.UnixNano())
	}
	// home → edge-a: only 2 runs in the window in two new regions, both
	// slow (with the fields vigil always writes: the rule pairs ttfb_ms
	// with cause, ok and duration_ms).
	for _, region := range []string{"sa-east", "af-south"} {
		for _, ago := range []time.Duration{9 * time.Minute, 8 * time.Minute} {
			fmt.Fprintf(&slow, "vigil_verdict,check=home,region=%s,target=edge-a,tier=shallow,vantage=%s-1 state=\"degraded\",ok=false,cause=\"ttfb\",ttfb_ms=2000,duration_ms=2010 %d\n",
				region, region, now.Add(-ago).UnixNano())
		}
	}
	db.write(t, slow.String())

	// Series are check/target/tier: tier is a label, as the Prometheus
	// rule's count by (check, target, tier).
	got := firing(t, db, provisionedRule(t, "vigil-ttfb-p95"), now.Add(time.Second))
	want := map[string]string{"api/edge-b/shallow": "api × edge-b TTFB p95 over 10 minutes above 600 ms in 2 regions"}
	if len(got) != len(want) {
		t.Errorf("firing %v, want only api/edge-b/shallow (ap-south alone is below quorum %d; home/edge-a's new regions have too few runs)", got, Quorum)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: summary %q, want %q", k, got[k], w)
		}
	}

	// Quorum 1: ap-south alone fires every pair, "in 1 region".
	raw, err := Options{Quorum: 1}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	got = firing(t, db, ruleOf(t, raw, "vigil-ttfb-p95"), now.Add(time.Second))
	if w := "home × edge-a TTFB p95 over 10 minutes above 600 ms in 1 region"; got["home/edge-a/shallow"] != w {
		t.Errorf("quorum 1: home/edge-a/shallow: summary %q, want %q (all firing: %v)", got["home/edge-a/shallow"], w, got)
	}
}
