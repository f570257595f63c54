package grafana

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// TestQuorumLostOneRegionChecks: a push check with push.region is judged
// by that one region, and vigil's alerter counts its quorum as 1
// (Alerter.SetOneRegion); so do the Grafana quorum-lost rules for the
// checks with OneRegion in Options.Checks, with quorum 2 for the others. backup
// (push.region eu-west) reports from eu-west, and us-east, which judged
// it before push.region was set, went silent 20 minutes ago: its one
// region reports, nothing is lost. nightly's one region (us-east) is
// silent: it fires, in the alerter's words for it ("its quorum
// (push.region) is 1", "until us-east reports again"). api, an ordinary
// check, reports from eu-west only: it still needs 2 regions and fires.
func TestQuorumLostOneRegionChecks(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	newest := []struct {
		check, region string
		ago           time.Duration
	}{
		{"backup", "eu-west", time.Minute}, {"backup", "us-east", 20 * time.Minute},
		{"nightly", "us-east", 15 * time.Minute},
		{"api", "eu-west", time.Minute}, {"api", "us-east", 15 * time.Minute}, {"api", "ap-south", 20 * time.Minute},
	}
	var vs []reporting.Verdict
	for _, n := range newest {
		for i := 0; i < 3; i++ {
			vs = append(vs, reporting.Verdict{Check: n.check, Target: "edge-a", Region: n.region, Vantage: n.region + "-1", Tier: "shallow",
				State: reporting.StateHealthy, OK: true, Interval: 30 * time.Second, At: now.Add(-n.ago - time.Duration(i)*30*time.Second)})
		}
	}
	publish(t, db, vs, nil)
	const blind = "down, ttfb, burn_rate and cert_expiry alerts for "
	want := map[string]string{
		"api":     "api: only 1 region (eu-west) reports, alerting.quorum is 2: " + blind + "api cannot fire until 1 of ap-south, us-east reports again",
		"nightly": "nightly: no region reports, its quorum (push.region) is 1: " + blind + "nightly cannot fire until us-east reports again",
	}

	cfg := vigilalerting.Config{Quorum: 2}
	cfg.SetKeys([]string{"quorum"})
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	var checks []vigilalerting.CheckInterval
	for _, c := range []string{"api", "backup", "nightly"} {
		checks = append(checks, vigilalerting.CheckInterval{Check: c, Interval: 30 * time.Second, OneRegion: c != "api"})
	}
	for _, tt := range []struct {
		name, uid string
		o         Options
	}{
		{"default rules", "vigil-quorum-lost-30s", Options{Checks: checks}},
		{"from a config", "vigil-quorum-lost-30s", Options{Alerting: &cfg, Checks: checks}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := tt.o.AlertRules()
			if err != nil {
				t.Fatal(err)
			}
			rule := ruleOf(t, raw, tt.uid)
			if title, _ := rule["title"].(string); !strings.Contains(title, "fewer than 2 regions (1 for a push check with push.region)") {
				t.Errorf("title %q: want it to say push checks with push.region need 1 region", title)
			}
			ann := firingAnnotations(t, db, rule, now.Add(time.Second))
			got := map[string]string{}
			for k, a := range ann {
				got[k] = a["summary"]
			}
			if !maps.Equal(got, want) {
				t.Errorf("firing:\n%v\nwant:\n%v", got, want)
			}
			if ann["nightly"]["regions"] != "us-east" {
				t.Errorf("nightly regions annotation %q, want us-east", ann["nightly"]["regions"])
			}
		})
	}

	// Without OneRegion every check needs the quorum: backup fires.
	for i := range checks {
		checks[i].OneRegion = false
	}
	raw, err := Options{Checks: checks}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	got := firing(t, db, ruleOf(t, raw, "vigil-quorum-lost-30s"), now.Add(time.Second))
	if _, ok := got["backup"]; !ok || len(got) != 3 {
		t.Errorf("without OneRegion: firing %v, want api, backup and nightly", got)
	}
}
