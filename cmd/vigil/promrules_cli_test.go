package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestPrometheusRulesDeadManForFromChecks: vigil alerter --prometheus-rules
// gives the generated dead-man rule a for: of 2 × the longest interval of
// the file's checks, as the built-in dead_man waits 2 intervals.
func TestPrometheusRulesDeadManForFromChecks(t *testing.T) {
	path := writeConfig(t, `
targets: [{name: a, url: "http://127.0.0.1:1"}]
checks:
  - {name: up, targets: [a], interval: 30s, http: {path: /}}
  - {name: hourly, targets: [a], interval: 5m, http: {path: /}}
slos:
  - {name: up, check: up, objective: 99.9%}
alerting: {}
`)
	out, code := runCLI(t, "alerter", "-c", path, "--prometheus-rules")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	m := regexp.MustCompile(`alert: VigilCanarySilent\n(?:.*\n)*?\s+for: (\S+)`).FindStringSubmatch(out)
	if m == nil || m[1] != "10m" {
		t.Fatalf("VigilCanarySilent for: %v, want 10m (2 × the 5m interval)\n%s", m, out)
	}
	if !strings.Contains(out, "increase(vigil_checks_total[15m])) == 0") {
		t.Errorf("VigilCanarySilent window: want 15m (dead_man.intervals 3 × the 5m interval)\n%s", out)
	}
}
