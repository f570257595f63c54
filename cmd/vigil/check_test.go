package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	if code != 1 || !strings.Contains(out, "FAIL") || !strings.Contains(out, "checksum") || !strings.Contains(out, "2 checks, 1 passed, 1 failed") {
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

	// Only the healthy target: exit 0.
	bad.SetMode(checktest.ModeOK)
	if out, code = runCLI(t, "check", "-c", cfg, "--check", "asset"); code != 0 {
		t.Errorf("all healthy: exit %d\n%s", code, out)
	}
}

func TestValidateCommand(t *testing.T) {
	if out, code := runCLI(t, "validate", "-c", "../../examples/quickstart.yaml"); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("quickstart: exit %d: %s", code, out)
	}
	out, code := runCLI(t, "validate", "-c", "testdata/invalid-unknown-key.yaml")
	if code != 2 || !strings.Contains(out, "checks[2].expect.statuss: unknown key") {
		t.Errorf("invalid: exit %d: %s", code, out)
	}
	if _, code := runCLI(t, "check", "-c", "testdata/invalid-unknown-target.yaml"); code != 2 {
		t.Errorf("check with bad config: exit %d, want 2", code)
	}
}
