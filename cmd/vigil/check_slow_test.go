package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestCheckSlowIsNotDown: a run that failed only its ttfb objective is
// SLOW (degraded) in vigil check's table, "result":"slow" in --json, a
// passing JUnit case that says SLOW in its system-out, and exit 0, as the
// canary counts it degraded, not down; --fail-on-slow makes it exit 1 and
// a JUnit <failure type="slow">. A run that also failed a functional
// assertion stays FAIL.
func TestCheckSlowIsNotDown(t *testing.T) {
	slow := checktest.NewOrigin(checktest.WithMode(checktest.ModeSlow), checktest.WithSlowDelay(300*time.Millisecond))
	defer slow.Close()
	fast := checktest.NewOrigin()
	defer fast.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
targets:
  - {name: fast, url: %s}
  - {name: slow, url: %s}
checks:
  - name: asset
    targets: [fast, slow]
    http: {path: /asset.bin}
    expect: {status: 200, ttfb: 100ms}
  - name: broken
    targets: [slow]
    http: {path: /asset.bin}
    expect: {status: 404, ttfb: 100ms}
`, fast.URL(), slow.URL()))

	out, code := runCLI(t, "check", "-c", cfg, "--check", "asset")
	if code != 0 {
		t.Errorf("vigil check with a slow run: exit %d, want 0 (slow is not down)\n%s", code, out)
	}
	var slowRow string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "asset") && strings.Contains(l, " slow ") {
			slowRow = l
		}
	}
	if !strings.Contains(slowRow, "SLOW (degraded)") || !strings.Contains(slowRow, "ttfb") {
		t.Errorf("the slow run's row %q: want SLOW (degraded) and cause ttfb\n%s", slowRow, out)
	}
	if !strings.Contains(out, "1 passed, 1 slow, 0 failed") {
		t.Errorf("summary: want \"1 passed, 1 slow, 0 failed\"\n%s", out)
	}

	out, code = runCLI(t, "check", "-c", cfg, "--check", "asset", "--fail-on-slow")
	if code != 1 || !strings.Contains(out, "SLOW (degraded)") {
		t.Errorf("vigil check --fail-on-slow with a slow run: exit %d, want 1 and SLOW (degraded)\n%s", code, out)
	}

	out, code = runCLI(t, "check", "-c", cfg, "--json")
	if code != 1 {
		t.Errorf("vigil check --json with a failed run: exit %d, want 1\n%s", code, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row struct {
			Check, Target, Result, Cause string
			OK                           bool
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			continue // stderr
		}
		got[row.Check+"/"+row.Target] = fmt.Sprintf("%s ok=%v cause=%s", row.Result, row.OK, row.Cause)
	}
	want := map[string]string{
		"asset/fast":  "pass ok=true cause=",
		"asset/slow":  "slow ok=false cause=ttfb",
		"broken/slow": "fail ok=false cause=status",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("--json %s: %q, want %q\n%s", k, got[k], w, out)
		}
	}

	for _, tc := range []struct {
		flags        []string
		failure      string
		systemOutHas string
	}{
		{nil, "", "SLOW (degraded): "},
		{[]string{"--fail-on-slow"}, "slow", ""},
	} {
		report := filepath.Join(t.TempDir(), "report.xml")
		runCLI(t, append([]string{"check", "-c", cfg, "--check", "asset", "--junit", report}, tc.flags...)...)
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Failures int `xml:"failures,attr"`
			Suites   []struct {
				Cases []struct {
					Name    string `xml:"name,attr"`
					Failure *struct {
						Type string `xml:"type,attr"`
					} `xml:"failure"`
					SystemOut string `xml:"system-out"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for _, c := range doc.Suites[0].Cases {
			if c.Name != "slow" {
				continue
			}
			typ := ""
			if c.Failure != nil {
				typ = c.Failure.Type
			}
			if typ != tc.failure || !strings.Contains(c.SystemOut, tc.systemOutHas) {
				t.Errorf("JUnit %v: slow run's failure type %q, system-out %q; want failure type %q, system-out with %q\n%s",
					tc.flags, typ, c.SystemOut, tc.failure, tc.systemOutHas, b)
			}
		}
	}
}
