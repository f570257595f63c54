package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestReadyzStaysUpWhenVerdictsAreLost: a proxy whose only verdict source
// died answers 503 on /healthz (for its operators) and 200 on /readyz (for
// the load balancer in front of it: the proxy fails open and keeps serving),
// listing the problem as a warning.
func TestReadyzStaysUpWhenVerdictsAreLost(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	canary := serveVerdicts(t, "127.0.0.1:0")
	a, stop := startProxyApp(t, proxyOnlyConfig(t, o.URL()), "http://"+canary.Addr)
	defer stop()
	base := "http://" + a.Addr()
	waitFor(t, 10*time.Second, "/readyz 200 ready with the canary up", func() bool {
		code, body := do(t, "GET", base+"/readyz", "", nil)
		return code == 200 && body == "ready\n"
	})
	canary.Close()
	waitFor(t, 10*time.Second, "/healthz 503 once the canary is gone", func() bool {
		code, _ := do(t, "GET", base+"/healthz", "", nil)
		return code == 503
	})
	code, body := do(t, "GET", base+"/readyz", "", nil)
	if code != 200 || !strings.HasPrefix(body, "ready\nwarning: proxy: verdicts unreadable since ") {
		t.Fatalf("/readyz = %d %q; want 200 ready with the lost source as a warning", code, body)
	}
}

// TestShutdownDelay runs the binary: after SIGTERM, /readyz answers 503 at
// once while the proxy keeps serving for agent.shutdown_delay; then it exits.
// A second signal ends the delay.
func TestShutdownDelay(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	o := checktest.NewOrigin()
	defer o.Close()

	start := func(t *testing.T, delay string) (*exec.Cmd, string, string, chan error) {
		dir := t.TempDir()
		port := freePorts(t, 2)
		agent, prx := fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", port+1)
		path := filepath.Join(dir, "vigil.yaml")
		if err := os.WriteFile(path, []byte(fmt.Sprintf(`
agent: {listen: %q, data_dir: %q, shutdown_delay: %s}
targets: [{name: a, url: %s}]
proxy:
  listen: %q
  pools: [{name: web, origins: [{target: a}]}]
`, agent, filepath.Join(dir, "data"), delay, o.URL(), prx)), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd, exited := startReady(t, exec.Command(bin, "proxy", "-c", path), os.Stderr, agent)
		return cmd, "http://" + agent, "http://" + prx, exited
	}

	t.Run("serves on during the delay", func(t *testing.T) {
		cmd, agent, prx, exited := start(t, "2s")
		sent := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "/readyz 503 shutting down", func() bool {
			code, body := do(t, "GET", agent+"/readyz", "", nil)
			return code == 503 && body == "shutting down\n"
		})
		if code, body := do(t, "GET", prx+"/healthz", "", nil); code != 200 || body != "ok" {
			t.Errorf("proxy during the delay: %d %q, want the origin's 200 ok", code, body)
		}
		select {
		case err := <-exited:
			t.Fatalf("exited %v after SIGTERM, before the 2s delay (%v)", time.Since(sent), err)
		case <-time.After(time.Until(sent.Add(1500 * time.Millisecond))):
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("exit: %v", err)
			}
			if d := time.Since(sent); d < 2*time.Second {
				t.Errorf("exited %v after SIGTERM, want ≥ 2s", d)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("still running 20s after SIGTERM")
		}
	})

	t.Run("a second signal ends the delay", func(t *testing.T) {
		cmd, agent, _, exited := start(t, "60s")
		sent := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "/readyz 503 shutting down", func() bool {
			code, _ := do(t, "GET", agent+"/readyz", "", nil)
			return code == 503
		})
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("exit: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("still running %v after two signals (shutdown_delay 60s)", time.Since(sent))
		}
	})
}

// startReady starts cmd (its stdout and stderr to out), kills it when the
// test ends, and waits until its agent listener at agent answers /readyz
// 200. The channel gets cmd.Wait's result.
func startReady(t *testing.T, cmd *exec.Cmd, out io.Writer, agent string) (*exec.Cmd, chan error) {
	t.Helper()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	waitFor(t, 15*time.Second, "/readyz 200", func() bool {
		resp, err := http.Get("http://" + agent + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return cmd, exited
}
