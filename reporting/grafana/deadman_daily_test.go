package grafana

import (
	"fmt"
	"strings"
	"testing"
	"time"

	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// TestDeadManRuleDailyCheck evaluates the dead-man rule of a check run
// once a day in a real InfluxDB 1.8. Its window (3 × 1d) and pending
// period (2d) are past dead_man.forget_after (24h), so the query reads
// twice their sum (10 days, alerting.DeadManForgetFor, as the alerter
// forgets the pair): nightly silent for 4 days in eu-west fires, with its
// age in whole seconds; us-east, whose newest verdict is a day old, does
// not; ap-south, silent for 11 days, is forgotten.
func TestDeadManRuleDailyCheck(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	const day = 24 * time.Hour
	var sb strings.Builder
	for _, n := range []struct {
		region string
		ago    time.Duration
	}{{"eu-west", 4 * day}, {"us-east", day}, {"ap-south", 11 * day}} {
		for i := 0; i < 3; i++ { // the newest verdict and the two days before
			at := now.Add(-n.ago - time.Duration(i)*day)
			fmt.Fprintf(&sb, "vigil_verdict,check=nightly,region=%s,target=edge-a,tier=deep,vantage=%s-1 ok=true,state=\"healthy\",ttfb_ms=80 %d\n",
				n.region, n.region, at.UnixNano())
		}
	}
	db.write(t, sb.String())

	cfg := vigilalerting.Config{}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	raw, err := Options{Alerting: &cfg, Checks: []vigilalerting.CheckInterval{{Check: "nightly", Interval: day}}}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	rule := ruleOf(t, raw, "vigil-dead-man-1d")
	// 1.25 s past the whole seconds: the summary rounds the age.
	got := firing(t, db, rule, now.Add(1250*time.Millisecond))
	want := map[string]string{"nightly/eu-west": "no verdict of check nightly in region eu-west for 345601 s (more than 72h)"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("vigil-dead-man-1d firing %v, want %v", got, want)
	}
	if th := threshold(t, rule); th != 3*86400 || rule["for"] != "2d" {
		t.Errorf("threshold %v s, for %v; want 259200 (3 × 1d) and 2d", th, rule["for"])
	}
	if from := ruleRange(t, rule, "A"); from != 10*86400 {
		t.Errorf("query range %d s, want 864000 (10 days: twice the 3d window and 2d pending period, past forget_after 24h)", from)
	}
	if !strings.Contains(fmt.Sprint(rule["annotations"]), "A region silent for 10d is forgotten") {
		t.Errorf("annotations %v: want the 10 days a region is remembered", rule["annotations"])
	}
}

// ruleRange is the relative range (seconds before now) of a rule's query.
func ruleRange(t *testing.T, rule map[string]any, ref string) int {
	t.Helper()
	for _, d := range rule["data"].([]any) {
		q := d.(map[string]any)
		if q["refId"] == ref {
			from, _ := q["relativeTimeRange"].(map[string]any)["from"].(int)
			return from
		}
	}
	t.Fatalf("rule %v: no query %s", rule["uid"], ref)
	return 0
}
