package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestObjectiveFlags: -quorum, -ttfb-p95 and -objective set the rules'
// quorum and objectives and the dashboards' thresholds.
func TestObjectiveFlags(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	alerts := filepath.Join(dir, "a.yaml")
	if code := cli([]string{"-out", filepath.Join(dir, "d"), "-alerts", alerts, "-quorum", "3", "-ttfb-p95", "250ms", "-objective", "99.5%"}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	raw, err := os.ReadFile(alerts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"TTFB p95 above 250 ms in 3 or more regions", "Origin down in 3 or more regions", "of a 99.5% availability SLO"} {
		if !strings.Contains(string(raw), s) {
			t.Errorf("alert rules lack %q", s)
		}
	}
	board, err := os.ReadFile(filepath.Join(dir, "d", "overview.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(board), `"value": 99.5`) || !strings.Contains(string(board), `"value": 250`) {
		t.Error("overview thresholds are not 99.5 % and 250 ms")
	}
}

// TestDatasourceFlags: -datasource-uid and -bucket point every generated
// dashboard and alert rule at the user's own InfluxDB datasource; a uid
// Grafana would refuse is an error naming the flag, and nothing is written.
func TestDatasourceFlags(t *testing.T) {
	dir := t.TempDir()
	out, alerts := filepath.Join(dir, "dashboards"), filepath.Join(dir, "alerting", "vigil-slo.yaml")
	var stderr bytes.Buffer
	if code := cli([]string{"-out", out, "-alerts", alerts, "-datasource-uid", "influx_prod-1", "-bucket", "telemetry/autogen"}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(out, "*.json"))
	files = append(files, alerts)
	if len(files) != 4 {
		t.Fatalf("wrote %v", files)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(raw)
		if strings.Contains(s, "vigil-influxdb") || strings.Contains(s, "vigil/autogen") || !strings.Contains(s, `"influx_prod-1"`) || !strings.Contains(s, "telemetry/autogen") {
			t.Errorf("%s does not point at datasource influx_prod-1 and bucket telemetry/autogen", f)
		}
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-datasource-uid", "prod.influx"}, `gen: -datasource-uid: datasource uid "prod.influx": not a Grafana datasource uid: "." is not a letter, digit, - or _`},
		{[]string{"-datasource-uid", strings.Repeat("x", 41)}, "at most 40"},
		{[]string{"-bucket", `a"b`}, `gen: -bucket: bucket "a\"b": not usable as the bucket`},
		{[]string{"-bucket", ""}, `gen: -bucket: bucket "": not usable as the bucket: empty`},
		{[]string{"-bucket", " "}, `gen: -bucket: bucket " ": not usable as the bucket: blank`},
		{[]string{"-datasource-uid", ""}, `gen: -datasource-uid: datasource uid "": not a Grafana datasource uid: empty`},
		{[]string{"-quorum", "0"}, "gen: -quorum: 0: at least 1 region"},
		{[]string{"-ttfb-p95", "0s"}, "gen: -ttfb-p95: 0s: at least 1ms"},
		{[]string{"-objective", "100%"}, "gen: -objective: 100%: above 0% and below 100%"},
		{[]string{"-objective", "lots"}, `invalid value "lots" for flag -objective`},
	} {
		dir := t.TempDir()
		var stderr bytes.Buffer
		args := append([]string{"-out", filepath.Join(dir, "d"), "-alerts", filepath.Join(dir, "a.yaml")}, tt.args...)
		if code := cli(args, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", tt.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: stderr %q, want %q", tt.args, stderr.String(), tt.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v: wrote %v", tt.args, entries)
		}
	}
}
