package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// proxyOnlyConfig writes a config for an app in the proxy role.
func proxyOnlyConfig(t *testing.T, originURL string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`
agent: {region: r1, data_dir: %q}
targets: [{name: a, url: %s}]
checks:
  - {name: healthz, targets: [a], http: {path: /healthz}}
proxy:
  listen: 127.0.0.1:0
  verdict_poll: 50ms
  pools:
    - name: web
      origins: [{target: a}]
`, filepath.Join(dir, "data"), originURL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startProxyApp runs an app in the proxy role (vigil proxy).
func startProxyApp(t *testing.T, path string, verdictsFrom ...string) (*app, func()) {
	t.Helper()
	return startAppWith(t, path, appOptions{roles: roles{proxy: true}, verdictsFrom: verdictsFrom})
}

// serveVerdicts serves an empty verdict list on addr ("127.0.0.1:0" for any).
func serveVerdicts(t *testing.T, addr string) *http.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Addr: ln.Addr().String(), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode([]reporting.Verdict{})
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestHealthzProxyVerdictFeedLost: a standalone proxy whose canary stops
// answers 503 on /healthz naming the source and since when (no password),
// and 200 again once the canary is back.
func TestHealthzProxyVerdictFeedLost(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	canary := serveVerdicts(t, "127.0.0.1:0")
	addr := canary.Addr
	a, stop := startProxyApp(t, proxyOnlyConfig(t, o.URL()), "http://vigil:s3cret@"+addr)
	defer stop()
	base := "http://" + a.Addr()
	waitFor(t, 10*time.Second, "/healthz 200 with the canary up", func() bool {
		code, _ := do(t, "GET", base+"/healthz", "", nil)
		return code == 200
	})

	canary.Close()
	var body string
	waitFor(t, 10*time.Second, "/healthz 503 naming the unreadable verdict source", func() bool {
		var code int
		code, body = do(t, "GET", base+"/healthz", "", nil)
		return code == 503 && strings.Contains(body, "proxy: verdicts unreadable since ") &&
			strings.Contains(body, " from http://vigil:xxxxx@"+addr+"/api/v1/verdicts: ")
	})
	if strings.Contains(body, "s3cret") {
		t.Fatalf("/healthz shows the source's password:\n%s", body)
	}
	t.Logf("/healthz with the canary gone:\n%s", body)

	serveVerdicts(t, addr)
	waitFor(t, 10*time.Second, "/healthz 200 after the canary returned", func() bool {
		code, _ := do(t, "GET", base+"/healthz", "", nil)
		return code == 200
	})
}

var reloadMetrics = []string{"vigil_config_reloads_total", "vigil_config_reload_failures_total",
	"vigil_config_last_reload_successful", "vigil_config_last_reload_success_timestamp_seconds"}

func metricValue(body, name string) (string, bool) {
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v, true
		}
	}
	return "", false
}

// TestReloadMetricsInProxyRole: vigil proxy exports all four reload metrics,
// and a rejected reload sets vigil_config_last_reload_successful to 0.
func TestReloadMetricsInProxyRole(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	path := proxyOnlyConfig(t, o.URL())
	a, stop := startProxyApp(t, path)
	defer stop()
	base := "http://" + a.Addr()
	_, body := do(t, "GET", base+"/metrics", "", nil)
	for _, name := range reloadMetrics {
		if _, ok := metricValue(body, name); !ok {
			t.Errorf("/metrics of vigil proxy lacks %s", name)
		}
	}
	if v, _ := metricValue(body, "vigil_config_last_reload_successful"); v != "1" {
		t.Errorf("vigil_config_last_reload_successful = %q at start, want 1", v)
	}
	if err := os.WriteFile(path, []byte("proxy: [not, a, map\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "vigil_config_last_reload_successful 0 after a rejected reload", func() bool {
		_, body := do(t, "GET", base+"/metrics", "", nil)
		v, _ := metricValue(body, "vigil_config_last_reload_successful")
		f, _ := metricValue(body, "vigil_config_reload_failures_total")
		return v == "0" && f != "0"
	})
}

// TestReloadMetricsInRunRole: with a canary in the process the gauges are
// registered once (no duplicate registration) and all four are exported.
func TestReloadMetricsInRunRole(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	a, stop := startApp(t, proxyOnlyConfig(t, o.URL()), roles{canary: true, proxy: true})
	defer stop()
	_, body := do(t, "GET", "http://"+a.Addr()+"/metrics", "", nil)
	for _, name := range reloadMetrics {
		if _, ok := metricValue(body, name); !ok {
			t.Errorf("/metrics of vigil run lacks %s", name)
		}
	}
}

// TestHealthzProxyOneOfTwoCanariesDead: vigil proxy reading two canaries
// keeps answering 200 on /healthz when one dies, lists it ("warning: proxy:
// verdict source URL failing since T, last error: E", no password) and sets
// its vigil_proxy_verdict_source_up to 0; 503 once both are dead; 200 with
// only the still-dead one listed after the other returns.
func TestHealthzProxyOneOfTwoCanariesDead(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	eu, us := serveVerdicts(t, "127.0.0.1:0"), serveVerdicts(t, "127.0.0.1:0")
	euURL := "http://" + eu.Addr + "/api/v1/verdicts"
	usURL := "http://vigil:xxxxx@" + us.Addr + "/api/v1/verdicts"
	a, stop := startProxyApp(t, proxyOnlyConfig(t, o.URL()), "http://"+eu.Addr, "http://vigil:s3cret@"+us.Addr)
	defer stop()
	base := "http://" + a.Addr()
	up := func(metrics, source string) string {
		v, _ := metricValue(metrics, `vigil_proxy_verdict_source_up{source="`+source+`"}`)
		return v
	}
	waitFor(t, 10*time.Second, "/healthz 200 ok and both sources up", func() bool {
		code, body := do(t, "GET", base+"/healthz", "", nil)
		_, m := do(t, "GET", base+"/metrics", "", nil)
		return code == 200 && body == "ok\n" && up(m, euURL) == "1" && up(m, usURL) == "1"
	})

	us.Close()
	var body, metrics string
	waitFor(t, 10*time.Second, "/healthz 200 listing the dead canary", func() bool {
		var code int
		code, body = do(t, "GET", base+"/healthz", "", nil)
		return code == 200 && strings.Contains(body, "warning: proxy: verdict source "+usURL+" failing since ")
	})
	t.Logf("/healthz with one canary dead:\n%s", body)
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if len(lines) != 2 || lines[0] != "ok" || !strings.Contains(lines[1], ", last error: ") ||
		!strings.Contains(lines[1], "connection refused") || !strings.HasSuffix(lines[1], "(1 of 2 verdict sources answer)") {
		t.Fatalf("/healthz body = %q, want \"ok\" then one warning line naming %s with its last error", body, usURL)
	}
	_, metrics = do(t, "GET", base+"/metrics", "", nil)
	if up(metrics, usURL) != "0" || up(metrics, euURL) != "1" {
		t.Fatalf("vigil_proxy_verdict_source_up: dead %q, alive %q; want 0 and 1", up(metrics, usURL), up(metrics, euURL))
	}
	for _, src := range []string{euURL, usURL} {
		if v, ok := metricValue(metrics, `vigil_proxy_verdict_source_last_success_timestamp_seconds{source="`+src+`"}`); !ok || v == "0" {
			t.Errorf("last success of %s = %q (exported %v), want a time", src, v, ok)
		}
	}
	if strings.Contains(body+metrics, "s3cret") {
		t.Fatal("/healthz or /metrics shows a source's password")
	}

	eu.Close()
	waitFor(t, 10*time.Second, "/healthz 503 naming both sources", func() bool {
		var code int
		code, body = do(t, "GET", base+"/healthz", "", nil)
		return code == 503 && strings.Contains(body, "proxy: verdicts unreadable since ") &&
			strings.Contains(body, " from "+euURL+": ") && strings.Contains(body, " from "+usURL+": ") &&
			!strings.Contains(body, "warning:")
	})

	serveVerdicts(t, eu.Addr)
	waitFor(t, 10*time.Second, "/healthz 200 listing only the still-dead canary", func() bool {
		var code int
		code, body = do(t, "GET", base+"/healthz", "", nil)
		return code == 200 && strings.HasPrefix(body, "ok\nwarning: proxy: verdict source "+usURL+" failing since ") &&
			!strings.Contains(body, euURL)
	})
}
