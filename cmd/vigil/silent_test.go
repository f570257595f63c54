package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting/alerting"
)

// TestCanaryGoesSilent: the canary that judged origin-b down stops
// publishing. Its verdicts go stale and stop counting; the proxy falls back
// to its own passive detection (clients still see no error) and the
// dead-man alert fires for the silent region.
func TestCanaryGoesSilent(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	var urls []string
	origins := map[string]*checktest.Origin{}
	for _, n := range []string{"a", "b", "c"} {
		o := checktest.NewOrigin()
		defer o.Close()
		origins[n] = o
		urls = append(urls, o.URL())
	}
	origins["b"].SetMode(checktest.Mode503)
	dir := t.TempDir()
	path := dir + "/vigil.yaml"
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`
agent: {region: r1, data_dir: %s}
defaults: {interval: 500ms, timeout: 400ms, rise: 2, fall: 2}
targets: [{name: a, url: %s}, {name: b, url: %s}, {name: c, url: %s}]
checks:
  - {name: healthz, targets: [a, b, c], http: {path: /healthz}}
alerting: {quorum: 1, evaluation_interval: 1s, dead_man: {intervals: 3}, down: {disabled: true}, ttfb: {disabled: true}, burn_rate: {disabled: true}}
proxy:
  listen: 127.0.0.1:0
  verdict_poll: 200ms
  pools:
    - name: web
      origins: [{target: a}, {target: b}, {target: c}]
      verdicts: {checks: [healthz], quorum: 1, max_age: 3s}
      passive: {consecutive_5xx: 3, ejection: 30s}
      retry: {tries: 3, try_timeout: 1s, budget: 3s}
      connect_timeout: 500ms
`, dir, urls[0], urls[1], urls[2])), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The proxy and the alerter read the store; the canary runs apart so it
	// can be stopped alone.
	a, err := newApp(cfg, appOptions{roles: roles{proxy: true, alerter: true}, listener: ln, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("app: %v", err)
		}
	}()
	pairs, err := cfg.Compile(canary.CompileOptions{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := canary.New(&cfg.Config, pairs, canary.Options{Sink: a.fan, Registry: prometheus.NewRegistry(), Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stopCanary := context.WithCancel(context.Background())
	cdone := make(chan error, 1)
	go func() { cdone <- c.Run(cctx) }()

	base := proxyBase(t, a)
	status := func() (verdictDown, passive bool) {
		for _, o := range a.prx.Origins() {
			if o.Name == "b" {
				return o.VerdictDown, o.PassiveEjected
			}
		}
		t.Fatal("origin b not listed")
		return
	}
	waitFor(t, 15*time.Second, "the canary to take origin-b out", func() bool { d, _ := status(); return d })

	// Client traffic throughout: retries and ejections keep errors at zero.
	lctx, stopLoad := context.WithCancel(context.Background())
	var res loadResult
	wg := drive(lctx, base, 50, 2, 2000, &res)

	stopCanary()
	if err := <-cdone; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("canary: %v", err)
	}
	silent := time.Now()
	waitFor(t, 15*time.Second, "origin-b's stale verdict to stop counting and passive detection to take over", func() bool {
		d, p := status()
		return !d && p
	})
	t.Logf("verdict flag cleared and passive ejection in place %s after the canary went silent", time.Since(silent).Round(time.Millisecond))
	waitFor(t, 15*time.Second, "the dead-man alert", func() bool {
		for _, al := range a.alr.Active() {
			if al.Rule == alerting.RuleDeadMan && al.Region == "r1" && !al.Resolved() {
				return true
			}
		}
		return false
	})
	stopLoad()
	wg.Wait()
	if res.failed.Load() != 0 {
		t.Errorf("%d of %d client GETs failed while the canary went silent; first: %v", res.failed.Load(), res.sent.Load(), res.firstErr.Load())
	}
}
