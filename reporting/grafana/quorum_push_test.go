package grafana

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// TestRulesOneRegionQuorum: a push check with push.region is judged by
// that one region, and vigil's alerter needs that region alone for its
// down, ttfb, burn_rate and cert_expiry alerts whatever alerting.quorum
// says (Alerter.SetOneRegion); so do the Grafana rules for the checks with
// OneRegion in Options.Checks, with the quorum (2) for the others. backup
// (push.region eu-west) and api have the same verdicts, from eu-west only,
// for the last 10 minutes: unhealthy, failing every run, a TTFB of 900 ms
// and a certificate expiring in 5 days. Every rule fires for backup, "in 1
// region", and for api none does (one region of quorum 2); web, the same
// in eu-west and us-east, still fires the rules over every check "in 2
// regions". Without OneRegion none fires for backup either. The same holds for the default
// rules over every check and for the rules of a config's SLOs over each
// check.
func TestRulesOneRegionQuorum(t *testing.T) {
	db, now, cfg := startQuorumInflux(t)
	var slos []vigilalerting.SLO
	for _, c := range []string{"api", "backup"} {
		slos = append(slos, vigilalerting.SLO{Name: c + "-availability", Check: c, Objective: units.Percent(99.9)},
			vigilalerting.SLO{Name: c + "-ttfb", Check: c, TTFBP95: 600 * time.Millisecond, Window: 10 * time.Minute})
	}
	for i := range slos {
		if err := slos[i].ValidateAndSetDefaults(); err != nil {
			t.Fatal(err)
		}
	}
	checks := func(one bool) []vigilalerting.CheckInterval {
		return []vigilalerting.CheckInterval{{Check: "api", Interval: 30 * time.Second},
			{Check: "backup", Interval: 30 * time.Second, OneRegion: one}}
	}
	const (
		down  = "backup × edge-a is unhealthy in 1 region (eu-west): status"
		cert  = "backup × edge-a certificate expires within 14 days or fails verification in 1 region"
		ttfb  = "backup × edge-a TTFB p95 over 10 minutes above 600 ms in 1 region"
		burn  = "backup × edge-a burns its error budget above 14.4x over 1h and 5m in 1 region"
		sttfb = "backup × edge-a: backup-ttfb: TTFB p95 over 10 minutes above 600 ms in 1 region"
		sburn = "backup × edge-a: error budget of backup-availability (objective 99.9%) burns above 14.4x over 1h and 5m in 1 region"
	)
	for _, tt := range []struct {
		name string
		o    Options
		want map[string]string // rule uid → the summary firing for backup
	}{
		{"default rules", Options{Checks: checks(true)}, map[string]string{"vigil-origin-down": down, "vigil-certificate": cert,
			"vigil-ttfb-p95": ttfb, "vigil-availability-burn": burn}},
		{"from a config", Options{Alerting: &cfg, SLOs: slos, Checks: checks(true)}, map[string]string{"vigil-origin-down": down,
			"vigil-certificate": cert, "vigil-ttfb-backup-ttfb": sttfb, "vigil-burn-1h-backup-availability": sburn,
			"vigil-ttfb-api-ttfb": "", "vigil-burn-1h-api-availability": ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := tt.o.AlertRules()
			if err != nil {
				t.Fatal(err)
			}
			for uid, summary := range tt.want {
				rule := ruleOf(t, raw, uid)
				got := firing(t, db, rule, now.Add(time.Second))
				want := map[string]string{}
				key := func(check string) string { return quorumSeries(uid, check) }
				if summary != "" {
					want[key("backup")] = summary
				}
				if !strings.Contains(uid, "api") && !strings.Contains(uid, "backup") {
					// A rule over every check: web, unhealthy in 2
					// regions, still needs the quorum and has it.
					want[key("web")] = strings.Replace(strings.ReplaceAll(summary, "backup", "web"), "1 region (eu-west)", "2 regions (eu-west, us-east)", 1)
					want[key("web")] = strings.Replace(want[key("web")], "in 1 region", "in 2 regions", 1)
				}
				if !maps.Equal(got, want) {
					t.Errorf("%s: firing %v, want %v", uid, got, want)
				}
				title, _ := rule["title"].(string)
				ann, _ := rule["annotations"].(map[string]any)
				desc, _ := ann["description"].(string)
				switch {
				case summary == "":
					if strings.Contains(title+desc, "push.region") {
						t.Errorf("%s: title %q, description %q: want no word of push.region for api", uid, title, desc)
					}
				case strings.Contains(uid, "backup"):
					if !strings.HasSuffix(title, "in its one region (push.region)") || !strings.Contains(desc, "its quorum is 1") {
						t.Errorf("%s: title %q, description %q: want them to say its quorum is its one region", uid, title, desc)
					}
				default:
					if !strings.HasSuffix(title, "in 2 or more regions (1 for a push check with push.region)") || !strings.Contains(desc, "(backup)") {
						t.Errorf("%s: title %q, description %q: want them to say backup needs 1 region", uid, title, desc)
					}
				}
			}
		})
	}

	// Without OneRegion, backup needs 2 regions as api does: nothing
	// fires for it.
	for _, o := range []Options{{Checks: checks(false)}, {Alerting: &cfg, SLOs: slos, Checks: checks(false)}} {
		raw, err := o.AlertRules()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "push.region") {
			t.Errorf("rules without OneRegion checks mention push.region")
		}
		for _, r := range rulesOf(t, raw) {
			uid, _ := r["uid"].(string)
			if strings.Contains(uid, "dead-man") || strings.Contains(uid, "quorum-lost") || strings.Contains(uid, "live") {
				continue
			}
			for k := range firing(t, db, r, now.Add(time.Second)) {
				if !strings.HasPrefix(k, "web/") {
					t.Errorf("without OneRegion: %s fires for %s", uid, k)
				}
			}
		}
	}
}

// startQuorumInflux starts an InfluxDB holding the verdicts of the quorum
// tests: api, backup and web × edge-a unhealthy (status 503), failing
// every run for the last 10 minutes, a TTFB of 900 ms and a certificate
// expiring in 5 days, from eu-west, web from us-east too; with now, the
// time they were written against, and an alerting config of quorum 2.
func startQuorumInflux(t *testing.T) (*influxd, time.Time, vigilalerting.Config) {
	t.Helper()
	db := startInfluxd(t)
	now := time.Now()
	var vs []reporting.Verdict
	for _, cr := range []struct{ check, region string }{{"api", "eu-west"}, {"backup", "eu-west"}, {"web", "eu-west"}, {"web", "us-east"}} {
		for i := 0; i < 20; i++ {
			vs = append(vs, reporting.Verdict{Check: cr.check, Target: "edge-a", Region: cr.region, Vantage: cr.region + "-1", Tier: "shallow",
				State: reporting.StateUnhealthy, Cause: "status", Err: "status 503", TTFB: 900 * time.Millisecond,
				Duration: 910 * time.Millisecond, Interval: 30 * time.Second, CertExpiry: now.Add(5 * 24 * time.Hour),
				At: now.Add(-time.Duration(i)*30*time.Second - time.Second)})
		}
	}
	publish(t, db, vs, nil)

	cfg := vigilalerting.Config{Quorum: 2}
	cfg.SetKeys([]string{"quorum"})
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	return db, now, cfg
}

// quorumSeries is the series of check × edge-a in the results of the rule
// uid: check/target/tier, check/target for burn rate.
func quorumSeries(uid, check string) string {
	if strings.Contains(uid, "burn") {
		return check + "/edge-a"
	}
	return check + "/edge-a/shallow"
}
