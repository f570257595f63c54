package alerting

import (
	"fmt"
	"strings"
	"testing"
)

// Missing data in the generated Prometheus rules: a canary that dies (its
// `up` drops to 0, or its target leaves service discovery) has its series
// marked stale, so `increase()` and the current verdicts return nothing for
// it. These tests run the committed example rules with `promtool test
// rules` over such series: the dead-man alert fires for the dead canary,
// and a firing down or certificate alert keeps firing on the region's last
// judging value until dead_man.forget_after (24h) — loss of data is not a
// recovery — while a canary that says "healthy" again, or one that is
// scraped and no longer runs the pair, resolves it.

// canary is one scraped canary process in a test: its instance label, its
// region and the values of its `up` series ("" for none: the target left
// service discovery).
type canary struct{ instance, region, up string }

// seriesLine is one input series of a promtool test.
func seriesLine(series, values string) string {
	return fmt.Sprintf("      - series: '%s'\n        values: '%s'\n", series, values)
}

// upLine is the canary's `up` series, if any.
func (c canary) upLine() string {
	if c.up == "" {
		return ""
	}
	return seriesLine(`up{instance="`+c.instance+`",job="vigil"}`, c.up)
}

// labels are the canary's labels for check × target.
func (c canary) labels(check, target, tier string) string {
	return fmt.Sprintf(`check="%s",target="%s",tier="%s",region="%s",instance="%s",job="vigil"`, check, target, tier, c.region, c.instance)
}

// verdicts are the canary's vigil_verdict_state series for asset ×
// origin-a (unhealthy and unknown; healthy and degraded do not matter to
// the rules), and its `up`.
func (c canary) verdicts(unhealthy, unknown string) string {
	l := c.labels("asset", "origin-a", "deep")
	return seriesLine(`vigil_verdict_state{`+l+`,state="unhealthy"}`, unhealthy) +
		seriesLine(`vigil_verdict_state{`+l+`,state="unknown"}`, unknown) + c.upLine()
}

// checksTotal is the canary's vigil_checks_total{result="pass"} for asset
// (every 15s in the example rules: a 2m window, for: 30s), and its `up`.
func (c canary) checksTotal(values string) string {
	return seriesLine(`vigil_checks_total{check="asset",target="origin-a",region="`+c.region+`",result="pass",instance="`+c.instance+`",job="vigil"}`, values) +
		c.upLine()
}

// alertTest is one promtool test: input series and alert expectations
// ({eval_time, exp_alerts}) for alertname.
func alertTest(name, alertname, series string, evals ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  # %s\n  - interval: 1m\n    input_series:\n%s    alert_rule_test:\n", name, series)
	for _, e := range evals {
		fmt.Fprintf(&b, "      - alertname: %s\n%s", alertname, e)
	}
	return b.String()
}

// at expects alerts (each an exp_alerts item, or none) at minute m.
func at(m int, alerts ...string) string {
	if len(alerts) == 0 {
		return fmt.Sprintf("        eval_time: %dm\n        exp_alerts: []\n", m)
	}
	return fmt.Sprintf("        eval_time: %dm\n        exp_alerts:%s\n", m, strings.Join(alerts, ""))
}

// TestPrometheusDeadManStaleCanary: the example's VigilCanarySilent fires
// for a region × check whose series went stale — the canary died, its host
// is down or left service discovery — as it does for a counter that stops
// growing, until dead_man.forget_after (24h) after the last sample; a
// series that vanished from a canary still scraped (`up` 1: the check left
// its config) is not silence.
func TestPrometheusDeadManStaleCanary(t *testing.T) {
	silent := silentAlert("asset", "15s", "2m")
	tests := alertTest("stale series, no up series (the target's labels differ or it left discovery)", "VigilCanarySilent",
		seriesLine(`vigil_checks_total{check="asset",target="origin-a",region="eu",result="pass"}`, "0+2x60 stale"),
		at(60), at(75, silent), at(100, silent)) +
		alertTest("the canary died: up 0", "VigilCanarySilent",
			canary{"c1", "eu", "1x60 0x100"}.checksTotal("0+2x60 stale"),
			at(60), at(64, silent), at(100, silent)) +
		alertTest("the canary's host left service discovery: up stale too", "VigilCanarySilent",
			canary{"c1", "eu", "1x60 stale"}.checksTotal("0+2x60 stale"),
			at(60), at(75, silent)) +
		alertTest("a live canary's counter stops growing", "VigilCanarySilent",
			canary{"c1", "eu", "1x160"}.checksTotal("0+2x60 120x100"),
			at(60), at(64, silent), at(100, silent)) +
		alertTest("the check left a live canary's config: up 1, series gone", "VigilCanarySilent",
			canary{"c1", "eu", "1x160"}.checksTotal("0+2x60 stale"),
			at(62), at(75), at(100)) +
		alertTest("a dead canary is forgotten after dead_man.forget_after", "VigilCanarySilent",
			canary{"c1", "eu", "1x60 0x1500"}.checksTotal("0+2x60 stale"),
			at(1490, silent), at(1510))
	promtoolTest(t, exampleRules, tests)
}

// downAlert is the example's VigilCheckDown for asset × origin-a in eu
// and us, without failures counted (no cause).
func downAlert(n int) string {
	return fmt.Sprintf(`
          - exp_labels: {alertname: VigilCheckDown, check: asset, target: origin-a, tier: deep, rule: down, severity: page, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a down in %d regions (eu, us; quorum 2)'
              regions: 'eu,us'
              cause: ''
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-a'`, n)
}

// TestPrometheusDownSaysRegionsAndCause: VigilCheckDown's summary and
// annotations name the regions it counts and the most common failure cause
// among them, as vigil's alerter and the Grafana rule do (was: "asset ×
// origin-a down in 2 regions (quorum 2)", no regions, no cause). ap fails
// more often, with another cause, but is healthy: it is neither listed nor
// its cause taken. When eu's canary dies, eu is still listed (held on its
// last verdict, as the alert counts it).
func TestPrometheusDownSaysRegionsAndCause(t *testing.T) {
	failures := func(c canary, cause, values string) string {
		return seriesLine(`vigil_check_failures_total{check="asset",target="origin-a",region="`+c.region+`",cause="`+cause+`",instance="`+c.instance+`",job="vigil"}`, values)
	}
	eu, us, ap := canary{"c1", "eu", "1x60 0x60"}, canary{"c2", "us", "1x120"}, canary{"c3", "ap-south", "1x120"}
	series := eu.verdicts("0x29 1x30 stale", "0x60 stale") + failures(eu, "timeout", "0x29 1+4x30 stale") +
		failures(eu, "status", "0x29 0+1x30 stale") +
		us.verdicts("0x29 1x90", "0x120") + failures(us, "timeout", "0x29 1+4x90") +
		ap.verdicts("0x120", "0x120") + failures(ap, "dns", "0+20x120") +
		failures(canary{"c2", "us", ""}, "agent", "0x29 1+40x90")
	firing := func(summary, regions, cause string) string {
		return `
          - exp_labels: {alertname: VigilCheckDown, check: asset, target: origin-a, tier: deep, rule: down, severity: page, source: prometheus}
            exp_annotations:
              summary: '` + summary + `'
              regions: '` + regions + `'
              cause: '` + cause + `'
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-a'`
	}
	promtoolTest(t, exampleRules, alertTest("eu and us fail with timeouts, ap is healthy", "VigilCheckDown", series,
		at(29),
		at(40, firing("asset × origin-a down in 2 regions (eu, us; quorum 2): timeout", "eu,us", "timeout")),
		at(70, firing("asset × origin-a down in 2 regions (eu, us; quorum 2): timeout", "eu,us", "timeout"))))
}

// TestPrometheusDownHeldOverMissingData: VigilCheckDown (quorum 2 of eu and
// us, unhealthy from minute 30) keeps firing when eu's canary dies at
// minute 61, or its verdict expires, on eu's last judging verdict — until
// dead_man.forget_after (24h) after it; it resolves when eu's canary comes
// back and says healthy, or stops exporting the pair while scraped (the
// pair left its config). Missing data never starts the alert.
func TestPrometheusDownHeldOverMissingData(t *testing.T) {
	us := canary{"c2", "us", "1x1600"}.verdicts("0x29 1x1570", "0x1600")
	tests := alertTest("eu's canary dies while the alert fires", "VigilCheckDown",
		canary{"c1", "eu", "1x60 0x1540"}.verdicts("0x29 1x30 stale", "0x60 stale")+us,
		at(29), at(35, downAlert(2)), at(62, downAlert(2)), at(100, downAlert(2)), at(1490, downAlert(2)), at(1510)) +
		alertTest("eu's canary comes back and says healthy", "VigilCheckDown",
			canary{"c1", "eu", "1x60 0x58 1x100"}.verdicts("0x29 1x30 stale _x58 0x100", "0x60 stale _x58 0x100")+us,
			at(100, downAlert(2)), at(122)) +
		alertTest("eu's verdict expires (unknown) on a live canary", "VigilCheckDown",
			canary{"c1", "eu", "1x200"}.verdicts("0x29 1x30 0x100", "0x60 1x100")+us,
			at(62, downAlert(2)), at(150, downAlert(2))) +
		alertTest("the pair leaves eu's config: scraped, series gone", "VigilCheckDown",
			canary{"c1", "eu", "1x200"}.verdicts("0x29 1x30 stale", "0x60 stale")+us,
			at(35, downAlert(2)), at(62)) +
		alertTest("a dead canary's last verdict does not start an alert", "VigilCheckDown",
			canary{"c1", "eu", "1x40 0x100"}.verdicts("0x29 1x10 stale", "0x40 stale")+
				canary{"c2", "us", "1x140"}.verdicts("0x59 1x80", "0x140"),
			at(35), at(70), at(100))
	promtoolTest(t, exampleRules, tests)
}

// TestPrometheusCertHeldOverMissingData: VigilCertificate (a certificate
// expiring on day 10, within cert_expiry_days 14, in eu and us; for: 1h)
// keeps firing when eu's canary dies at minute 91.
func TestPrometheusCertHeldOverMissingData(t *testing.T) {
	cert := func(c canary, values string) string {
		return seriesLine(`probe_ssl_earliest_cert_expiry{`+c.labels("tls", "origin-a", "shallow")+`}`, values) + c.upLine()
	}
	firing := `
          - exp_labels: {alertname: VigilCertificate, check: tls, target: origin-a, tier: shallow, rule: cert_expiry, severity: ticket, source: prometheus}
            exp_annotations:
              summary: 'tls × origin-a certificate expires within 14 days in 2 regions'
              status_url: 'http://127.0.0.1:9470/check/tls?target=origin-a'`
	promtoolTest(t, exampleRules, alertTest("eu's canary dies while the alert fires", "VigilCertificate",
		cert(canary{"c1", "eu", "1x90 0x200"}, "864000x90 stale")+cert(canary{"c2", "us", "1x300"}, "864000x300"),
		at(59), at(62, firing), at(120, firing), at(250, firing)))
}
