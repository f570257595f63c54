package grafana

import (
	"maps"
	"strings"
	"testing"
	"time"

	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// TestRulesOverEveryCheckCountRegionsBelowQuorum: a rule over every check
// whose checks' quorums differ (backup, a push check with push.region,
// has 1; the others alerting.quorum, 2) still shows, for every check ×
// target, the regions it counted (its B), also below the quorum, as the
// same rule does for a file without such a check: api, unhealthy, failing
// every run, slow and with a certificate expiring in 5 days in eu-west
// alone, shows 1 region and does not fire; backup, the same in its one
// region, shows 1 and fires; web, the same in eu-west and us-east, shows 2
// and fires. Evaluated in a real InfluxDB 1.8, for the default rules over
// every check (down, certificate, TTFB, burn rate) and for the rules of a
// config without SLOs (down and certificate, as vigil grafana writes
// them).
func TestRulesOverEveryCheckCountRegionsBelowQuorum(t *testing.T) {
	db, now, cfg := startQuorumInflux(t)
	checks := func(one bool) []vigilalerting.CheckInterval {
		return []vigilalerting.CheckInterval{{Check: "api", Interval: 30 * time.Second},
			{Check: "backup", Interval: time.Minute, OneRegion: one}, {Check: "web", Interval: 30 * time.Second}}
	}
	everyCheck := []string{"vigil-origin-down", "vigil-certificate", "vigil-ttfb-p95", "vigil-availability-burn"}
	for _, tt := range []struct {
		name   string
		o      Options
		uids   []string
		firing []string // checks
	}{
		{"default rules", Options{Checks: checks(true)}, everyCheck, []string{"backup", "web"}},
		{"from a config", Options{Alerting: &cfg, Checks: checks(true)}, everyCheck[:2], []string{"backup", "web"}},
		{"no push check", Options{Checks: checks(false)}, everyCheck, []string{"web"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := tt.o.AlertRules()
			if err != nil {
				t.Fatal(err)
			}
			for _, uid := range tt.uids {
				rule := ruleOf(t, raw, uid)
				key := func(check string) string { return quorumSeries(uid, check) }
				values := evalRule(t, db, rule, now.Add(time.Second))
				got := map[string]float64{}
				for k, p := range values["B"] {
					got[k] = p.value
				}
				want := map[string]float64{key("api"): 1, key("backup"): 1, key("web"): 2}
				if !maps.Equal(got, want) {
					t.Errorf("%s: regions counted (B) %v, want %v", uid, got, want)
				}
				fired := firing(t, db, rule, now.Add(time.Second))
				wantFiring := map[string]bool{}
				for _, c := range tt.firing {
					wantFiring[key(c)] = true
				}
				for k := range fired {
					if !wantFiring[k] {
						t.Errorf("%s fires for %s: %s", uid, k, fired[k])
					}
				}
				for k := range wantFiring {
					if _, ok := fired[k]; !ok {
						t.Errorf("%s does not fire for %s (firing: %v)", uid, k, fired)
					}
				}
				if s := fired[key("backup")]; tt.name != "no push check" && !strings.Contains(s, "in 1 region") {
					t.Errorf("%s: backup's summary %q: want in 1 region", uid, s)
				}
			}
		})
	}
}
