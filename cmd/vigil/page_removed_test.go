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

// TestStatusPageDropsRemovedPairs: a check removed from vigil run's config
// by a reload leaves the status page at once (it showed as unknown for
// 24 h); the same check run by another canary of the same region (another
// vantage) writing to the same store still shows.
func TestStatusPageDropsRemovedPairs(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	cfg := func(checks string) string {
		return fmt.Sprintf(`agent: {region: r1, data_dir: %q}
defaults: {interval: 200ms, timeout: 150ms}
targets: [{name: o, url: %q}]
checks:
%s`, filepath.Join(dir, "data"), o.URL(), checks)
	}
	path := filepath.Join(dir, "vigil.yaml")
	both := "  - {name: up, targets: [o], http: {path: /healthz}}\n  - {name: retired-check, targets: [o], http: {path: /healthz}}\n"
	if err := os.WriteFile(path, []byte(cfg(both)), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	base := "http://" + a.Addr()
	page := func() string {
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	waitFor(t, 20*time.Second, "both checks on the page", func() bool {
		return strings.Contains(page(), "retired-check") && strings.Contains(page(), ">up<")
	})
	if err := os.WriteFile(path, []byte(cfg("  - {name: up, targets: [o], http: {path: /healthz}}\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	a.reload()
	a.mu.Lock()
	err := a.reloadErr
	a.mu.Unlock()
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if p := page(); strings.Contains(p, "retired-check") || !strings.Contains(p, ">up<") {
		t.Fatalf("after the reload that removed retired-check the page still shows it (or lost up):\n%.2000s", p)
	}
	// Another canary of the same region (another vantage) writing to the
	// same store still runs it: its series shows.
	now := time.Now()
	v := reporting.Verdict{Check: "retired-check", Target: "o", Region: "r1", Vantage: "r1-other", State: reporting.StateHealthy,
		OK: true, At: now, Expires: now.Add(time.Minute), Interval: 10 * time.Second}
	if err := a.fan.Publish(context.Background(), []reporting.Verdict{v}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "another vantage's retired-check of the same region on the page", func() bool {
		return strings.Contains(page(), "retired-check")
	})
}
