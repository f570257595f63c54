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
	want := map[string]string{"api/edge-a/deep": "api × edge-a is unhealthy in 2 regions (eu-west, us-east)"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("vigil-origin-down firing %v, want %v", got, want)
	}
	raw, err := Options{Quorum: 1}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	got = firing(t, db, ruleOf(t, raw, "vigil-origin-down"), now.Add(time.Second))
	want = map[string]string{"api/edge-a/deep": "api × edge-a is unhealthy in 2 regions (eu-west, us-east)", "api/edge-b/deep": "api × edge-b is unhealthy in 1 region (eu-west)"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("quorum 1: vigil-origin-down firing %v, want %v", got, want)
	}
}

// TestOriginDownRuleSaysRegionsAndCause evaluates vigil-origin-down in a
// real InfluxDB 1.8 over verdicts with causes and errors: its annotations
// name the unhealthy regions, the most common cause among them (one
// vantage per region, the first by name) and that cause's error, as
// vigil's alerter annotates its down alerts (regions, cause, error), while
// the alert's own labels stay check, target and tier, so a region joining
// or a cause changing does not make it another alert.
func TestOriginDownRuleSaysRegionsAndCause(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	var sb strings.Builder
	for _, v := range []struct{ target, vantage, state, cause, err string }{
		// edge-a: timeout in ap-south and eu-west (its first vantage),
		// status in us-east; eu-west-2's status is not eu-west's.
		{"edge-a", "ap-south-1", "unhealthy", "timeout", "context deadline exceeded after 5s"},
		{"edge-a", "eu-west-1", "unhealthy", "timeout", "context deadline exceeded after 4s"},
		{"edge-a", "eu-west-2", "unhealthy", "status", "status 503, want 200"},
		{"edge-a", "us-east-1", "unhealthy", "status", "status 503, want 200"},
		// edge-b: one region without a cause, one connect; ap-south healthy.
		{"edge-b", "eu-west-1", "unhealthy", "", ""},
		{"edge-b", "us-east-1", "unhealthy", "connect", "connection refused"},
		{"edge-b", "ap-south-1", "healthy", "", ""},
		// edge-c: two causes, one region each: the first by name wins.
		{"edge-c", "eu-west-1", "unhealthy", "timeout", "context deadline exceeded"},
		{"edge-c", "us-east-1", "unhealthy", "dns", "no such host"},
	} {
		region := v.vantage[:strings.LastIndex(v.vantage, "-")]
		for i := 0; i < 2; i++ {
			fmt.Fprintf(&sb, "vigil_verdict,check=api,region=%s,target=%s,tier=deep,vantage=%s ok=%t,state=%q,cause=%q,err=%q,expires=0i %d\n",
				region, v.target, v.vantage, v.state == "healthy", v.state, v.cause, v.err, now.Add(-time.Duration(i)*30*time.Second).UnixNano())
		}
	}
	db.write(t, sb.String())

	rule := provisionedRule(t, "vigil-origin-down")
	got := firingAnnotations(t, db, rule, now.Add(time.Second))
	want := map[string]map[string]string{
		"api/edge-a/deep": {
			"summary": "api × edge-a is unhealthy in 3 regions (ap-south, eu-west, us-east): timeout",
			"regions": "ap-south,eu-west,us-east", "cause": "timeout", "error": "context deadline exceeded after 5s",
		},
		"api/edge-b/deep": {
			"summary": "api × edge-b is unhealthy in 2 regions (eu-west, us-east): connect",
			"regions": "eu-west,us-east", "cause": "connect", "error": "connection refused",
		},
		"api/edge-c/deep": {
			"summary": "api × edge-c is unhealthy in 2 regions (eu-west, us-east): dns",
			"regions": "eu-west,us-east", "cause": "dns", "error": "no such host",
		},
	}
	if len(got) != len(want) {
		t.Errorf("firing %v, want %v", got, want)
	}
	for k, w := range want {
		for name, text := range w {
			if got[k][name] != text {
				t.Errorf("%s: annotation %s = %q, want %q", k, name, got[k][name], text)
			}
		}
	}
	labels, _ := rule["labels"].(map[string]any)
	if _, ok := labels["slo"]; ok || labels["rule"] != "down" {
		t.Errorf("vigil-origin-down labels %v: want rule=down and no slo, as VigilCheckDown and the alerter's down alerts", labels)
	}
}
