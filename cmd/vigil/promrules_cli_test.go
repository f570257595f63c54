package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestPrometheusRulesDeadManForFromChecks: vigil alerter --prometheus-rules
// writes one dead-man rule per interval of the file's enabled checks, over
// those checks only, each with a window of dead_man.intervals × its
// interval (at least 2m) and a for: of 2 × its interval, as the built-in
// dead_man rule waits; a disabled check gets none.
func TestPrometheusRulesDeadManForFromChecks(t *testing.T) {
	path := writeConfig(t, `
targets: [{name: a, url: "http://127.0.0.1:1"}]
checks:
  - {name: up, targets: [a], interval: 30s, http: {path: /}}
  - {name: hourly, targets: [a], interval: 5m, http: {path: /}}
  - {name: off, targets: [a], interval: 1m, disabled: true, http: {path: /}}
slos:
  - {name: up, check: up, objective: 99.9%}
alerting: {}
`)
	out, code := runCLI(t, "alerter", "-c", path, "--prometheus-rules")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	re := regexp.MustCompile(`alert: VigilCanarySilent\n(?:.*\n)*?.*\(increase\((vigil_checks_total\{[^}]*\}\[\w+\])\) > 0\)\n\s+for: (\S+)\n\s+labels:\n\s+interval: '(\S+)'`)
	var got []string
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		got = append(got, m[3]+" "+m[1]+" for "+m[2])
	}
	want := []string{`30s vigil_checks_total{check="up"}[2m] for 1m`, `5m vigil_checks_total{check="hourly"}[15m] for 10m`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("VigilCanarySilent rules (interval, window, for):\n%s\nwant:\n%s\n\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), out)
	}
}
