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
