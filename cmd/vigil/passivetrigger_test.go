package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPassiveTriggerMetric runs `vigil run` (proxy, canary and embedded
// store in one process) with an origin whose live traffic fails: the
// proxy's signals make the canary run the origin's deep check out of cycle,
// and /metrics counts it as vigil_passive_triggers_total{target,reason}
// with the origin's target name and reason failure_rate, as the log says.
func TestPassiveTriggerMetric(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	var deep atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/deep" {
			deep.Add(1)
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "broken", http.StatusInternalServerError) // live traffic fails
	}))
	defer origin.Close()

	dir := t.TempDir()
	port := freePorts(t, 2)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	proxyURL := fmt.Sprintf("http://127.0.0.1:%d", port+1)
	// The deep check's own schedule is an hour: a run within the test is
	// its first (at a jittered offset) or a triggered one. Passive
	// ejection is off, so the reason can only be the failure rate.
	path := writeConfig(t, fmt.Sprintf(`
agent:
  listen: "127.0.0.1:%d"
  region: r1
  data_dir: %q
  triggers: {failure_rate: 10%%, for: 30s, min_requests: 5, min_gap: 1h, poll: 1s}
targets: [{name: shop, url: %q}]
checks:
  - {name: deep-asset, tier: deep, targets: [shop], interval: 1h, timeout: 2s, http: {path: /deep}}
proxy:
  listen: "127.0.0.1:%d"
  signal_window: 1s
  pools:
    - name: web
      hosts: ["*"]
      origins: [{target: shop}]
      verdicts: {max_age: 2h}
      passive: {consecutive_5xx: -1}
      retry: {tries: 1}
`, port, filepath.Join(dir, "data"), origin.URL, port+1))
	p := startLogged(t, bin, "run", "-c", path)
	waitFor(t, 60*time.Second, "vigil started", func() bool {
		p.alive(t)
		return strings.Contains(p.stderr.String(), `msg="vigil started"`)
	})
	if _, m := do(t, "GET", base+"/metrics", "", nil); strings.Contains(m, "vigil_passive_triggers_total{") {
		t.Fatalf("a trigger before any traffic: %s", grepLines(m, "vigil_passive_triggers_total"))
	}

	// Failing live traffic through the proxy, until the trigger is counted.
	const want = `vigil_passive_triggers_total{reason="failure_rate",target="shop"} 1`
	var metrics string
	sent := 0
	waitFor(t, 90*time.Second, want+" in /metrics", func() bool {
		p.alive(t)
		for range 10 {
			code, _ := do(t, "GET", proxyURL+"/live", "", nil)
			sent++
			if code != http.StatusInternalServerError && code != http.StatusBadGateway {
				t.Fatalf("GET /live through the proxy: %d, want the origin's 500", code)
			}
		}
		_, metrics = do(t, "GET", base+"/metrics", "", nil)
		return strings.Contains(metrics, want)
	})
	t.Logf("%d failing requests through the proxy; %s", sent, grepLines(metrics, "vigil_passive_triggers_total"))
	if strings.Count(metrics, "vigil_passive_triggers_total{") != 1 {
		t.Errorf("want one series, got: %s", grepLines(metrics, "vigil_passive_triggers_total"))
	}
	if !strings.Contains(metrics, "# TYPE vigil_passive_triggers_total counter") {
		t.Errorf("vigil_passive_triggers_total is not a counter: %s", grepLines(metrics, "vigil_passive_triggers_total"))
	}
	logs := p.stderr.String()
	if !strings.Contains(logs, `msg="live traffic degraded: running check out of cycle" check=deep-asset target=shop reason=failure_rate`) {
		t.Errorf("no log line for the trigger:\n%s", logs)
	}
	waitFor(t, 30*time.Second, "the triggered deep check reaching the origin", func() bool { return deep.Load() >= 1 })
	if code := p.stop(t); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0\n%s", code, p.stderr.String())
	}
}
