package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

func startApp(t *testing.T, path string, r roles) (*app, func()) {
	t.Helper()
	return startAppWith(t, path, appOptions{roles: r})
}

// startAppWith runs an app on a free 127.0.0.1 port with o (listener, a
// 100ms file watch and a silent logger filled in); the returned func stops it.
func startAppWith(t *testing.T, path string, o appOptions) (*app, func()) {
	t.Helper()
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.listener, o.watch, o.log = ln, 100*time.Millisecond, discardLogger()
	a, err := newApp(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return a, runApp(t, a)
}

// runApp runs a until the returned func stops it: a must stop within 20s
// and without an error, or the test fails.
func runApp(t testing.TB, a *app) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("app stopped with error: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("app did not stop within 20s")
		}
	}
}

func verdictsOf(t *testing.T, base string) []reporting.Verdict {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/verdicts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var vs []reporting.Verdict
	if err := json.NewDecoder(resp.Body).Decode(&vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func find(vs []reporting.Verdict, check, target string) (reporting.Verdict, bool) {
	for _, v := range vs {
		if v.Check == check && v.Target == target {
			return v, true
		}
	}
	return reporting.Verdict{}, false
}

func httpStatus(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReloadKeepsStateAndRejectsInvalid: a running `vigil run` picks up a
// changed file; an invalid file leaves the old config running and shows on
// /healthz; an unchanged pair keeps its state across a valid reload.
func TestReloadKeepsStateAndRejectsInvalid(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	cfgText := func(extra string) string {
		return fmt.Sprintf(`
agent: {region: test, data_dir: %s, admin_token: "reload-token-123"}
defaults: {interval: 300ms, timeout: 200ms, rise: 2, fall: 2}
targets: [{name: a, url: %s}]
checks:
  - {name: healthz, targets: [a], http: {path: /healthz}}
%s`, dir, o.URL(), extra)
	}
	path := dir + "/vigil.yaml"
	if err := os.WriteFile(path, []byte(cfgText("")), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, alerter: true, page: true})
	defer stop()
	base := "http://" + a.Addr()

	var before reporting.Verdict
	waitFor(t, 10*time.Second, "healthz healthy", func() bool {
		v, ok := find(verdictsOf(t, base), "healthz", "a")
		before = v
		return ok && v.State == reporting.StateHealthy && v.Streak >= 3
	})

	// Invalid file: rejected, old config keeps running, /healthz says so.
	if err := os.WriteFile(path, []byte(cfgText("  - {name: bad, targets: [nope], http: {path: /}}")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "/healthz to report the failed reload", func() bool {
		code, body := httpStatus(t, "GET", base+"/healthz", "")
		return code == 503 && strings.Contains(body, `"nope": unknown target`)
	})
	if _, ok := find(verdictsOf(t, base), "bad", "a"); ok {
		t.Fatal("the invalid config's check runs")
	}
	code, body := httpStatus(t, "GET", base+"/metrics", "")
	if code != 200 || !strings.Contains(body, "vigil_config_reload_failures_total 1") {
		t.Errorf("metrics after a failed reload: %d\n%s", code, grepLines(body, "reload"))
	}

	// Valid file with one more check: swapped in; healthz keeps its streak.
	if err := os.WriteFile(path, []byte(cfgText("  - {name: asset, targets: [a], http: {path: /asset.bin}}")), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the new check's verdict and a healthy /healthz", func() bool {
		_, ok := find(verdictsOf(t, base), "asset", "a")
		code, _ := httpStatus(t, "GET", base+"/healthz", "")
		return ok && code == 200
	})
	after, _ := find(verdictsOf(t, base), "healthz", "a")
	if after.State != reporting.StateHealthy || after.Streak <= before.Streak {
		t.Errorf("healthz after reload: state %s streak %d; before: streak %d (state must be kept)", after.State, after.Streak, before.Streak)
	}

	// The trigger API wants the admin token.
	if code, _ := httpStatus(t, "POST", base+"/api/v1/trigger?check=healthz&target=a", ""); code != 401 {
		t.Errorf("trigger without token: %d, want 401", code)
	}
	if code, _ := httpStatus(t, "POST", base+"/api/v1/trigger?check=healthz&target=a", "wrong"); code != 401 {
		t.Errorf("trigger with a wrong token: %d, want 401", code)
	}
	if code, body := httpStatus(t, "POST", base+"/api/v1/trigger?check=healthz&target=a", "reload-token-123"); code != 200 {
		t.Errorf("trigger with the token: %d %s", code, body)
	}
	// The token never shows in /healthz, /metrics or the status page.
	for _, p := range []string{"/healthz", "/metrics", "/"} {
		if _, body := httpStatus(t, "GET", base+p, ""); strings.Contains(body, "reload-token-123") {
			t.Errorf("%s shows the admin token", p)
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
