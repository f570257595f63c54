package alerting

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const exampleRules = "../../examples/prometheus/vigil-slo-rules.yml"

// TestPrometheusRulesUpToDate fails when the committed example drifts from
// the generator.
func TestPrometheusRulesUpToDate(t *testing.T) {
	got, err := PrometheusRules(ExampleConfig, ExampleSLOs)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(exampleRules)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, have) {
		t.Fatalf("%s is stale: run `go generate ./reporting/alerting`", exampleRules)
	}
}

func TestPrometheusRulesShape(t *testing.T) {
	b, err := PrometheusRules(Config{Quorum: 3, RunbookURL: "https://rb.example/{rule}/{check}"}, []SLO{
		{Name: "api-avail", Check: "api", Target: `we"ird`, Objective: 99.5},
		{Name: "api-ttfb", Check: "api", TTFBP95: 250 * time.Millisecond, Window: 10 * time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Record, Alert, Expr, For string
				Labels, Annotations      map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b)
	}
	alerts := map[string]int{}
	var exprs []string
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts[r.Alert+"/"+r.Labels["severity"]]++
				if r.Labels["rule"] == "" || r.Annotations["summary"] == "" || !strings.HasPrefix(r.Annotations["runbook_url"], "https://rb.example/") {
					t.Errorf("alert %s: labels %v annotations %v", r.Alert, r.Labels, r.Annotations)
				}
			}
			exprs = append(exprs, r.Expr)
		}
	}
	want := map[string]int{"VigilCheckDown/page": 1, "VigilCertificate/ticket": 1, "VigilCanarySilent/ticket": 1,
		"VigilErrorBudgetBurn/page": 1, "VigilErrorBudgetBurn/ticket": 1, "VigilTTFBSLOBreach/ticket": 1}
	if fmt.Sprint(alerts) != fmt.Sprint(want) {
		t.Fatalf("alerts %v, want %v", alerts, want)
	}
	all := strings.Join(exprs, "\n")
	for _, s := range []string{`target="we\"ird"`, `(14.4 * 0.005)`, `>= 3`, `[10m]`, `> 0.25`} {
		if !strings.Contains(all, s) {
			t.Errorf("expressions lack %s:\n%s", s, all)
		}
	}
}

// promtool returns the path of promtool (Debian package prometheus) or
// skips: the rule file's syntax and behaviour are checked with it when
// present.
func promtool(t *testing.T) string {
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skipf("SKIPPING: promtool (Debian package prometheus) not installed: %v", err)
	}
	return p
}

func TestPrometheusRulesPromtoolCheck(t *testing.T) {
	bin := promtool(t)
	out, err := exec.Command(bin, "check", "rules", exampleRules).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// counterValues renders one counter sample per minute for minutes
// [0, n): it grows by 1 in the minutes where inc is true.
func counterValues(n int, inc func(m int) bool) string {
	var b strings.Builder
	v := 0
	for m := 0; m < n; m++ {
		if m > 0 && inc(m) {
			v++
		}
		fmt.Fprintf(&b, "%d ", v)
	}
	return strings.TrimSpace(b.String())
}

// TestPrometheusRulesPromtoolTest runs the generated rules on synthetic
// series with `promtool test rules`: two regions failing fire the page
// and ticket burn-rate alerts, one region alone does not, the page resolves
// once its short windows are clean while the ticket keeps firing; two
// regions unhealthy fire VigilCheckDown after for: 1m.
func TestPrometheusRulesPromtoolTest(t *testing.T) {
	bin := promtool(t)
	rules, err := filepath.Abs(exampleRules)
	if err != nil {
		t.Fatal(err)
	}
	const n = 480 // minutes
	failing := func(m int) bool { return m >= 300 && m < 330 }
	var series strings.Builder
	for _, tr := range []string{"origin-a/eu", "origin-a/us", "origin-a/ap", "origin-b/eu", "origin-b/us", "origin-b/ap"} {
		target, r, _ := strings.Cut(tr, "/")
		// origin-a fails in two regions of three, origin-b in one only.
		fails := tr == "origin-a/eu" || tr == "origin-a/us" || tr == "origin-b/eu"
		lbl := `check="asset",target="` + target + `",region="` + r + `"`
		fmt.Fprintf(&series, "      - series: 'vigil_checks_total{%s,result=\"pass\"}'\n        values: '%s'\n", lbl,
			counterValues(n, func(m int) bool { return !(fails && failing(m)) }))
		fmt.Fprintf(&series, "      - series: 'vigil_checks_total{%s,result=\"fail\"}'\n        values: '%s'\n", lbl,
			counterValues(n, func(m int) bool { return fails && failing(m) }))
		unhealthy := "0x200"
		if fails {
			unhealthy = "0x100 1x100"
		}
		fmt.Fprintf(&series, "      - series: 'vigil_verdict_state{%s,tier=\"deep\",state=\"unhealthy\"}'\n        values: '%s'\n", lbl, unhealthy)
	}
	page := `
          - exp_labels: {alertname: VigilErrorBudgetBurn, check: asset, target: origin-a, rule: burn_rate, severity: page, slo: asset-availability, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a: error budget of asset-availability (objective 99.9%): fast burn in 2 regions (1h/5m or 6h/30m)'
              status_url: 'http://127.0.0.1:9470/check/asset'
              windows: '1h/5m, 6h/30m'`
	ticket := `
          - exp_labels: {alertname: VigilErrorBudgetBurn, check: asset, target: origin-a, rule: burn_rate, severity: ticket, slo: asset-availability, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a: error budget of asset-availability (objective 99.9%): slow burn in 2 regions (1d/2h or 3d/6h)'
              status_url: 'http://127.0.0.1:9470/check/asset'
              windows: '1d/2h, 3d/6h'`
	down := `
          - exp_labels: {alertname: VigilCheckDown, check: asset, target: origin-a, rule: down, severity: page, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a down in 2 regions (quorum 2)'
              status_url: 'http://127.0.0.1:9470/check/asset'`
	test := fmt.Sprintf(`rule_files:
  - %s
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
%s    alert_rule_test:
      - {eval_time: 299m, alertname: VigilErrorBudgetBurn, exp_alerts: []}
      - eval_time: 310m
        alertname: VigilErrorBudgetBurn
        exp_alerts:%s%s
      - eval_time: 400m
        alertname: VigilErrorBudgetBurn
        exp_alerts:%s
      - {eval_time: 100m, alertname: VigilCheckDown, exp_alerts: []}
      - eval_time: 102m
        alertname: VigilCheckDown
        exp_alerts:%s
`, rules, series.String(), page, ticket, ticket, down)
	f := filepath.Join(t.TempDir(), "test.yml")
	if err := os.WriteFile(f, []byte(test), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "test", "rules", f).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// TestExamplePrometheusConfigs checks examples/prometheus/prometheus.yml
// (which loads the rule file) and alertmanager.yml with the upstream tools.
func TestExamplePrometheusConfigs(t *testing.T) {
	bin := promtool(t)
	if out, err := exec.Command(bin, "check", "config", "../../examples/prometheus/prometheus.yml").CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	amtool, err := exec.LookPath("amtool")
	if err != nil {
		t.Skipf("SKIPPING: amtool (Debian package prometheus-alertmanager) not installed: %v", err)
	}
	if out, err := exec.Command(amtool, "check-config", "../../examples/prometheus/alertmanager.yml").CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
}

// deadManRule returns the generated VigilCanarySilent rule's `for` and
// expression.
func deadManRule(t *testing.T, b []byte) (hold, expr string) {
	t.Helper()
	var doc struct {
		Groups []struct {
			Rules []struct{ Alert, Expr, For string }
		}
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b)
	}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Alert == "VigilCanarySilent" {
				return r.For, r.Expr
			}
		}
	}
	t.Fatalf("no VigilCanarySilent rule in\n%s", b)
	return "", ""
}

// TestPrometheusDeadManFor: the generated dead-man alert's window is
// dead_man.intervals × the longest check interval (at least 2m; 10m with no
// intervals known), and it holds the equivalent of dead_man.for: the
// configured value, else 2 × the longest check interval (one rule serves
// every check), else, with no intervals known, 2 × the 10m window /
// dead_man.intervals.
func TestPrometheusDeadManFor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		intervals []time.Duration
		want      string
		window    string
	}{
		{name: "dead_man.for set", cfg: Config{DeadMan: DeadManRule{For: 3 * time.Minute}},
			intervals: []time.Duration{30 * time.Second, time.Hour}, want: "3m", window: "3h"},
		{name: "2 × the longest interval", intervals: []time.Duration{5 * time.Second, 90 * time.Second, 30 * time.Second},
			want: "3m", window: "4m30s"},
		{name: "one interval", intervals: []time.Duration{30 * time.Second}, want: "1m", window: "2m"},
		{name: "no intervals: 2 × 10m / 3", want: "6m40s", window: "10m"},
		{name: "no intervals: 2 × 10m / dead_man.intervals 5", cfg: Config{DeadMan: DeadManRule{Intervals: 5}}, want: "4m", window: "10m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := PrometheusRules(tc.cfg, nil, tc.intervals...)
			if err != nil {
				t.Fatal(err)
			}
			hold, expr := deadManRule(t, b)
			if hold != tc.want {
				t.Errorf("for: %q, want %q", hold, tc.want)
			}
			if want := "sum by (check, region) (increase(vigil_checks_total[" + tc.window + "])) == 0"; expr != want {
				t.Errorf("expr %q, want %q", expr, want)
			}
		})
	}
}

// TestPrometheusDeadManPromtool runs the generated dead-man alert (checks
// every 30s and 2m: window 3 × 2m = 6m, for 4m) with `promtool test rules`:
// a canary paused for 8 minutes that then catches up sends nothing, one
// silent from minute 60 fires only after the 6m window and the 4m hold.
func TestPrometheusDeadManPromtool(t *testing.T) {
	bin := promtool(t)
	b, err := PrometheusRules(ExampleConfig, nil, 30*time.Second, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if hold, _ := deadManRule(t, b); hold != "4m" {
		t.Fatalf("for: %q, want 4m", hold)
	}
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rules, b, 0o600); err != nil {
		t.Fatal(err)
	}
	const n = 120 // minutes
	// paused: no run from minute 100 to 108, then the backlog (a counter
	// catching up).
	paused := counterValues(n, func(m int) bool { return m < 100 || m >= 108 })
	// stopped: no run after minute 60.
	stopped := counterValues(n, func(m int) bool { return m <= 60 })
	silent := `
          - exp_labels: {alertname: VigilCanarySilent, check: asset, region: eu, rule: dead_man, severity: ticket, source: prometheus}
            exp_annotations:
              summary: 'no run of check asset in region eu for 6m'
              status_url: 'http://127.0.0.1:9470/check/asset'`
	test := fmt.Sprintf(`rule_files:
  - %[1]s
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'vigil_checks_total{check="asset",target="o1",region="eu",result="pass"}'
        values: '%[2]s'
      - series: 'vigil_checks_total{check="home",target="o1",region="eu",result="pass"}'
        values: '%[3]s'
    alert_rule_test:
      - {eval_time: 59m, alertname: VigilCanarySilent, exp_alerts: []}
      - {eval_time: 68m, alertname: VigilCanarySilent, exp_alerts: []}
      - eval_time: 76m
        alertname: VigilCanarySilent
        exp_alerts:%[4]s
      - eval_time: 111m
        alertname: VigilCanarySilent
        exp_alerts:%[4]s
      - eval_time: 115m
        alertname: VigilCanarySilent
        exp_alerts:%[4]s
`, rules, stopped, paused, silent)
	// At 111m and 115m only the stopped check fires: the paused one was
	// silent for its 6m window for less than the 4m hold.
	f := filepath.Join(dir, "test.yml")
	if err := os.WriteFile(f, []byte(test), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "test", "rules", f).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
