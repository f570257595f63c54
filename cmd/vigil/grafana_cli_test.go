package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const grafanaConfig = `
targets: [{name: a, url: "http://127.0.0.1:1"}]
store:
  influxdb: {url: "http://127.0.0.1:8086", bucket: telemetry/autogen}
checks:
  - {name: asset, tier: deep, targets: [a], interval: 15s, http: {path: /asset}}
  - {name: hz, tier: shallow, targets: [a], interval: 5s, http: {path: /healthz}}
slos:
  - {name: asset-availability, check: asset, objective: 99.5%}
  - {name: asset-ttfb, check: asset, ttfb_p95: 250ms, window: 10m}
alerting:
  quorum: 3
  burn_rate: {min_runs: 40}
  receivers:
    - {name: ops, webhook: {url: "http://127.0.0.1:9/hook", headers: {authorization: "Bearer ${GRAFANA_TEST_UNSET_TOKEN}"}}}
`

// grafanaTree lists the files under dir, relative, sorted.
func grafanaTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	sort := slices.Sorted(slices.Values(out))
	return sort
}

// TestGrafanaCommandFromConfig: vigil grafana -c FILE --out DIR writes the
// dashboards, their provider and the alert rules for the file: the
// quorum, SLOs, min_runs and bucket of the file, one dead-man rule per
// check interval, and burn-rate rules with the windows and severities of
// vigil alerter --prometheus-rules for the same file. A receiver's unset
// secret is no error (the rules hold none). Flags override the file.
func TestGrafanaCommandFromConfig(t *testing.T) {
	path := writeConfig(t, grafanaConfig)
	dir := filepath.Join(t.TempDir(), "grafana")
	out, code := runCLI(t, "grafana", "-c", path, "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	want := []string{"dashboards/check.json", "dashboards/overview.json", "dashboards/proxy.json",
		"provisioning/alerting/vigil-slo.yaml", "provisioning/dashboards/vigil.yaml"}
	if got := grafanaTree(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("wrote %v, want %v (no temporary file left)", got, want)
	}
	if !strings.Contains(out, "wrote "+filepath.Join(dir, "provisioning", "alerting", "vigil-slo.yaml")) {
		t.Errorf("output does not list the files:\n%s", out)
	}
	rules, err := os.ReadFile(filepath.Join(dir, "provisioning", "alerting", "vigil-slo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := string(rules)
	uids := regexp.MustCompile(`(?m)^      - uid: "([^"]+)"`).FindAllStringSubmatch(r, -1)
	var got []string
	for _, m := range uids {
		got = append(got, m[1])
	}
	wantUIDs := []string{"vigil-origin-down", "vigil-certificate", "vigil-burn-1h-asset-availability", "vigil-burn-6h-asset-availability",
		"vigil-burn-1d-asset-availability", "vigil-burn-3d-asset-availability", "vigil-ttfb-asset-ttfb",
		"vigil-dead-man-5s", "vigil-dead-man-15s", "vigil-quorum-lost-5s", "vigil-quorum-lost-15s", "vigil-live-errors"}
	if strings.Join(got, " ") != strings.Join(wantUIDs, " ") {
		t.Errorf("rules %v, want %v", got, wantUIDs)
	}
	for _, s := range []string{
		"Origin down in 3 or more regions",
		`from(bucket: "telemetry/autogen")`,
		"r.runs >= 40.0",              // burn_rate.min_runs
		`r.check == "asset")`,         // the SLO's check only
		"r.p95 > 250.0",               // its ttfb_p95
		"of a 99.5% availability SLO", // its objective
		`r.check == "hz")`,            // the 5s dead-man rule's check
	} {
		if !strings.Contains(r, s) {
			t.Errorf("alert rules lack %q", s)
		}
	}
	board, err := os.ReadFile(filepath.Join(dir, "dashboards", "overview.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(board), `"value": 99.5`) || !strings.Contains(string(board), `"value": 250`) || !strings.Contains(string(board), "telemetry/autogen") {
		t.Error("overview: thresholds not 99.5 % and 250 ms, or $bucket not telemetry/autogen")
	}

	// Windows and severities as the Prometheus rules of the same file.
	prom, code := runCLI(t, "alerter", "-c", path, "--prometheus-rules")
	if code != 0 {
		t.Fatalf("--prometheus-rules: exit %d\n%s", code, prom)
	}
	promWindows := regexp.MustCompile(`severity: '(\w+)'\n(?:.*\n)*?\s+windows: '([^']+)'`).FindAllStringSubmatch(prom, -1)
	var pw []string
	for _, m := range promWindows {
		pw = append(pw, m[1]+" "+m[2])
	}
	gw := map[string][]string{}
	for _, m := range regexp.MustCompile(`(?s)windows: "([^"]+)".*?severity: "(\w+)"`).FindAllStringSubmatch(r, -1) {
		gw[m[2]] = append(gw[m[2]], m[1])
	}
	var gws []string
	for _, sev := range []string{"page", "ticket"} {
		gws = append(gws, sev+" "+strings.Join(gw[sev], ","))
	}
	if strings.Join(pw, "; ") != strings.Join(gws, "; ") {
		t.Errorf("burn-rate windows per severity: grafana %v, prometheus %v", gws, pw)
	}

	// Flags override the file; a second run replaces the files.
	out, code = runCLI(t, "grafana", "-c", path, "--out", dir, "--quorum", "2", "--objective", "99.9%", "--ttfb-p95", "400ms",
		"--min-runs", "5", "--bucket", "other/autogen", "--datasource-uid", "P951FEA4DE68E13C5")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	rules, _ = os.ReadFile(filepath.Join(dir, "provisioning", "alerting", "vigil-slo.yaml"))
	r = string(rules)
	for _, s := range []string{"Origin down in 2 or more regions", `from(bucket: "other/autogen")`, "r.runs >= 5.0",
		"r.p95 > 400.0", "of a 99.9% availability SLO", `datasourceUid: "P951FEA4DE68E13C5"`} {
		if !strings.Contains(r, s) {
			t.Errorf("with flags, alert rules lack %q", s)
		}
	}
	if strings.Contains(r, "telemetry/autogen") || strings.Contains(r, "vigil-influxdb") {
		t.Error("with flags, the rules still read telemetry/autogen or vigil-influxdb")
	}
	if got := grafanaTree(t, dir); len(got) != len(want) {
		t.Errorf("after a second run: %v", got)
	}
}

// TestGrafanaCommandBadInput: a bad flag or config exits 2 with an error
// naming the flag or key and writes nothing: neither a new directory nor a
// change to files already there. An empty --bucket or --datasource-uid is
// an error, not the default.
func TestGrafanaCommandBadInput(t *testing.T) {
	good := writeConfig(t, grafanaConfig)
	badCfg := writeConfig(t, strings.Replace(grafanaConfig, "quorum: 3", "quorum: 0", 1))
	badBucket := writeConfig(t, strings.Replace(grafanaConfig, "bucket: telemetry/autogen", `bucket: "tele$metry"`, 1))
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no out", []string{"-c", good}, "--out: required"},
		{"quorum", []string{"-c", good, "--quorum", "0"}, "--quorum: 0: at least 1 region"},
		{"min runs", []string{"-c", good, "--min-runs", "0"}, "--min-runs: 0: at least 1 run"},
		{"ttfb", []string{"-c", good, "--ttfb-p95", "0s"}, "--ttfb-p95: 0s: at least 1ms"},
		{"objective", []string{"-c", good, "--objective", "100%"}, `--objective: "100%": want a percentage above 0% and below 100%`},
		{"objective text", []string{"-c", good, "--objective", "lots"}, `--objective: "lots"`},
		{"bucket flag", []string{"-c", good, "--bucket", `a"b`}, `--bucket: bucket "a\"b": not usable as the bucket`},
		{"bucket in file", []string{"-c", badBucket}, `store.influxdb.bucket: bucket "tele$metry": not usable as the bucket`},
		{"datasource uid", []string{"-c", good, "--datasource-uid", "prod.influx"}, `--datasource-uid: datasource uid "prod.influx": not a Grafana datasource uid`},
		{"bucket empty", []string{"-c", good, "--bucket", ""}, `--bucket: bucket "": not usable as the bucket: empty`},
		{"bucket blank", []string{"-c", good, "--bucket", " "}, `--bucket: bucket " ": not usable as the bucket: blank`},
		{"datasource uid empty", []string{"-c", good, "--datasource-uid", ""}, `--datasource-uid: datasource uid "": not a Grafana datasource uid: empty`},
		{"config", []string{"-c", badCfg}, "alerting.quorum"},
		{"missing config", []string{"-c", filepath.Join(t.TempDir(), "nope.yaml")}, "nope.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			out := filepath.Join(parent, "grafana")
			args := append([]string{"grafana"}, tt.args...)
			if tt.name != "no out" {
				args = append(args, "--out", out)
			}
			got, code := runCLI(t, args...)
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s", code, got)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("output %q, want %q", got, tt.want)
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 0 {
				t.Errorf("wrote %v", entries)
			}
		})
	}

	// Files already there stay as they were.
	dir := t.TempDir()
	if out, code := runCLI(t, "grafana", "-c", good, "--out", dir); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "provisioning", "alerting", "vigil-slo.yaml"))
	if _, code := runCLI(t, "grafana", "-c", badCfg, "--out", dir); code != 2 {
		t.Fatalf("bad config: exit %d, want 2", code)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "provisioning", "alerting", "vigil-slo.yaml"))
	if string(before) != string(after) || len(after) == 0 {
		t.Error("a refused run changed the rules already written")
	}
}

// TestGrafanaCommandWriteError: an --out that cannot be written (a
// regular file) is exit 1, naming the path, and leaves no temporary file.
func TestGrafanaCommandWriteError(t *testing.T) {
	good := writeConfig(t, grafanaConfig)
	parent := t.TempDir()
	out := filepath.Join(parent, "file")
	if err := os.WriteFile(out, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, code := runCLI(t, "grafana", "-c", good, "--out", out)
	if code != 1 || !strings.Contains(got, out) {
		t.Errorf("exit %d, output %q: want 1 naming %s", code, got, out)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("left %v", entries)
	}
}

// TestGrafanaCommandWithoutInfluxDB: a file without store.influxdb gets
// its files and a warning that they read an InfluxDB the file does not
// write (the embedded store is not Grafana's); the rules file names the
// command that wrote it, and with quorum 1 the origin-down rule does not
// claim several regions agreed.
func TestGrafanaCommandWithoutInfluxDB(t *testing.T) {
	path := writeConfig(t, `
targets: [{name: a, url: "http://127.0.0.1:1"}]
checks: [{name: hz, targets: [a], interval: 5s, http: {path: /healthz}}]
alerting: {quorum: 1}
`)
	dir := filepath.Join(t.TempDir(), "grafana")
	out, code := runCLI(t, "grafana", "-c", path, "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "warning: "+path+": no store.influxdb: the dashboards and rules read InfluxDB") {
		t.Errorf("no warning about the missing store.influxdb:\n%s", out)
	}
	rules, err := os.ReadFile(filepath.Join(dir, "provisioning", "alerting", "vigil-slo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(rules), "\n"); first != "# Generated by vigil grafana -c "+path+"; edit that file and run it again rather than this one." {
		t.Errorf("rules file starts %q", first)
	}
	if strings.Contains(string(rules), "several regions") || !strings.Contains(string(rules), "quorum 1: one region") {
		t.Errorf("the origin-down rule's description does not fit quorum 1:\n%s", rules)
	}

	// With store.influxdb, no warning.
	out, code = runCLI(t, "grafana", "-c", writeConfig(t, grafanaConfig), "--out", filepath.Join(t.TempDir(), "g"))
	if code != 0 || strings.Contains(out, "warning") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}
