package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/alerting"
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

// TestPrometheusRulesDeadManCronLongestGap: a cron check's dead-man rule
// counts the longest gap between its runs, so a weekdays-only check gets a
// window of dead_man.intervals × 72h (the weekend) whichever day the rules
// are generated, rather than 24h (Monday to Thursday) or 72h (Friday).
func TestPrometheusRulesDeadManCronLongestGap(t *testing.T) {
	path := writeConfig(t, `
targets: [{name: a, url: "http://127.0.0.1:1"}]
checks:
  - {name: daily, targets: [a], cron: "0 9 * * 1-5", http: {path: /}}
alerting: {}
`)
	re := regexp.MustCompile(`(vigil_checks_total\{check="daily"\}\[\w+\])\) > 0\)\n\s+for: (\S+)\n\s+labels:\n\s+interval: '(\S+)'`)
	const want = `vigil_checks_total{check="daily"}[9d] for 6d interval 3d`
	rule := func(out string) string {
		t.Helper()
		m := re.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no VigilCanarySilent rule for check daily in:\n%s", out)
		}
		return m[1] + " for " + m[2] + " interval " + m[3]
	}
	out, code := runCLI(t, "alerter", "-c", path, "--prometheus-rules")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if got := rule(out); got != want {
		t.Fatalf("vigil alerter --prometheus-rules today: %s, want %s", got, want)
	}
	f, err := loadConfig(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	// Monday 2 November 2026 to Sunday 8 November, before and after 09:00.
	for day := 2; day <= 8; day++ {
		for _, hour := range []int{8, 10} {
			now := time.Date(2026, 11, day, hour, 0, 0, 0, time.UTC)
			b, err := alerting.PrometheusRules(f.Alerting, f.SLOs, f.deadManChecks(now)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := rule(string(b)); got != want {
				t.Fatalf("generated on %s: %s, want %s", now.Format("Monday 15:04"), got, want)
			}
		}
	}
}
