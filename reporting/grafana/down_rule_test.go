package grafana

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestOriginDownRuleLabels evaluates vigil-origin-down in a real InfluxDB
// 1.8: api → edge-a is unhealthy in two regions of three and fires, its
// series labelled with the check's tier as the Prometheus rules'
// VigilCheckDown (count by check, target, tier); api → edge-b, unhealthy
// in one region, fires only with quorum 1, "in 1 region".
func TestOriginDownRuleLabels(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	var sb strings.Builder
	for _, v := range []struct{ target, region, state string }{
		{"edge-a", "eu-west", "unhealthy"}, {"edge-a", "us-east", "unhealthy"}, {"edge-a", "ap-south", "healthy"},
		{"edge-b", "eu-west", "unhealthy"}, {"edge-b", "us-east", "healthy"},
	} {
		for i := 0; i < 3; i++ {
			fmt.Fprintf(&sb, "vigil_verdict,check=api,region=%s,target=%s,tier=deep,vantage=%s-1 ok=%t,state=%q,expires=0i %d\n",
				v.region, v.target, v.region, v.state == "healthy", v.state, now.Add(-time.Duration(i)*30*time.Second).UnixNano())
		}
	}
	db.write(t, sb.String())

	got := firing(t, db, provisionedRule(t, "vigil-origin-down"), now.Add(time.Second))
	want := map[string]string{"api/edge-a/deep": "api × edge-a is unhealthy in 2 regions"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("vigil-origin-down firing %v, want %v", got, want)
	}
	raw, err := Options{Quorum: 1}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	got = firing(t, db, ruleOf(t, raw, "vigil-origin-down"), now.Add(time.Second))
	want = map[string]string{"api/edge-a/deep": "api × edge-a is unhealthy in 2 regions", "api/edge-b/deep": "api × edge-b is unhealthy in 1 region"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("quorum 1: vigil-origin-down firing %v, want %v", got, want)
	}
}
