package canary

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestLatencyHistograms: with agent.latency_histograms, every run's
// duration and TTFB land in per-pair Prometheus histograms (a scrape every
// 15 s of a 5 s check saw one run in three through the last-run gauges), in
// the bucket of the time the origin took; without it there are none.
func TestLatencyHistograms(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(60 * time.Millisecond) // the 0.1 s bucket, not the 0.05 s one
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	for _, on := range []bool{true, false} {
		cfg := testConfig(t, map[string]string{"o": srv.URL},
			CheckConfig{Name: "page", Targets: []string{"o"}, Rise: 1, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/"}})
		cfg.Agent.LatencyHistograms = on
		c := start(t, cfg, compile(t, cfg), Options{})
		body := triggerAndScrape(t, c, [2]string{"page", "o"}, [2]string{"page", "o"}, [2]string{"page", "o"})
		if !on {
			if strings.Contains(body, "vigil_check_duration_seconds") || strings.Contains(body, "vigil_check_ttfb_seconds") {
				t.Errorf("histograms exported with latency_histograms off")
			}
			continue
		}
		labels := `check="page",region="test-region",target="o"`
		for _, name := range []string{"vigil_check_duration_seconds", "vigil_check_ttfb_seconds"} {
			if got := metricValue(t, body, name+`_count{`+labels+`}`); got != 3 {
				t.Errorf("%s_count = %g, want 3 runs", name, got)
			}
			if got := metricValue(t, body, name+`_bucket{`+labels+`,le="0.05"}`); got != 0 {
				t.Errorf("%s: %g runs under 50ms, want 0 (the origin takes 60ms)", name, got)
			}
			if got := metricValue(t, body, name+`_bucket{`+labels+`,le="1"}`); got != 3 {
				t.Errorf("%s: %g runs under 1s, want 3", name, got)
			}
			if sum := metricValue(t, body, name+`_sum{`+labels+`}`); sum < 0.18 || sum > 3 {
				t.Errorf("%s_sum = %g, want about 3 × 60ms", name, sum)
			}
		}
	}
}
