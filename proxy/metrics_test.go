package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// scrape returns the /metrics exposition text of the harness's registry,
// fetched over a real socket as Prometheus would.
func (h *harness) scrape() string {
	h.t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

// TestMetricsNoPhantomOrigin: the proxy's own answers (413, 502) are counted
// under origin="none", but "none" is not an origin: /metrics has no
// availability gauge, ejection counter or any other per-origin series for
// it, so `vigil_proxy_origin_available == 0` never matches it.
func TestMetricsNoPhantomOrigin(t *testing.T) {
	for _, engine := range []string{EngineFast, EngineStdlib} {
		t.Run(engine, func(t *testing.T) {
			a := newBackend(t, "a")
			cfg := pool1(PolicyFirst, a.srv.URL, deadURL(t))
			cfg.MaxBody = 1 << 10
			h := startWith(t, cfg, nil, false, engine)
			if code, _, _ := h.do("POST", "/", strings.Repeat("x", 2<<10)); code != http.StatusRequestEntityTooLarge {
				t.Fatalf("oversized body: got %d, want 413", code)
			}
			a.srv.Close() // now every origin refuses: 502
			if code, _, _ := h.do("GET", "/", ""); code != http.StatusBadGateway {
				t.Fatalf("all origins down: got %d, want 502", code)
			}

			text := h.scrape()
			for _, want := range []string{
				`vigil_proxy_requests_total{code="413",origin="none",pool="web"} 1`,
				`vigil_proxy_requests_total{code="502",origin="none",pool="web"} 1`,
				`vigil_proxy_request_duration_seconds_count{origin="none",pool="web"} 2`,
			} {
				if !strings.Contains(text, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
			// The real origins do have their per-origin series.
			if !strings.Contains(text, `vigil_proxy_origin_available{origin="`) || !strings.Contains(text, `vigil_proxy_ejections_total{origin="`) {
				t.Error("/metrics lacks the real origins' available/ejection series")
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.HasPrefix(line, "#") || !strings.Contains(line, `origin="none"`) {
					continue
				}
				if !strings.HasPrefix(line, "vigil_proxy_requests_total{") && !strings.HasPrefix(line, "vigil_proxy_request_duration_seconds_") {
					t.Errorf("/metrics has a per-origin series for the proxy's own answers: %s", line)
				}
			}
		})
	}
}

// TestTriesTotalCountsRetriedFailures: vigil_proxy_tries_total counts every
// try per origin, so an origin whose 503s are all retried away (and so
// never appear in vigil_proxy_requests_total) still shows its failures.
func TestTriesTotalCountsRetriedFailures(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	a.mode.Store(mode503)
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.Pools[0].Passive.Consecutive5xx = -1 // keep a in the pool: every request tries it first
	h := start(t, cfg, nil, false)
	const n = 10 // below passive.min_requests (rate rules quiet) and within the retry budget
	for i := 0; i < n; i++ {
		if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok b" {
			t.Fatalf("request %d: %d %q, want 200 from b", i, code, body)
		}
	}
	o0, o1 := h.pool("web").origins[0].name, h.pool("web").origins[1].name
	for _, c := range []struct {
		origin, result string
		want           float64
	}{{o0, "status_5xx", n}, {o0, "ok", 0}, {o1, "ok", n}} {
		if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"pool": "web", "origin": c.origin, "result": c.result}); v != c.want {
			t.Errorf("tries_total{origin=%s,result=%s} = %v, want %v", c.origin, c.result, v, c.want)
		}
	}
	if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": o0, "code": "503"}); v != 0 {
		t.Errorf("requests_total{origin=%s,code=503} = %v: the retried 503s were answers?", o0, v)
	}
}

// TestTriesTotalSeriesLifecycle: every failure cause of an origin's
// vigil_proxy_tries_total is there at 0 from the start (its failure rate is
// 0, not absent, before the first failure), and a reload that removes the
// origin removes all its tries series, as its other per-origin series.
func TestTriesTotalSeriesLifecycle(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, urls(a, b)...)
	h := start(t, cfg, nil, false)
	o1 := h.pool("web").origins[1].name
	for _, c := range retryCauses {
		if v, ok := h.metric("vigil_proxy_tries_total", map[string]string{"pool": "web", "origin": o1, "result": c}); !ok || v != 0 {
			t.Errorf("tries_total{origin=%s,result=%s}: present %v, value %v; want present at 0", o1, c, ok, v)
		}
	}
	if err := h.p.Reload(pool1(PolicyFirst, urls(a)...)); err != nil {
		t.Fatal(err)
	}
	if text := h.scrape(); strings.Contains(text, `origin="`+o1+`"`) {
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, `origin="`+o1+`"`) {
				t.Errorf("after the reload that removed %s, /metrics still has %s", o1, line)
			}
		}
	}
}
