package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGrafanaCommandOneRegionQuorum: vigil grafana and vigil alerter
// --prometheus-rules give every rule (quorum lost, down, certificate) the
// file's push checks with push.region as checks of quorum 1, as the
// alerter counts them (SetOneRegion); a disabled one is not counted. The
// rules over every check still show every check's count of regions.
func TestGrafanaCommandOneRegionQuorum(t *testing.T) {
	path := writeConfig(t, `
agent: {admin_token: push-token-0123456789, region: eu-west}
targets: [{name: a, url: "http://127.0.0.1:1"}]
store:
  influxdb: {url: "http://127.0.0.1:8086", bucket: vigil/autogen}
alerting: {quorum: 2}
checks:
  - {name: backup, push: {period: 24h, region: eu-west}}
  - {name: old, push: {period: 24h, region: eu-west}, disabled: true}
  - {name: web, targets: [a], interval: 30s, http: {path: /}}
`)
	dir := filepath.Join(t.TempDir(), "grafana")
	out, code := runCLI(t, "grafana", "-c", path, "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	rules, err := os.ReadFile(filepath.Join(dir, "provisioning", "alerting", "vigil-slo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := string(rules)
	if !strings.Contains(r, `quorum: if r.check == "backup" then "its quorum (push.region) is 1" else "alerting.quorum is 2"`) {
		t.Errorf("the quorum-lost rules do not count backup (push.region) with quorum 1")
	}
	if strings.Contains(r, `r.check == "old" then`) {
		t.Errorf("a disabled push check is counted as one region's")
	}
	for _, want := range []string{`title: "Origin down in 2 or more regions (1 for a push check with push.region)"`,
		`title: "Certificate expiring within 14 days or failing in 2 or more regions (1 for a push check with push.region)"`,
		`_value: if r.check == "backup" then 1.0 else 2.0}))`, `expression: "$B >= $R"`} {
		if !strings.Contains(r, want) {
			t.Errorf("the down and certificate rules do not count backup (push.region) with quorum 1: no %q", want)
		}
	}
	// The down and certificate rules judge each check's count against its
	// quorum (B ≥ R) and keep the count: web unhealthy in 1 region shows
	// 1, not 0.
	if strings.Contains(r, "then r._value else 0.0") {
		t.Errorf("a rule over every check zeroes the regions it counted below a check's quorum")
	}
	prom, code := runCLI(t, "alerter", "-c", path, "--prometheus-rules")
	if code != 0 {
		t.Fatalf("--prometheus-rules: exit %d\n%s", code, prom)
	}
	if !strings.Contains(prom, `{{ if eq $labels.check "backup" }}no region reports, its quorum (push.region) is 1{{ else }}`) {
		t.Errorf("VigilQuorumLost does not count backup (push.region) with quorum 1")
	}
	if !strings.Contains(prom, `count by (check, target, tier) (max by (check, target, tier, region) (vigil:verdict_unhealthy{check="backup"}) == 1) >= 1`) ||
		!strings.Contains(prom, `probe_ssl_earliest_cert_expiry{check="backup"}`) {
		t.Errorf("VigilCheckDown and VigilCertificate do not count backup (push.region) with quorum 1")
	}
}
