package alerting

import (
	"strings"
	"testing"
	"time"
)

// TestPrometheusRulesOneRegionQuorum: a push check with push.region is
// judged by that one region (CheckInterval.OneRegion), and the built-in
// alerter needs that region alone for its down, ttfb, burn_rate and
// cert_expiry alerts (SetOneRegion); so do VigilCheckDown,
// VigilCertificate, VigilTTFBSLOBreach and VigilErrorBudgetBurn, with
// alerting.quorum (2) for the other checks. backup (push.region eu) and
// api have the same series, from eu only: unhealthy, failing every run
// (twice a minute), a TTFB of 900 ms (objective 600 ms) and a certificate
// expiring on day 10. Every alert fires for backup, "in 1 region", none for
// api; web, the same in eu and us, still fires VigilCheckDown and
// VigilCertificate "in 2 regions". Without OneRegion nothing fires for
// backup.
func TestPrometheusRulesOneRegionQuorum(t *testing.T) {
	slos := []SLO{
		{Name: "api-availability", Check: "api", Objective: 99.9, Window: 30 * 24 * time.Hour},
		{Name: "api-ttfb", Check: "api", TTFBP95: 600 * time.Millisecond, Window: 5 * time.Minute},
		{Name: "backup-availability", Check: "backup", Objective: 99.9, Window: 30 * 24 * time.Hour},
		{Name: "backup-ttfb", Check: "backup", TTFBP95: 600 * time.Millisecond, Window: 5 * time.Minute},
	}
	checks := []CheckInterval{{Check: "api", Interval: 30 * time.Second}, {Check: "backup", Interval: 30 * time.Second, OneRegion: true},
		{Check: "web", Interval: 30 * time.Second}}

	var in strings.Builder
	for _, cr := range []struct{ check, region string }{{"api", "eu"}, {"backup", "eu"}, {"web", "eu"}, {"web", "us"}} {
		l := `check="` + cr.check + `",target="edge-a",tier="shallow",region="` + cr.region + `",instance="c-` + cr.region + `",job="vigil"`
		c := `check="` + cr.check + `",target="edge-a",region="` + cr.region + `",instance="c-` + cr.region + `",job="vigil"`
		in.WriteString(seriesLine(`vigil_verdict_state{`+l+`,state="unhealthy"}`, "0x9 1x100") +
			seriesLine(`vigil_verdict_state{`+l+`,state="unknown"}`, "0x110") +
			seriesLine(`probe_ssl_earliest_cert_expiry{`+l+`}`, "864000x110") +
			seriesLine(`vigil_ttfb_seconds{`+l+`}`, "0.9x110") +
			seriesLine(`vigil_checks_total{`+c+`,result="fail"}`, "0+2x110") +
			seriesLine(`vigil_checks_total{`+c+`,result="pass"}`, "0x110"))
	}
	in.WriteString(seriesLine(`up{instance="c-eu",job="vigil"}`, "1x110") + seriesLine(`up{instance="c-us",job="vigil"}`, "1x110"))
	status := func(check string) string {
		return "\n              status_url: 'http://127.0.0.1:9470/check/" + check + "?target=edge-a'"
	}
	down := func(check, regions, quorum string) string {
		n := strings.Count(regions, ",") + 1
		s := "s"
		if n == 1 {
			s = ""
		}
		return `
          - exp_labels: {alertname: VigilCheckDown, check: ` + check + `, target: edge-a, tier: shallow, rule: down, severity: page, source: prometheus}
            exp_annotations:
              summary: '` + check + ` × edge-a down in ` + string(rune('0'+n)) + ` region` + s + ` (` + strings.ReplaceAll(regions, ",", ", ") + `; quorum ` + quorum + `): status'
              regions: '` + regions + `'
              cause: 'status'` + status(check)
	}
	cert := func(check, regions string) string {
		return `
          - exp_labels: {alertname: VigilCertificate, check: ` + check + `, target: edge-a, tier: shallow, rule: cert_expiry, severity: ticket, source: prometheus}
            exp_annotations:
              summary: '` + check + ` × edge-a certificate expires within 14 days in ` + regions + `'` + status(check)
	}
	ttfb := `
          - exp_labels: {alertname: VigilTTFBSLOBreach, check: backup, target: edge-a, tier: shallow, rule: ttfb, severity: ticket, slo: backup-ttfb, source: prometheus}
            exp_annotations:
              summary: 'backup × edge-a TTFB p95 over 5m above 600ms in 1 region'` + status("backup")
	burn := func(severity, speed, windows string) string {
		return `
          - exp_labels: {alertname: VigilErrorBudgetBurn, check: backup, target: edge-a, rule: burn_rate, severity: ` + severity + `, slo: backup-availability, source: prometheus}
            exp_annotations:
              summary: 'backup × edge-a: error budget of backup-availability (objective 99.9%): ` + speed + ` burn in 1 region (` +
			strings.ReplaceAll(windows, ",", " or ") + `)'` + status("backup") + `
              windows: '` + windows + `'`
	}
	// The down alerts' cause: every run fails with status.
	for _, r := range []string{"eu", "us"} {
		for _, check := range []string{"api", "backup", "web"} {
			in.WriteString(seriesLine(`vigil_check_failures_total{check="`+check+`",target="edge-a",region="`+r+`",cause="status",instance="c-`+r+`",job="vigil"}`, "0+2x110"))
		}
	}

	b, err := PrometheusRules(ExampleConfig, slos, checks...)
	if err != nil {
		t.Fatal(err)
	}
	series := in.String()
	promtoolTest(t, writeRules(t, b),
		alertTest("down: backup in its one region, web in 2", "VigilCheckDown", series,
			at(9), at(15, down("backup", "eu", "1"), down("web", "eu,us", "2")))+
			alertTest("certificate: backup in its one region, web in 2", "VigilCertificate", series,
				at(70, cert("backup", "1 region"), cert("web", "2 regions")))+
			alertTest("ttfb: backup in its one region", "VigilTTFBSLOBreach", series, at(70, ttfb))+
			alertTest("burn rate: backup in its one region", "VigilErrorBudgetBurn", series,
				at(70, burn("page", "fast", "1h/5m,6h/30m"), burn("ticket", "slow", "1d/2h,3d/6h"))))

	// Without OneRegion backup needs 2 regions, as api: only web fires.
	checks[1].OneRegion = false
	if b, err = PrometheusRules(ExampleConfig, slos, checks...); err != nil {
		t.Fatal(err)
	}
	if r := string(b); strings.Contains(r, `vigil:verdict_unhealthy{check="backup"}`) || strings.Contains(r, `$labels.check "backup"`) {
		t.Errorf("rules without OneRegion checks single out backup")
	}
	promtoolTest(t, writeRules(t, b),
		alertTest("down: web only", "VigilCheckDown", series, at(15, down("web", "eu,us", "2")))+
			alertTest("certificate: web only", "VigilCertificate", series, at(70, cert("web", "2 regions")))+
			alertTest("ttfb: nothing", "VigilTTFBSLOBreach", series, at(70))+
			alertTest("burn rate: nothing", "VigilErrorBudgetBurn", series, at(70)))
}
