package main

import (
	"regexp"
	"testing"
)

// TestPrometheusRulesBurnTier: the generated burn-rate alerts carry the
// tier of their SLO's check from the file (its counters have no tier
// label); a check without tier: takes its kind's default (http: deep).
func TestPrometheusRulesBurnTier(t *testing.T) {
	path := writeConfig(t, `
targets: [{name: a, url: "http://127.0.0.1:1"}]
checks:
  - {name: hz, tier: shallow, targets: [a], http: {path: /healthz}}
  - {name: asset, targets: [a], http: {path: /asset}}
slos:
  - {name: hz-availability, check: hz, objective: 99.9%}
  - {name: asset-availability, check: asset, objective: 99.9%}
alerting: {burn_rate: {no_ticket: true}}
`)
	out, code := runCLI(t, "alerter", "-c", path, "--prometheus-rules")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	re := regexp.MustCompile(`slo: '([\w-]+)'\n\s+source: 'prometheus'\n\s+tier: '(\w+)'`)
	var got []string
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1]+"="+m[2])
	}
	if len(got) != 2 || got[0] != "hz-availability=shallow" || got[1] != "asset-availability=deep" {
		t.Fatalf("burn-rate alerts' tier labels: %v, want [hz-availability=shallow asset-availability=deep]\n%s", got, out)
	}
}
