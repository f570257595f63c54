package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestSIGHUPReloadsConfig runs the built binary and changes its config in a
// way the file watcher cannot see (the new file has the old one's size and
// modification time, and replaces it atomically): nothing changes until
// SIGHUP, after which the added check runs and the reload is counted.
func TestSIGHUPReloadsConfig(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	port := freePorts(t, 1)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	head := fmt.Sprintf(`agent: {listen: "127.0.0.1:%d", region: r1, data_dir: %q}
defaults: {interval: 1s, timeout: 500ms}
targets: [{name: o, url: %q}]
checks:
  - {name: before, targets: [o], http: {path: /healthz}}
`, port, filepath.Join(dir, "data"), o.URL())
	added := "  - {name: added, targets: [o], http: {path: /api/status}}\n"
	// The old file ends in a comment as long as the added check, so both
	// files have the same size.
	oldBody := head + "#" + strings.Repeat("x", len(added)-2) + "\n"
	newBody := head + added
	if len(oldBody) != len(newBody) {
		t.Fatalf("sizes %d and %d differ", len(oldBody), len(newBody))
	}
	path := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(path, []byte(oldBody), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startLogged(t, bin, "run", "-c", path)
	waitFor(t, 60*time.Second, "vigil started and the first check running", func() bool {
		p.alive(t)
		return strings.Contains(p.stderr.String(), `msg="vigil started"`) && o.Count("GET", "/healthz") >= 2
	})

	// Write the new config beside the old one with the old one's
	// modification time, and rename it over the old one: the watcher's
	// view of the file (mtime and size) never changes.
	oldInfo, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "vigil.yaml.new")
	if err := os.WriteFile(tmp, []byte(newBody), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, oldInfo.ModTime(), oldInfo.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	newInfo, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !newInfo.ModTime().Equal(oldInfo.ModTime()) || newInfo.Size() != oldInfo.Size() {
		t.Fatalf("could not keep the file's stamp: %s/%d became %s/%d", oldInfo.ModTime(), oldInfo.Size(), newInfo.ModTime(), newInfo.Size())
	}

	// Three watcher periods (2s each) without a reload: only a signal can
	// load this change.
	time.Sleep(6 * time.Second)
	p.alive(t)
	if n := o.Count("GET", "/api/status"); n != 0 {
		t.Fatalf("the added check ran %d times before SIGHUP: the watcher saw the change, so this test cannot tell SIGHUP from it\n%s", n, p.stderr.String())
	}
	if strings.Contains(p.stderr.String(), "config reloaded") {
		t.Fatalf("reloaded before SIGHUP:\n%s", p.stderr.String())
	}

	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the added check running after SIGHUP", func() bool {
		p.alive(t)
		return o.Count("GET", "/api/status") >= 2
	})
	if !strings.Contains(p.stderr.String(), `msg="config reloaded"`) {
		t.Errorf("no \"config reloaded\" log line after SIGHUP:\n%s", p.stderr.String())
	}
	_, metrics := do(t, "GET", base+"/metrics", "", nil)
	if !strings.Contains(metrics, "\nvigil_config_reloads_total 1\n") {
		t.Errorf("after one SIGHUP: %s, want vigil_config_reloads_total 1", grepLines(metrics, "vigil_config_reload"))
	}
	waitFor(t, 30*time.Second, "the added check's verdict in GET /api/v1/verdicts", func() bool {
		code, body := do(t, "GET", base+"/api/v1/verdicts", "", nil)
		return code == 200 && strings.Contains(body, `"check":"added"`)
	})
	if code := p.stop(t); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0\n%s", code, p.stderr.String())
	}
}
