package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestCheckJSONHTTPURL: `vigil check --json` names the URL an http check
// requested, as a script step's url and the verdict's url show it: no
// userinfo, query values as "…"; other kinds have none.
func TestCheckJSONHTTPURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	cfg := writeConfig(t, fmt.Sprintf(`
targets: [{name: o, url: "http://probe:S3cretPw@%[1]s"}]
checks:
  - {name: path, targets: [o], http: {path: "/healthz?token=abc123"}}
  - {name: direct, url: "http://%[1]s/status", http: {url: "http://u:S3cretPw@%[1]s/other?k=v"}}
  - {name: plain, targets: [o]}
  - {name: port, url: "tcp://%[1]s"}
`, host))
	out, code := runCLI(t, "check", "-c", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	want := map[string]string{
		"path":   "http://" + host + "/healthz?token=…",
		"direct": "http://" + host + "/other?k=…",
		"plain":  "http://" + host,
		"port":   "",
	}
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var row struct {
			Check string  `json:"check"`
			URL   *string `json:"url"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		seen++
		got := ""
		if row.URL != nil {
			got = *row.URL
			if got == "" {
				t.Errorf("%s: an empty url is written, want it left out", row.Check)
			}
		}
		if w, ok := want[row.Check]; !ok || got != w {
			t.Errorf("%s: url %q, want %q", row.Check, got, w)
		}
	}
	if seen != len(want) || strings.Contains(out, "S3cretPw") || strings.Contains(out, "abc123") {
		t.Errorf("%d rows (want %d), or a password or query value shown:\n%s", seen, len(want), out)
	}
}

// TestCheckTableScreenshot: the table shows a failing browser run's
// screenshot on a line of its own under the run, by a path that exists,
// as --json names it.
func TestCheckTableScreenshot(t *testing.T) {
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
      - {browser: {assert_title: "no such title"}, timeout: 1s}
  - {name: up, targets: [o], http: {path: /healthz}}
`, dir, o.URL()))
	out, code := runCLI(t, "check", "-c", cfg)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	lines := strings.Split(out, "\n")
	row := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "title ") && strings.Contains(l, "FAIL") {
			row = i
		}
	}
	if row < 0 || row+1 >= len(lines) {
		t.Fatalf("no FAIL row for title:\n%s", out)
	}
	next := lines[row+1]
	detailCol := strings.Index(lines[0], "DETAIL")
	_, path, ok := strings.Cut(next, "screenshot: ")
	if !ok || strings.TrimSpace(next[:detailCol]) != "" || strings.Index(next, "screenshot: ") != detailCol {
		t.Fatalf("line under the failing run %q, want \"screenshot: <path>\" in the DETAIL column\n%s", next, out)
	}
	if _, err := os.Stat(path); err != nil || !strings.HasPrefix(path, filepath.Join(dir, "artifacts")) || filepath.Ext(path) != ".png" {
		t.Errorf("screenshot %q: %v (want a .png under %s/artifacts)", path, err, dir)
	}
	if !strings.HasPrefix(lines[row+2], "up ") {
		t.Errorf("the next run's row does not follow the screenshot line:\n%s", out)
	}
}
