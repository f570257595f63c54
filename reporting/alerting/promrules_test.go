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

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

const exampleRules = "../../examples/prometheus/vigil-slo-rules.yml"

// TestPrometheusRulesUpToDate fails when the committed example drifts from
// the generator.
func TestPrometheusRulesUpToDate(t *testing.T) {
	got, err := PrometheusRules(ExampleConfig, ExampleSLOs, ExampleChecks...)
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
	b, err := PrometheusRules(Config{Quorum: 3, RunbookURL: "https://rb.example/{rule}/{check}", StatusPageURL: "https://status.example/"}, []SLO{
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
				// Per check × target alerts link the check page narrowed
				// to the target, as the built-in alerter's status_url.
				wantURL := "https://status.example/check/{{ $labels.check }}?target={{ $labels.target | urlquery }}"
				switch {
				case r.Alert == "VigilCanarySilent" || r.Alert == "VigilQuorumLost":
					wantURL = "https://status.example/check/{{ $labels.check }}"
				case r.Alert == "VigilLiveTrafficFailing":
					// About a pool × origin: the overview shows them.
					wantURL = "https://status.example/"
				case g.Name == "vigil-self":
					// About vigil itself, not a check.
					wantURL = ""
					if r.Annotations["description"] == "" {
						t.Errorf("alert %s: no description (runbook text)", r.Alert)
					}
				}
				if r.Annotations["status_url"] != wantURL {
					t.Errorf("alert %s: status_url %q, want %q", r.Alert, r.Annotations["status_url"], wantURL)
				}
				if r.Labels["rule"] == "burn_rate" && r.Annotations["windows"] != map[string]string{"page": "1h/5m,6h/30m", "ticket": "1d/2h,3d/6h"}[r.Labels["severity"]] {
					t.Errorf("alert %s/%s: windows %q, want the built-in alerter's comma-separated list", r.Alert, r.Labels["severity"], r.Annotations["windows"])
				}
			}
			exprs = append(exprs, r.Expr)
		}
	}
	want := map[string]int{"VigilCheckDown/page": 1, "VigilCertificate/ticket": 1, "VigilCanarySilent/ticket": 1, "VigilQuorumLost/page": 1,
		"VigilErrorBudgetBurn/page": 1, "VigilErrorBudgetBurn/ticket": 1, "VigilTTFBSLOBreach/ticket": 1,
		"VigilAlerterNotEvaluating/page": 1, "VigilProxyVerdictSourceDown/ticket": 1, "VigilInfluxPointsDropped/ticket": 1,
		"VigilLiveTrafficFailing/page": 2}
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

// promtool returns the path of promtool (Debian package prometheus, which
// .ci/setup installs): without it the test fails under CI=true and is
// skipped otherwise (checktest.NeedDependency).
func promtool(t *testing.T) string {
	p, err := exec.LookPath("promtool")
	checktest.NeedDependency(t, "promtool (Debian package prometheus)", err)
	return p
}

// promtoolTest runs `promtool test rules` on tests (the YAML list under
// tests:, indented by 2) over the rule file rules, and fails with
// promtool's report when an expectation is not met.
func promtoolTest(t *testing.T, rules, tests string) {
	t.Helper()
	bin := promtool(t)
	abs, err := filepath.Abs(rules)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "test.yml")
	body := "rule_files:\n  - " + abs + "\nevaluation_interval: 1m\ntests:\n" + tests
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "test", "rules", f).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s\ntest file:\n%s", err, out, body)
	}
}

// writeRules writes b to a rule file in a temporary directory.
func writeRules(t *testing.T, b []byte) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
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
func counterValues(n int, inc func(m int) bool) string { return counterValuesBy(n, 1, inc) }

// counterValuesBy is counterValues growing by step: the runs of a check
// run step times a minute.
func counterValuesBy(n, step int, inc func(m int) bool) string {
	var b strings.Builder
	v := 0
	for m := 0; m < n; m++ {
		if m > 0 && inc(m) {
			v += step
		}
		fmt.Fprintf(&b, "%d ", v)
	}
	return strings.TrimSpace(b.String())
}

// TestPrometheusRulesPromtoolTest runs the generated rules on synthetic
// series with `promtool test rules`: two regions failing fire the page
// and ticket burn-rate alerts, one region alone does not, the page resolves
// once its short windows are clean while the ticket keeps firing; two
// regions unhealthy fire VigilCheckDown after for: 1m. asset runs every
// 15 s (ExampleChecks): 4 runs a minute.
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
			counterValuesBy(n, 4, func(m int) bool { return !(fails && failing(m)) }))
		fmt.Fprintf(&series, "      - series: 'vigil_checks_total{%s,result=\"fail\"}'\n        values: '%s'\n", lbl,
			counterValuesBy(n, 4, func(m int) bool { return fails && failing(m) }))
		unhealthy := "0x200"
		if fails {
			unhealthy = "0x100 1x100"
		}
		fmt.Fprintf(&series, "      - series: 'vigil_verdict_state{%s,tier=\"deep\",state=\"unhealthy\"}'\n        values: '%s'\n", lbl, unhealthy)
	}
	page := `
          - exp_labels: {alertname: VigilErrorBudgetBurn, check: asset, target: origin-a, tier: deep, rule: burn_rate, severity: page, slo: asset-availability, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a: error budget of asset-availability (objective 99.9%): fast burn in 2 regions (1h/5m or 6h/30m)'
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-a'
              windows: '1h/5m,6h/30m'`
	ticket := `
          - exp_labels: {alertname: VigilErrorBudgetBurn, check: asset, target: origin-a, tier: deep, rule: burn_rate, severity: ticket, slo: asset-availability, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a: error budget of asset-availability (objective 99.9%): slow burn in 2 regions (1d/2h or 3d/6h)'
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-a'
              windows: '1d/2h,3d/6h'`
	down := `
          - exp_labels: {alertname: VigilCheckDown, check: asset, target: origin-a, tier: deep, rule: down, severity: page, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a down in 2 regions (eu, us; quorum 2)'
              regions: 'eu,us'
              cause: ''
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-a'`
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
	checktest.NeedDependency(t, "amtool (Debian package prometheus-alertmanager)", err)
	if out, err := exec.Command(amtool, "check-config", "../../examples/prometheus/alertmanager.yml").CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
}

// deadManAlert is one generated VigilCanarySilent rule.
type deadManAlert struct{ Interval, For, Expr, Summary string }

// deadManRules returns the generated VigilCanarySilent rules in order.
func deadManRules(t *testing.T, b []byte) []deadManAlert {
	t.Helper()
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert, Expr, For    string
				Labels, Annotations map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b)
	}
	var out []deadManAlert
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Alert == "VigilCanarySilent" {
				out = append(out, deadManAlert{r.Labels["interval"], r.For, r.Expr, r.Annotations["summary"]})
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no VigilCanarySilent rule in\n%s", b)
	}
	return out
}

// TestPrometheusDeadManFor: each distinct check interval gets its own
// dead-man alert (labelled interval) over its checks only, with a window of
// dead_man.intervals × that interval (at least 2m) and the equivalent of
// dead_man.for: the configured value, else 2 × the interval, as the
// built-in rule. Without checks one alert serves every check: a 10m window
// and 2 × 10m / dead_man.intervals.
func TestPrometheusDeadManFor(t *testing.T) {
	type want struct{ interval, hold, window, sel string }
	for _, tc := range []struct {
		name   string
		cfg    Config
		checks []CheckInterval
		want   []want
	}{
		{name: "dead_man.for set", cfg: Config{DeadMan: DeadManRule{For: 3 * time.Minute}},
			checks: []CheckInterval{{Check: "fast", Interval: 30 * time.Second}, {Check: "hourly", Interval: time.Hour}},
			want:   []want{{"30s", "3m", "2m", `{check="fast"}`}, {"1h", "3m", "3h", `{check="hourly"}`}}},
		{name: "2 × each interval", checks: []CheckInterval{{Check: "a", Interval: 5 * time.Second}, {Check: "b", Interval: 90 * time.Second}, {Check: "c", Interval: 30 * time.Second}, {Check: "d", Interval: 5 * time.Second}},
			want: []want{{"5s", "10s", "2m", `{check=~"a|d"}`}, {"30s", "1m", "2m", `{check="c"}`}, {"1m30s", "3m", "4m30s", `{check="b"}`}}},
		{name: "a daily check does not stretch a 5s one", checks: []CheckInterval{{Check: "nightly", Interval: 24 * time.Hour}, {Check: "fast", Interval: 5 * time.Second}},
			want: []want{{"5s", "10s", "2m", `{check="fast"}`}, {"1d", "2d", "3d", `{check="nightly"}`}}},
		{name: "names are quoted as regular expressions", checks: []CheckInterval{{Check: "a.b", Interval: 5 * time.Second}, {Check: "c", Interval: 5 * time.Second}},
			want: []want{{"5s", "10s", "2m", `{check=~"a\\.b|c"}`}}},
		{name: "a check listed twice keeps its longest interval", checks: []CheckInterval{{Check: "a", Interval: 5 * time.Second}, {Check: "a", Interval: time.Minute}},
			want: []want{{"1m", "2m", "3m", `{check="a"}`}}},
		{name: "no checks: 2 × 10m / 3", want: []want{{"", "6m40s", "10m", ""}}},
		{name: "no checks: 2 × 10m / dead_man.intervals 5", cfg: Config{DeadMan: DeadManRule{Intervals: 5}},
			want: []want{{"", "4m", "10m", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := PrometheusRules(tc.cfg, nil, tc.checks...)
			if err != nil {
				t.Fatal(err)
			}
			got := deadManRules(t, b)
			if len(got) != len(tc.want) {
				t.Fatalf("%d VigilCanarySilent rules, want %d:\n%s", len(got), len(tc.want), b)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Interval != w.interval || g.For != w.hold {
					t.Errorf("rule %d: interval %q for %q, want %q and %q", i, g.Interval, g.For, w.interval, w.hold)
				}
				inc := "increase(vigil_checks_total" + w.sel + "[" + w.window + "]) > 0"
				present := "present_over_time(vigil_checks_total{" + strings.TrimSuffix(strings.TrimPrefix(w.sel, "{"), "}")
				if w.sel != "" {
					present += ","
				}
				// A dead canary's series count for dead_man.forget_after
				// (1d), for a daily check twice its window and pending
				// period (DeadManForgetFor: 10d), or it would be forgotten
				// before its alert can fire.
				forget := "1d"
				if w.interval == "1d" {
					forget = "10d"
				}
				present += `result="pass"}[` + forget + `]) unless on (instance, job) (up == 1)`
				for _, s := range []string{inc, present} {
					if !strings.Contains(g.Expr, s) {
						t.Errorf("rule %d: expression lacks %s:\n%s", i, s, g.Expr)
					}
				}
				if want := "for " + w.window + ": "; !strings.Contains(g.Summary, want) {
					t.Errorf("rule %d: summary %q, want it to say %q", i, g.Summary, want)
				}
			}
		})
	}
}

// silentAlert is the expected VigilCanarySilent alert of check in region
// eu from the rule for interval, with the window its summary names.
func silentAlert(check, interval, window string) string {
	return fmt.Sprintf(`
          - exp_labels: {alertname: VigilCanarySilent, check: %s, region: eu, interval: '%s', rule: dead_man, severity: ticket, source: prometheus}
            exp_annotations:
              summary: 'no counted run of check %s in region eu for %s: the canary is silent, or cannot run the check (its own trouble: vigil_check_failures_total{cause=~"agent|browser_unavailable"})'
              status_url: 'http://127.0.0.1:9470/check/%s'`, check, interval, check, window, check)
}

// TestPrometheusDeadManPromtool runs the generated dead-man alerts (asset
// every 30s: window 2m, for 1m; home every 2m: window 6m, for 4m) with
// `promtool test rules`: a canary paused for 8 minutes that then catches
// up sends nothing for home, a counter that stops growing from minute 60
// fires for asset after its 2m window and 1m hold.
func TestPrometheusDeadManPromtool(t *testing.T) {
	b, err := PrometheusRules(ExampleConfig, nil, CheckInterval{Check: "asset", Interval: 30 * time.Second}, CheckInterval{Check: "home", Interval: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	const n = 120 // minutes
	// paused: no run from minute 100 to 108, then the backlog (a counter
	// catching up).
	paused := counterValues(n, func(m int) bool { return m < 100 || m >= 108 })
	// stopped: no run after minute 60.
	stopped := counterValues(n, func(m int) bool { return m <= 60 })
	silent := silentAlert("asset", "30s", "2m")
	// At 111m and 115m only the stopped check fires: the paused one was
	// silent for its 6m window for less than its 4m hold.
	promtoolTest(t, writeRules(t, b), fmt.Sprintf(`  - interval: 1m
    input_series:
      - series: 'vigil_checks_total{check="asset",target="o1",region="eu",result="pass"}'
        values: '%[1]s'
      - series: 'vigil_checks_total{check="home",target="o1",region="eu",result="pass"}'
        values: '%[2]s'
    alert_rule_test:
      - {eval_time: 59m, alertname: VigilCanarySilent, exp_alerts: []}
      - {eval_time: 62m, alertname: VigilCanarySilent, exp_alerts: []}
      - eval_time: 64m
        alertname: VigilCanarySilent
        exp_alerts:%[3]s
      - eval_time: 111m
        alertname: VigilCanarySilent
        exp_alerts:%[3]s
      - eval_time: 115m
        alertname: VigilCanarySilent
        exp_alerts:%[3]s
`, stopped, paused, silent))
}

// TestPrometheusDeadManPerCheckPromtool: a check run every 5s next to a
// nightly one alerts on its own window (2m, for 10s), not the nightly
// check's 3d window and 2d hold; a check the file does not configure is not
// judged.
func TestPrometheusDeadManPerCheckPromtool(t *testing.T) {
	b, err := PrometheusRules(ExampleConfig, nil, CheckInterval{Check: "fast", Interval: 5 * time.Second}, CheckInterval{Check: "nightly", Interval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	promtoolTest(t, writeRules(t, b), `  - interval: 1m
    input_series:
      - series: 'vigil_checks_total{check="fast",target="o1",region="eu",result="pass"}'
        values: '0+12x60 720x60'
      - series: 'vigil_checks_total{check="nightly",target="o1",region="eu",result="pass"}'
        values: '0 1x120'
      - series: 'vigil_checks_total{check="other",target="o1",region="eu",result="pass"}'
        values: '0x120'
    alert_rule_test:
      - {eval_time: 61m, alertname: VigilCanarySilent, exp_alerts: []}
      - eval_time: 64m
        alertname: VigilCanarySilent
        exp_alerts:`+silentAlert("fast", "5s", "2m")+`
      - eval_time: 120m
        alertname: VigilCanarySilent
        exp_alerts:`+silentAlert("fast", "5s", "2m")+`
`)
}

// TestPrometheusRulesOneRegion: a summary counts "1 region", not
// "1 regions" (quorum 1).
func TestPrometheusRulesOneRegion(t *testing.T) {
	cfg := ExampleConfig
	cfg.Quorum = 1
	b, err := PrometheusRules(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	promtoolTest(t, writeRules(t, b), `  - interval: 1m
    input_series:
      - series: 'vigil_verdict_state{check="asset",target="origin-a",tier="deep",region="eu",state="unhealthy"}'
        values: '0x9 1x20'
      - series: 'vigil_verdict_state{check="asset",target="origin-a",tier="deep",region="eu",state="unknown"}'
        values: '0x30'
    alert_rule_test:
      - eval_time: 15m
        alertname: VigilCheckDown
        exp_alerts:
          - exp_labels: {alertname: VigilCheckDown, check: asset, target: origin-a, tier: deep, rule: down, severity: page, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a down in 1 region (eu; quorum 1)'
              regions: 'eu'
              cause: ''
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-a'
`)
}

// TestPrometheusBurnKeepFiringFor runs the generated page burn-rate rule
// with `promtool test rules`: it has keep_firing_for 30m (the longest
// short window of the page pairs, as the built-in rule keeps a 6h/30m page
// firing), so it is still firing 26m after the 30m window came clean and
// resolves after 30m; with burn_rate.keep_firing_for: 0s it resolves at
// once.
func TestPrometheusBurnKeepFiringFor(t *testing.T) {
	const n = 420 // minutes
	failing := func(m int) bool { return m >= 300 && m < 330 }
	lbl := `check="asset",target="origin-a",region="eu"`
	input := fmt.Sprintf("      - series: 'vigil_checks_total{%s,result=\"pass\"}'\n        values: '%s'\n", lbl,
		counterValues(n, func(m int) bool { return !failing(m) })) +
		fmt.Sprintf("      - series: 'vigil_checks_total{%s,result=\"fail\"}'\n        values: '%s'\n", lbl,
			counterValues(n, failing))
	page := `
          - exp_labels: {alertname: VigilErrorBudgetBurn, check: asset, target: origin-a, rule: burn_rate, severity: page, slo: asset-availability, source: prometheus}
            exp_annotations:
              summary: 'asset × origin-a: error budget of asset-availability (objective 99.9%): fast burn in 1 region (1h/5m or 6h/30m)'
              status_url: 'http://127.0.0.1:9470/check/asset?target=origin-a'
              windows: '1h/5m,6h/30m'`
	for _, tc := range []struct {
		name     string
		keepZero bool
		at385    string
	}{
		{"default", false, page},
		{"0s", true, " []"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ExampleConfig
			cfg.Quorum = 1
			cfg.BurnRate.NoTicket = true
			cfg.Down.Disabled, cfg.DeadMan.Disabled, cfg.Cert.Disabled = true, true, true
			if tc.keepZero {
				cfg.SetKeys([]string{"burn_rate.keep_firing_for"})
			}
			b, err := PrometheusRules(cfg, ExampleSLOs[:1])
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(b), "keep_firing_for: 30m\n"); has == tc.keepZero {
				t.Fatalf("keep_firing_for: 30m in the rules: %t, want %t:\n%s", has, !tc.keepZero, b)
			}
			// The last failure is in minute 329: the 30m window is clean
			// from 359m.
			promtoolTest(t, writeRules(t, b), `  - interval: 1m
    input_series:
`+input+`    alert_rule_test:
      - eval_time: 358m
        alertname: VigilErrorBudgetBurn
        exp_alerts:`+page+`
      - eval_time: 385m
        alertname: VigilErrorBudgetBurn
        exp_alerts:`+tc.at385+`
      - {eval_time: 395m, alertname: VigilErrorBudgetBurn, exp_alerts: []}
`)
		})
	}
}
