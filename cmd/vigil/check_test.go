package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// runCLI runs the vigil command line in-process and returns stdout and the exit code.
func runCLI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.Execute()
	code := 0
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
			if ee.err != nil {
				errb.WriteString(ee.err.Error())
			}
		} else {
			code = 2
			errb.WriteString(err.Error())
		}
	}
	if errb.Len() > 0 {
		t.Logf("stderr: %s", errb.String())
	}
	return out.String() + errb.String(), code
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vigil.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckCommand(t *testing.T) {
	good := checktest.NewOrigin()
	defer good.Close()
	bad := checktest.NewOrigin(checktest.WithMode(checktest.ModeCorrupt))
	defer bad.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
targets:
  - {name: good, url: %s}
  - {name: bad, url: %s}
checks:
  - name: asset
    targets: [good, bad]
    http: {path: /asset.bin}
    expect:
      status: 200
      checksum: "sha256:%s"
      headers: {Access-Control-Allow-Origin: present}
`, good.URL(), bad.URL(), checktest.AssetSHA256()))

	out, code := runCLI(t, "check", "-c", cfg, "--json")
	if code != 1 {
		t.Fatalf("exit code %d, want 1 (one target corrupt)\n%s", code, out)
	}
	var rows []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		rows = append(rows, m)
	}
	if len(rows) != 2 {
		t.Fatalf("want 2 JSON objects, got %d:\n%s", len(rows), out)
	}
	for _, key := range []string{"check", "target", "ok", "cause", "status_code", "ttfb_ms", "duration_ms", "phases", "assertions"} {
		if _, ok := rows[0][key]; !ok {
			t.Errorf("JSON object lacks %q: %v", key, rows[0])
		}
	}
	if rows[0]["proto"] != "HTTP/1.1" {
		t.Errorf("proto = %v, want HTTP/1.1", rows[0]["proto"])
	}
	phases := rows[0]["phases"].(map[string]any)
	for _, key := range []string{"dns_ms", "connect_ms", "tls_ms", "ttfb_ms", "transfer_ms"} {
		if _, ok := phases[key]; !ok {
			t.Errorf("phases lack %q", key)
		}
	}
	byTarget := map[string]map[string]any{}
	for _, r := range rows {
		byTarget[r["target"].(string)] = r
	}
	if byTarget["good"]["ok"] != true || byTarget["good"]["cause"] != "" {
		t.Errorf("good origin: %v", byTarget["good"])
	}
	if byTarget["bad"]["ok"] != false || byTarget["bad"]["cause"] != "checksum" {
		t.Errorf("corrupt origin: want cause checksum, got %v", byTarget["bad"])
	}
	if byTarget["good"]["ttfb_ms"].(float64) <= 0 {
		t.Errorf("ttfb_ms not measured: %v", byTarget["good"]["ttfb_ms"])
	}

	// Table output and JUnit.
	junit := filepath.Join(t.TempDir(), "junit.xml")
	out, code = runCLI(t, "check", "-c", cfg, "--junit", junit)
	if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "checksum") || !strings.Contains(out, "2 runs (1 check × 2 targets), 1 passed, 1 failed") {
		t.Errorf("table output (exit %d):\n%s", code, out)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("junit: %v\n%s", err, b)
	}
	if doc.Tests != 2 || doc.Failures != 1 || len(doc.Suites) != 1 || doc.Suites[0].Cases[1].Failure == nil {
		t.Errorf("junit: %+v", doc)
	}
	// time="" is rejected by some JUnit readers: the suite time is the sum of its cases.
	if len(doc.Suites) == 1 {
		suite, err := strconv.ParseFloat(doc.Suites[0].Time, 64)
		var sum float64
		for _, c := range doc.Suites[0].Cases {
			ct, cerr := strconv.ParseFloat(c.Time, 64)
			if cerr != nil {
				t.Errorf("testcase time %q: %v", c.Time, cerr)
			}
			sum += ct
		}
		// Local checks can take under 0.5 ms each: "0.000" is a valid time.
		if err != nil || suite < 0 || math.Abs(suite-sum) > 0.0021 {
			t.Errorf("testsuite time %q, testcases sum to %.3f", doc.Suites[0].Time, sum)
		}
	}

	// Only the healthy target: exit 0.
	bad.SetMode(checktest.ModeOK)
	if out, code = runCLI(t, "check", "-c", cfg, "--check", "asset"); code != 0 {
		t.Errorf("all healthy: exit %d\n%s", code, out)
	}
}

func TestValidateCommand(t *testing.T) {
	// The quickstart's alerting has no receiver yet (receivers: []): ok,
	// and that warning only.
	want := "ok\nwarning: ../../examples/quickstart.yaml:152: alerting.receivers: none: alerts fire on the status page and GET /api/v1/alerts only and notify nobody; add a webhook, slack, pagerduty or alertmanager receiver"
	if out, code := runCLI(t, "validate", "-c", "../../examples/quickstart.yaml"); code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("quickstart: exit %d: %s\nwant:\n%s", code, out, want)
	}
	out, code := runCLI(t, "validate", "-c", "testdata/invalid-unknown-key.yaml")
	if code != 2 || !strings.Contains(out, "checks[2].expect.statuss: unknown key") {
		t.Errorf("invalid: exit %d: %s", code, out)
	}
	if _, code := runCLI(t, "check", "-c", "testdata/invalid-unknown-target.yaml"); code != 2 {
		t.Errorf("check with bad config: exit %d, want 2", code)
	}
}

// TestValidateRunsCompile: what vigil check rejects at compile time, validate
// rejects too, with the same message (file, key path) and exit 2.
func TestValidateRunsCompile(t *testing.T) {
	for _, f := range []string{"testdata/invalid-size-above-body-limit.yaml", "testdata/invalid-script-size-above-body-limit.yaml",
		"testdata/invalid-http-url-scheme.yaml", "testdata/invalid-tcp-no-port.yaml"} {
		vout, vcode := runCLI(t, "validate", "-c", f)
		cout, ccode := runCLI(t, "check", "-c", f)
		if vcode != 2 || ccode != 2 {
			t.Errorf("%s: validate exit %d, check exit %d; want 2 and 2", f, vcode, ccode)
		}
		if !strings.HasPrefix(vout, f+":") || !strings.Contains(vout, ": checks[0]") || strings.TrimSpace(vout) != strings.TrimSpace(cout) {
			t.Errorf("%s:\nvalidate: %s\ncheck:    %s", f, vout, cout)
		}
	}
}

// TestCheckNothingToRun: a deploy gate that would check nothing fails (exit 2)
// instead of passing.
func TestCheckNothingToRun(t *testing.T) {
	disabled := writeConfig(t, `checks: [{name: h, url: "http://127.0.0.1:1/", disabled: true}]`)
	proxyOnly := writeConfig(t, `proxy: {pools: [{name: web, origins: [{url: "http://127.0.0.1:1"}]}]}`)
	two := writeConfig(t, `checks: [{name: healthz, url: "http://127.0.0.1:1/"}, {name: asset, url: "http://127.0.0.1:1/a"}]`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"empty file", []string{"-c", "testdata/invalid-empty.yaml"}, "testdata/invalid-empty.yaml: nothing to run: no checks:, proxy:, alerting:, slos: or store: section"},
		{"proxy only", []string{"-c", proxyOnly}, proxyOnly + ": no checks to run: the file defines no checks"},
		{"all disabled", []string{"-c", disabled}, disabled + ": no checks to run: its only check is disabled (run it with --check NAME)"},
		{"filter matches nothing", []string{"-c", disabled, "--check", "nosuch"}, disabled + `: no checks to run: no check named "nosuch" (the file's checks: h)`},
		{"a misspelt check", []string{"-c", two, "--check", "helthz"}, two + `: no checks to run: no check named "helthz" (did you mean healthz?)`},
		{"an unknown check", []string{"-c", two, "--check", "zzz"}, two + `: no checks to run: no check named "zzz" (the file's checks: healthz, asset)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, append([]string{"check"}, tc.args...)...)
			if code != 2 || !strings.HasPrefix(out, tc.want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, tc.want)
			}
		})
	}
	if out, code := runCLI(t, "validate", "-c", "testdata/invalid-empty.yaml"); code != 2 || !strings.Contains(out, "nothing to run: no checks:") {
		t.Errorf("validate empty file: exit %d: %s", code, out)
	}
	if out, code := runCLI(t, "validate", "-c", proxyOnly); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("validate proxy-only file: exit %d: %s", code, out)
	}
}

// TestCheckJSONArtifactPath: a failing browser check's screenshot is named
// in `vigil check --json` by a path that exists.
func TestCheckJSONArtifactPath(t *testing.T) {
	_, err := findChromium()
	checktest.NeedDependency(t, "chromium", err)
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`
agent: {data_dir: %q}
targets: [{name: o, url: %s}]
checks:
  - name: title
    targets: [o]
    timeout: 20s
    interval: 30s
    script:
      - browser: {navigate: /}
      - browser: {assert_title: "no such title"}
`, dir, o.URL()))
	out, code := runCLI(t, "check", "-c", cfg, "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	var row struct {
		Artifacts []string `json:"artifacts"`
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "{") {
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(row.Artifacts) == 0 {
		t.Fatalf("no artifacts in %s", out)
	}
	for _, a := range row.Artifacts {
		if _, err := os.Stat(a); err != nil || !strings.HasPrefix(a, filepath.Join(dir, "artifacts")) {
			t.Errorf("artifact %q: %v (want a file under %s/artifacts)", a, err, dir)
		}
	}
}
