//go:build linux

package canary

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/scripts"
)

// metricsOf is the canary's /metrics body.
func metricsOf(t *testing.T, c *Canary) string {
	t.Helper()
	srv := httptest.NewServer(c.Handler(nil))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestAgentFaultKeepsVerdict: a healthy pair whose run the agent cannot
// make (no file descriptor left: cause agent) stays healthy with the same
// expiry, even with fall 1, and the run is not counted as a failed run of
// the target in vigil_checks_total; the next run that can be made is
// judged as usual.
func TestAgentFaultKeepsVerdict(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "home", Targets: []string{"o1"}, Rise: 1, Fall: 1, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	c := start(t, cfg, compile(t, cfg), Options{})
	v1, err := c.Trigger("home", "o1")
	if err != nil || !v1.OK || v1.State != reporting.StateHealthy {
		t.Fatalf("first run: %+v %v; want a healthy pass", v1, err)
	}

	_, release := checktest.ExhaustFDs(t)
	v2, err := c.Trigger("home", "o1")
	release()
	if err != nil {
		t.Fatal(err)
	}
	if v2.OK || v2.Cause != string(checks.CauseAgent) || !strings.HasPrefix(v2.Err, "agent: cannot open a connection to the target: too many open files") {
		t.Fatalf("run without a file descriptor: ok %v cause %q err %q; want cause agent naming the limit", v2.OK, v2.Cause, v2.Err)
	}
	if v2.State != reporting.StateHealthy || !v2.Expires.Equal(v1.Expires) || v2.Streak != v1.Streak {
		t.Errorf("verdict after the agent's own failure: state %s expires %s streak %d; want healthy, expiry %s and streak %d kept (fall 1: a counted fail would make it unhealthy)",
			v2.State, v2.Expires, v2.Streak, v1.Expires, v1.Streak)
	}
	// /healthz (the canary's Health) says so: the agent runs but checks
	// nothing for that pair.
	if err := c.Health(); err == nil || !strings.Contains(err.Error(), "1 of 1 pairs cannot run since ") ||
		!strings.Contains(err.Error(), "the agent's own trouble (not counted against the targets): agent: agent: cannot open a connection to the target: too many open files") {
		t.Errorf("Health while the pair's runs cannot be made: %v", err)
	}
	body := metricsOf(t, c)
	for _, s := range []string{
		`vigil_checks_total{check="home",region="test-region",result="fail",target="o1"} 0`,
		`vigil_checks_total{check="home",region="test-region",result="pass",target="o1"} 1`,
		`vigil_check_failures_total{cause="agent",check="home",region="test-region",target="o1"} 1`,
	} {
		if !strings.Contains(body, s+"\n") {
			t.Errorf("metrics lack %s", s)
		}
	}

	v3, err := c.Trigger("home", "o1")
	if err != nil || !v3.OK || v3.State != reporting.StateHealthy || v3.Streak != 2 || !v3.Expires.After(v1.Expires) {
		t.Fatalf("run after the descriptors were freed: %+v %v; want a pass, streak 2, a later expiry", v3, err)
	}
	if err := c.Health(); err != nil {
		t.Errorf("Health after a counted run: %v, want nil", err)
	}
}

// TestAgentFaultNeverUnhealthy: a browser check on an agent without its
// browser (a real scripts.Browser whose exec_path does not exist) fails
// each run with browser_unavailable, and its pair never turns unhealthy:
// it has had no counted run, so each verdict is unknown and already
// expired, which the proxy ignores and no down alert reads.
func TestAgentFaultNeverUnhealthy(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "journey", Targets: []string{"o1"}, Fall: 1, Interval: time.Hour,
			Script: scripts.Script{{Browser: &scripts.BrowserStep{Navigate: "/healthz"}}}})
	b := scripts.NewBrowser(scripts.BrowserConfig{ExecPath: filepath.Join(t.TempDir(), "no-chromium"), MaxConcurrent: 1})
	t.Cleanup(func() { b.Close() })
	pairs, err := cfg.Compile(CompileOptions{Version: "test", DataDir: t.TempDir(), Browser: b})
	if err != nil {
		t.Fatal(err)
	}
	c := start(t, cfg, pairs, Options{})
	for i := range 3 {
		v, err := c.Trigger("journey", "o1")
		if err != nil {
			t.Fatal(err)
		}
		if v.OK || v.Cause != string(checks.CauseBrowserUnavailable) {
			t.Fatalf("run %d: ok %v cause %q err %q; want browser_unavailable", i, v.OK, v.Cause, v.Err)
		}
		if v.State != reporting.StateUnknown || v.Current(v.At) != reporting.StateUnknown || v.Expires.After(v.At) {
			t.Fatalf("run %d: state %s, expires %s (run at %s); want unknown, already expired", i, v.State, v.Expires, v.At)
		}
	}
	if body := metricsOf(t, c); !strings.Contains(body, `vigil_checks_total{check="journey",region="test-region",result="fail",target="o1"} 0`+"\n") {
		t.Errorf("vigil_checks_total counts the runs the agent could not make as failed")
	}
}
