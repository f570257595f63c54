package grafana

import (
	"fmt"
	"strings"
	"testing"
	"time"

	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// TestBurnFloorUsesConfiguredInterval: the burn-rate rules generated for
// checks with their intervals floor a window's runs at window ÷ the
// check's configured interval, as the Prometheus rules do, not at the
// interval_ms of the region's newest run. Both checks run
// every 30 s by the config, over a young store, in two regions:
//
//   - api's runs say 60 s (a pair slowed by adaptive): 1 failed run of 12
//     is 1/120 over the hour at the configured 30 s (8.3x, no page); the
//     runs' 60 s would make it 1/60 (16.7x) and page;
//   - web's runs say 10 s (a canary still on an older config): 3 failed of
//     15 is 3/120 (25x) at 30 s and pages; the runs' 10 s would make it
//     3/360 (8.3x) and page nobody.
//
// The rules generated without the checks keep the runs' interval_ms.
func TestBurnFloorUsesConfiguredInterval(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	var sb strings.Builder
	write := func(check string, runs int, every, ivMS time.Duration, failed func(i int) bool) {
		for i := 0; i < runs; i++ {
			at := now.Add(-time.Duration(runs-i) * every)
			for _, region := range []string{"eu-west", "us-east"} {
				ok := !failed(i)
				fmt.Fprintf(&sb, "vigil_verdict,check=%s,region=%s,target=edge-a,tier=shallow,vantage=%s-1 ok=%t,cause=%q,state=\"healthy\",interval_ms=%d %d\n",
					check, region, region, ok, map[bool]string{true: "", false: "status"}[ok], ivMS.Milliseconds(), at.UnixNano())
			}
		}
	}
	write("api", 12, time.Minute, time.Minute, func(i int) bool { return i == 10 })
	write("web", 15, 30*time.Second, 10*time.Second, func(i int) bool { return i >= 12 })
	db.write(t, sb.String())

	checks := []vigilalerting.CheckInterval{{Check: "api", Interval: 30 * time.Second}, {Check: "web", Interval: 30 * time.Second}}
	eval := now.Add(time.Second)
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"configured intervals", Options{Checks: checks}, "map[web/edge-a:web × edge-a burns its error budget above 14.4x over 1h and 5m in 2 regions]"},
		{"no checks: the runs' interval_ms", Options{}, "map[api/edge-a:api × edge-a burns its error budget above 14.4x over 1h and 5m in 2 regions]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := tt.o.AlertRules()
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(firing(t, db, ruleOf(t, raw, "vigil-availability-burn"), eval)); got != tt.want {
				t.Errorf("firing %s, want %s", got, tt.want)
			}
		})
	}

	// An SLO's rules, generated from a config, floor at its check's
	// interval too.
	cfg := vigilalerting.Config{Quorum: 2}
	cfg.SetKeys([]string{"quorum"})
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	for _, check := range []string{"api", "web"} {
		slo := vigilalerting.SLO{Name: check + "-availability", Check: check, Objective: 99.9}
		if err := slo.ValidateAndSetDefaults(); err != nil {
			t.Fatal(err)
		}
		raw, err := Options{Alerting: &cfg, SLOs: []vigilalerting.SLO{slo}, Checks: checks}.AlertRules()
		if err != nil {
			t.Fatal(err)
		}
		got := firing(t, db, ruleOf(t, raw, "vigil-burn-1h-"+check+"-availability"), eval)
		if fires := len(got) > 0; fires != (check == "web") {
			t.Errorf("SLO of %s: firing %v, want it to fire for web only", check, got)
		}
	}
}
