package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// TestProbeEndpointServed: `vigil run` with agent.probe in its file serves
// GET /probe on agent.listen: a module from checks: runs against the named
// target, a target outside agent.probe.allow is refused before anything is
// sent to it, and /metrics counts both.
func TestProbeEndpointServed(t *testing.T) {
	var hits atomic.Int64
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer origin.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`
agent:
  data_dir: %s
  admin_token: probe-endpoint-token
  probe:
    enabled: true
    allow: [127.0.0.1/32]
    max_concurrent: 2
    timeout_offset: 250ms
defaults: {interval: 1h}
checks:
  - {name: http_2xx, url: "http://127.0.0.1:9/", disabled: true, http: {}, expect: {status: 2xx}}
`, dir)
	path := dir + "/vigil.yaml"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true})
	defer stop()
	base := "http://" + a.Addr()

	code, body := httpStatus(t, "GET", base+"/probe?module=http_2xx&target="+url.QueryEscape(origin.URL), "probe-endpoint-token")
	if code != 200 || !strings.Contains(body, "probe_success 1") || !strings.Contains(body, "probe_http_status_code 200") {
		t.Fatalf("allowed target: %d\n%s", code, body)
	}
	if code, body := httpStatus(t, "GET", base+"/probe?module=http_2xx&target="+url.QueryEscape(origin.URL), ""); code != 401 {
		t.Errorf("no token: %d %s", code, body)
	}
	_, port, _ := net.SplitHostPort(origin.Listener.Addr().String())
	before := hits.Load()
	code, body = httpStatus(t, "GET", base+"/probe?module=http_2xx&target=http://127.0.0.2:"+port+"/", "probe-endpoint-token")
	if code != 403 || !strings.Contains(body, "agent.probe.allow") {
		t.Errorf("outside the allow list: %d %s", code, body)
	}
	if hits.Load() != before {
		t.Error("a refused target was requested")
	}
	_, metrics := httpStatus(t, "GET", base+"/metrics", "")
	for _, want := range []string{`vigil_probe_requests_total{module="http_2xx",outcome="success"} 1`, `vigil_probe_requests_total{module="http_2xx",outcome="forbidden"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(metrics, "vigil_probe_"))
		}
	}
}
