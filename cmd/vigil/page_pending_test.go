package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestStatusPageShowsPairsNotRunYet: a configured check whose first run is
// still ahead (here a yearly cron) has its row on the status page from the
// start, unknown and "not run yet" (it was missing until its first run:
// "No verdicts yet"), beside a check that already ran.
func TestStatusPageShowsPairsNotRunYet(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	cfg := fmt.Sprintf(`agent: {region: r1, data_dir: %q}
targets: [{name: o, url: %q}]
checks:
  - {name: often, targets: [o], interval: 1s, timeout: 500ms, http: {path: /healthz}}
  - {name: yearly-report, targets: [o], cron: "@yearly", http: {path: /healthz}}
`, filepath.Join(dir, "data"), o.URL())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	page := func() string {
		resp, err := http.Get("http://" + a.Addr() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var p string
	waitFor(t, 20*time.Second, "the check that runs on the page", func() bool {
		p = page()
		return strings.Contains(p, ">often<")
	})
	i := strings.Index(p, `data-check="yearly-report"`)
	if i < 0 {
		t.Fatalf("the yearly check is not on the page before its first run:\n%.3000s", p)
	}
	cell := p[i:min(len(p), i+600)]
	if !strings.Contains(cell, `data-state="unknown"`) || !strings.Contains(cell, "not run yet") {
		t.Errorf("the yearly check's cell: want unknown, not run yet:\n%s", cell)
	}
}

// TestStatusPageShowsRejectedReload: a reload that failed is on the status
// page's banner (it showed only on /healthz and in the log), without the
// error's text; a good reload clears it.
func TestStatusPageShowsRejectedReload(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	good := fmt.Sprintf(`agent: {region: r1, data_dir: %q}
targets: [{name: o, url: %q}]
checks:
  - {name: often, targets: [o], interval: 1s, timeout: 500ms, http: {path: /healthz}}
`, filepath.Join(dir, "data"), o.URL())
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	banner := func() string {
		resp, err := http.Get("http://" + a.Addr() + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		p := string(b)
		i := strings.Index(p, `<div id="notice"`)
		if i < 0 {
			t.Fatalf("no notice element:\n%.2000s", p)
		}
		return p[i:min(len(p), i+300)]
	}
	if b := banner(); strings.Contains(b, "reload failed") {
		t.Fatalf("banner before any reload: %s", b)
	}
	if err := os.WriteFile(path, []byte(good+"  - {name: broken, targets: [nope], http: {path: /}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.reload()
	if b := banner(); !strings.Contains(b, "The last config reload failed; the previous config is still running") || strings.Contains(b, "nope") {
		t.Errorf("banner after a failed reload: %s", b)
	}
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	a.reload()
	if b := banner(); strings.Contains(b, "reload failed") {
		t.Errorf("banner after a good reload: %s", b)
	}
}

// unwritten is a store whose writes have not landed yet: it reads no
// verdicts.
type unwritten struct{ reporting.HistorySource }

func (unwritten) Verdicts(context.Context, time.Duration) ([]reporting.Verdict, error) {
	return nil, nil
}

// TestStatusPageShowsRunPairsBeforeTheirWrite: between a pair's first
// verdict and its write to the store, the page shows the canary's verdict
// from memory. The row used to vanish in that window: no longer "not run
// yet", not yet in the store (a CI run caught the page with no cells at all
// right after a reload).
func TestStatusPageShowsRunPairsBeforeTheirWrite(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	cfg := fmt.Sprintf(`agent: {region: r1, data_dir: %q}
targets: [{name: o, url: %q}]
checks:
  - {name: often, targets: [o], interval: 1s, timeout: 500ms, http: {path: /healthz}}
  - {name: yearly-report, targets: [o], cron: "@yearly", http: {path: /healthz}}
`, filepath.Join(dir, "data"), o.URL())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	waitFor(t, 20*time.Second, "the canary's first verdict", func() bool { return len(a.can.Latest()) > 0 })
	vs, err := withPending{unwritten{a.hist}, a.can}.Verdicts(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for _, v := range vs {
		if v.Region != "r1" || v.Target != "o" {
			t.Errorf("verdict with region %q target %q", v.Region, v.Target)
		}
		ran[v.Check] = !v.At.IsZero() && v.StatusCode == 200
	}
	if r, ok := ran["often"]; !ok || !r || ran["yearly-report"] || len(vs) != 2 {
		t.Errorf("verdicts before the store has any: %+v; want often's run (from memory) and yearly-report not run yet", vs)
	}
}

// TestBadgeOnAgentListener: the status page's SVG badges are served on
// agent.listen, as a README would embed them: the check's state, and 404
// for a check the agent does not know.
func TestBadgeOnAgentListener(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	cfg := fmt.Sprintf(`agent: {region: r1, data_dir: %q}
targets: [{name: o, url: %q}]
checks:
  - {name: often, targets: [o], interval: 1s, timeout: 500ms, rise: 1, http: {path: /healthz}}
`, filepath.Join(dir, "data"), o.URL())
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	get := func(p string) (int, string) {
		resp, err := http.Get("http://" + a.Addr() + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type") + "\n" + string(b)
	}
	waitFor(t, 20*time.Second, "a healthy badge for the check", func() bool {
		code, body := get("/badge/often.svg")
		return code == 200 && strings.HasPrefix(body, "image/svg+xml") && strings.Contains(body, "<title>often: healthy</title>")
	})
	if code, body := get("/badge/nope.svg"); code != 404 || !strings.Contains(body, "no such check") {
		t.Errorf("badge of an unknown check: %d\n%s", code, body)
	}
}
