package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestHealthzRejectedReloadIsOneReason: a reload rejected for several
// errors is one /healthz reason naming them all; no continuation line
// reads as a separate "canary:" problem. /readyz stays 200 with it as a
// warning.
func TestHealthzRejectedReloadIsOneReason(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	good := fmt.Sprintf(`
agent: {region: r1, data_dir: %q}
defaults: {interval: 1s}
targets: [{name: o, url: %q}]
checks:
  - {name: up, targets: [o], http: {path: /healthz}}
  - {name: up2, targets: [o], interval: 1s, http: {path: /healthz}}
`, filepath.Join(dir, "data"), o.URL())
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, page: true})
	defer stop()
	base := "http://" + a.Addr()
	waitFor(t, 10*time.Second, "/healthz 200", func() bool {
		code, _ := do(t, "GET", base+"/healthz", "", nil)
		return code == 200
	})
	bad := strings.ReplaceAll(good, "interval: 1s", "interval: 5")
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	a.reload()
	code, body := do(t, "GET", base+"/healthz", "", nil)
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if code != 503 || len(lines) != 1 ||
		!strings.HasPrefix(lines[0], "config reload failed (old config still running), 2 errors: ") ||
		!strings.Contains(lines[0], "defaults.interval: 5") || !strings.Contains(lines[0], "checks[1].interval: 5") {
		t.Fatalf("/healthz = %d\n%s\nwant 503 and one line naming both errors", code, body)
	}
	code, body = do(t, "GET", base+"/readyz", "", nil)
	if code != 200 || body != "ready\nwarning: "+lines[0]+"\n" {
		t.Fatalf("/readyz = %d\n%s\nwant 200 ready with the reload as one warning", code, body)
	}
}
