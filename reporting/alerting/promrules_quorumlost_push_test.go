package alerting

import (
	"strings"
	"testing"
	"time"
)

// TestPrometheusQuorumLostOneRegion: a push check with push.region is
// judged by that one region (CheckInterval.OneRegion), and VigilQuorumLost
// counts its quorum as 1, as the built-in alerter does (SetOneRegion),
// with alerting.quorum (2) for the other checks. Every check runs every
// 15 s; the us canary dies at minute 60. asset, judged in eu and us, loses
// its quorum and pages. backup (push.region eu) was judged in us too
// before push.region was set: eu still reports it, nothing is lost.
// nightly (push.region us) has no region left and pages, saying its quorum
// is 1. Without OneRegion, backup pages too.
func TestPrometheusQuorumLostOneRegion(t *testing.T) {
	checks := []CheckInterval{{Check: "asset", Interval: 15 * time.Second, Tier: "deep"},
		{Check: "backup", Interval: 15 * time.Second, OneRegion: true}, {Check: "nightly", Interval: 15 * time.Second, OneRegion: true}}
	series := func(check, region, instance, values string) string {
		return seriesLine(`vigil_checks_total{check="`+check+`",target="`+check+`",region="`+region+`",result="pass",instance="`+instance+`",job="vigil"}`, values)
	}
	const alive, dies = "0+4x200", "0+4x60 stale"
	in := seriesLine(`up{instance="c1",job="vigil"}`, "1x200") + seriesLine(`up{instance="c2",job="vigil"}`, "1x60 0x140") +
		series("asset", "eu", "c1", alive) + series("asset", "us", "c2", dies) +
		series("backup", "eu", "c1", alive) + series("backup", "us", "c2", dies) +
		series("nightly", "us", "c2", dies)
	alert := func(check, summary string) string {
		return `
          - exp_labels: {alertname: VigilQuorumLost, check: ` + check + `, interval: 15s, rule: quorum_lost, severity: page, source: prometheus}
            exp_annotations:
              summary: '` + summary + `'
              status_url: 'http://127.0.0.1:9470/check/` + check + `'`
	}
	const blind = ", 1 silent: down, ttfb, burn_rate and cert_expiry alerts for "
	asset := alert("asset", "asset: fewer regions report than alerting.quorum (2)"+blind+"asset cannot fire until they report again")
	nightly := alert("nightly", "nightly: no region reports, its quorum (push.region) is 1"+blind+"nightly cannot fire until they report again")

	b, err := PrometheusRules(ExampleConfig, nil, checks...)
	if err != nil {
		t.Fatal(err)
	}
	promtoolTest(t, writeRules(t, b), alertTest("push.region checks have a quorum of 1", "VigilQuorumLost", in,
		at(59), at(64, asset, nightly)))

	// Without OneRegion every check needs alerting.quorum: backup pages.
	for i := range checks {
		checks[i].OneRegion = false
	}
	if b, err = PrometheusRules(ExampleConfig, nil, checks...); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "push.region") {
		t.Errorf("rules without OneRegion checks mention push.region")
	}
	promtoolTest(t, writeRules(t, b), alertTest("every check with alerting.quorum", "VigilQuorumLost", in,
		at(64, asset,
			alert("backup", "backup: fewer regions report than alerting.quorum (2)"+blind+"backup cannot fire until they report again"),
			alert("nightly", "nightly: fewer regions report than alerting.quorum (2)"+blind+"nightly cannot fire until they report again"))))
}
