package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestProxyListenFlag: `vigil proxy --proxy-listen ADDR` serves on ADDR,
// not on the file's proxy.listen (which another program holds), and keeps
// it across a reload; with no proxy section in the file it is an error
// naming the flag.
func TestProxyListenFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	dir := t.TempDir()
	buildVigil(t, dir)
	o := checktest.NewOrigin()
	defer o.Close()
	taken := holdPort(t, 0)
	port := freePorts(t, 1)
	cfg := filepath.Join(dir, "vigil.yaml")
	body := fmt.Sprintf(`
agent: {listen: 127.0.0.1:0, data_dir: %q}
targets: [{name: a, url: %s}]
proxy:
  listen: 127.0.0.1:%d
  pools: [{name: web, origins: [{target: a}]}]
`, filepath.Join(dir, "data"), o.URL(), taken)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	// A variable that overrides no key: a config warning, given once
	// (the flag's check of the file warned a second time).
	t.Setenv("VIGIL_AGENT_REGOIN", "x")
	p := startVigil(t, dir, "bin/vigil", "proxy", "-c", cfg, "--proxy-listen", fmt.Sprintf("127.0.0.1:%d", port))
	get := func() int {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(15 * time.Second)
	for get() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("nothing served on --proxy-listen 127.0.0.1:%d\nstderr:\n%s", port, p.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := strings.Count(p.stderr.String(), "VIGIL_AGENT_REGOIN"); n != 1 {
		t.Errorf("the warning about VIGIL_AGENT_REGOIN came %d times, want once:\n%s", n, p.stderr.String())
	}
	// A reload of the file keeps the flag's address.
	if err := os.WriteFile(cfg, []byte(body+"# touched\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitStderr := func(what string) {
		deadline := time.Now().Add(15 * time.Second)
		for !strings.Contains(p.stderr.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in stderr:\n%s", what, p.stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitStderr("config reloaded")
	if strings.Contains(p.stderr.String(), "needs a restart") || strings.Contains(p.stderr.String(), "restart") {
		t.Errorf("the reload took proxy.listen from the file:\n%s", p.stderr.String())
	}
	if code := get(); code != http.StatusOK {
		t.Errorf("after the reload: %d", code)
	}
	if code := p.interrupt(t); code != 0 {
		t.Errorf("exit %d\nstderr:\n%s", code, p.stderr.String())
	}

	noProxy := filepath.Join(dir, "canary.yaml")
	os.WriteFile(noProxy, []byte(fmt.Sprintf("agent: {listen: 127.0.0.1:0, data_dir: %q}\ntargets: [{name: a, url: %s}]\nchecks: [{name: c, targets: [a]}]\n", filepath.Join(dir, "d2"), o.URL())), 0o600)
	_, stderr, code := runVigil(t, dir, "bin/vigil", "run", "-c", noProxy, "--proxy-listen", "127.0.0.1:0")
	if want := "--proxy-listen: " + noProxy + " has no proxy section\n"; code != 2 || stderr != want {
		t.Errorf("no proxy section: exit %d, stderr %q, want 2 and %q", code, stderr, want)
	}
}
