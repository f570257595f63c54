package alerting

import (
	"strings"
	"testing"
)

// TestPrometheusLiveErrorsPromtool runs the generated live_errors rules
// with `promtool test rules` over proxy metrics: sg-b fails 48% of its
// tries and alerts (condition errors); sg-a is fine; sg-c fails half of
// too few tries (under min_requests); sg-d is held out by the passive
// detector (its return probes fail) and alerts (condition ejected); sg-e
// is out by verdicts only and does not.
func TestPrometheusLiveErrorsPromtool(t *testing.T) {
	cfg := ExampleConfig
	b, err := PrometheusRules(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "- name: 'vigil-live'") {
		t.Fatalf("no vigil-live group in:\n%s", b)
	}
	tries := func(origin, result, values string) string {
		return seriesLine(`vigil_proxy_tries_total{pool="web",origin="`+origin+`",result="`+result+`",instance="p1",job="proxy"}`, values)
	}
	other := func(metric, origin, extra, values string) string {
		return seriesLine(metric+`{pool="web",origin="`+origin+`"`+extra+`,instance="p1",job="proxy"}`, values)
	}
	series := tries("sg-b", "ok", "0+51x20") + tries("sg-b", "status_5xx", "0+47x20") + tries("sg-b", "local", "0+30x20") +
		tries("sg-a", "ok", "0+100x20") + tries("sg-a", "status_5xx", "0x20") +
		tries("sg-c", "ok", "0+5x20") + tries("sg-c", "status_5xx", "0+5x20") +
		other("vigil_proxy_origin_available", "sg-d", "", "1 1 1 0x17") +
		other("vigil_proxy_ejections_total", "sg-d", `,reason="consecutive_5xx"`, "0 0 0 1x17") +
		other("vigil_proxy_return_probes_total", "sg-d", `,result="fail"`, "0 0 0 0+1x17") +
		other("vigil_proxy_origin_available", "sg-e", "", "0x20") +
		other("vigil_proxy_ejections_total", "sg-e", `,reason="verdict"`, "0 1x19") +
		other("vigil_proxy_return_probes_total", "sg-e", `,result="fail"`, "0x20")
	promtoolTest(t, writeRules(t, b), `  - interval: 1m
    input_series:
`+series+`    alert_rule_test:
      - eval_time: 12m
        alertname: VigilLiveTrafficFailing
        exp_alerts:
          - exp_labels: {alertname: VigilLiveTrafficFailing, pool: web, origin: sg-b, condition: errors, rule: live_errors, severity: page, source: prometheus}
            exp_annotations:
              summary: 'pool web origin sg-b: 47.96% of live tries failed over 5m (vigil_proxy_tries_total); compare with its checks: they may pass while users fail'
              status_url: 'http://127.0.0.1:9470/'
          - exp_labels: {alertname: VigilLiveTrafficFailing, pool: web, origin: sg-d, condition: ejected, rule: live_errors, severity: page, source: prometheus}
            exp_annotations:
              summary: 'pool web origin sg-d: out of rotation 100% of the last 5m with the proxy''s passive detector ejecting it (failed tries retried elsewhere); compare with its checks: they may pass while it fails users'
              status_url: 'http://127.0.0.1:9470/'
`)
}

// TestPrometheusLiveErrorsDrained runs the generated live_errors rules
// with `promtool test rules` over origins an operator drained, as the
// built-in rule judges them (LiveFigures): sg-f is drained for maintenance
// and down, so the passive detector ejected it and its return probes fail;
// sg-g was drained with 30 requests in flight, which failed; neither
// fires (both did: a drain paged). sg-h is drained on proxy p1 only,
// while p2 still sends it traffic and fails 48% of it: p2's tries alone
// are judged, and it fires.
func TestPrometheusLiveErrorsDrained(t *testing.T) {
	b, err := PrometheusRules(ExampleConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	on := func(instance, metric, origin, extra, values string) string {
		return seriesLine(metric+`{pool="web",origin="`+origin+`"`+extra+`,instance="`+instance+`",job="proxy"}`, values)
	}
	series := on("p1", "vigil_proxy_origin_available", "sg-f", "", "1 1 1 0x17") +
		on("p1", "vigil_proxy_origin_drained", "sg-f", "", "0 0 0 1x17") +
		on("p1", "vigil_proxy_ejections_total", "sg-f", `,reason="consecutive_5xx"`, "0 0 0 1x17") +
		on("p1", "vigil_proxy_return_probes_total", "sg-f", `,result="fail"`, "0 0 0 0+1x17") +
		on("p1", "vigil_proxy_origin_available", "sg-g", "", "1x9 0x11") +
		on("p1", "vigil_proxy_origin_drained", "sg-g", "", "0x9 1x11") +
		on("p1", "vigil_proxy_tries_total", "sg-g", `,result="ok"`, "0+60x10 600x10") +
		on("p1", "vigil_proxy_tries_total", "sg-g", `,result="status_5xx"`, "0x9 30x11") +
		on("p1", "vigil_proxy_origin_available", "sg-h", "", "0x20") +
		on("p1", "vigil_proxy_origin_drained", "sg-h", "", "1x20") +
		on("p1", "vigil_proxy_tries_total", "sg-h", `,result="ok"`, "0x20") +
		on("p2", "vigil_proxy_origin_available", "sg-h", "", "1x20") +
		on("p2", "vigil_proxy_origin_drained", "sg-h", "", "0x20") +
		on("p2", "vigil_proxy_tries_total", "sg-h", `,result="ok"`, "0+51x20") +
		on("p2", "vigil_proxy_tries_total", "sg-h", `,result="status_5xx"`, "0+47x20")
	promtoolTest(t, writeRules(t, b), `  - interval: 1m
    input_series:
`+series+`    alert_rule_test:
      - eval_time: 12m
        alertname: VigilLiveTrafficFailing
        exp_alerts:
          - exp_labels: {alertname: VigilLiveTrafficFailing, pool: web, origin: sg-h, condition: errors, rule: live_errors, severity: page, source: prometheus}
            exp_annotations:
              summary: 'pool web origin sg-h: 47.96% of live tries failed over 5m (vigil_proxy_tries_total); compare with its checks: they may pass while users fail'
              status_url: 'http://127.0.0.1:9470/'
`)
}
