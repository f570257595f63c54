package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"go.yaml.in/yaml/v3"
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

// TestProbeScrapeExample: examples/prometheus/probe-scrape.yml is a valid
// Prometheus config (promtool; --syntax-only, as its token file exists only
// on a Prometheus host), and every module it asks for is a check of
// examples/probe-endpoint.yaml, which turns /probe on.
func TestProbeScrapeExample(t *testing.T) {
	const scrape = "../../examples/prometheus/probe-scrape.yml"
	bin, err := exec.LookPath("promtool")
	switch {
	case err != nil && os.Getenv("CI") == "true":
		t.Fatal("promtool not found (apt-get install prometheus)")
	case err != nil:
		t.Log("SKIPPED promtool check: promtool not found (apt-get install prometheus)")
	default:
		if out, err := exec.Command(bin, "check", "config", "--syntax-only", scrape).CombinedOutput(); err != nil {
			t.Fatalf("promtool check config: %v\n%s", err, out)
		}
	}
	f, err := loadConfig("../../examples/probe-endpoint.yaml", envOf(map[string]string{"VIGIL_ADMIN_TOKEN": "example-token"}))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Agent.Probe.Enabled {
		t.Error("examples/probe-endpoint.yaml does not enable agent.probe")
	}
	checks := map[string]bool{}
	for _, c := range f.Checks {
		checks[c.Name] = true
	}
	raw, err := os.ReadFile(scrape)
	if err != nil {
		t.Fatal(err)
	}
	var prom struct {
		ScrapeConfigs []struct {
			JobName     string              `yaml:"job_name"`
			MetricsPath string              `yaml:"metrics_path"`
			Params      map[string][]string `yaml:"params"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(raw, &prom); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sc := range prom.ScrapeConfigs {
		if sc.MetricsPath != "/probe" {
			continue
		}
		for _, m := range sc.Params["module"] {
			n++
			if !checks[m] {
				t.Errorf("job %s: module %q is no check of examples/probe-endpoint.yaml", sc.JobName, m)
			}
		}
	}
	if n == 0 {
		t.Error("no /probe job in the example")
	}
}
