package canary

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestTTFBHistogramCountsTimeouts: vigil_check_ttfb_seconds counts a run
// that timed out before its first byte (an origin answering after 600 ms,
// timeout 250 ms) in a bucket above the timeout, so histogram_quantile
// and the generated TTFB rule see it; a refused connection is no TTFB
// sample. Its count is the runs that gave a TTFB or timed out before one.
func TestTTFBHistogramCountsTimeouts(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(600 * time.Millisecond):
		case <-release:
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	t.Cleanup(fast.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()

	cfg := testConfig(t, map[string]string{"slow": slow.URL, "fast": fast.URL, "dead": dead},
		CheckConfig{Name: "page", Targets: []string{"slow", "fast", "dead"}, Rise: 1, Interval: time.Hour,
			Timeout: 250 * time.Millisecond, HTTP: &checks.HTTPSpec{Path: "/"}})
	cfg.Agent.LatencyHistograms = true
	c := start(t, cfg, compile(t, cfg), Options{})
	body := triggerAndScrape(t, c, [2]string{"page", "slow"}, [2]string{"page", "fast"}, [2]string{"page", "dead"},
		[2]string{"page", "slow"})
	series := func(target string) string { return `check="page",region="test-region",target="` + target + `"` }
	for _, tc := range []struct {
		target    string
		count     float64
		under250m float64
	}{
		{"slow", 2, 0}, // both runs timed out: observed at their duration, above 250 ms
		{"fast", 1, 1},
		{"dead", 0, 0}, // refused: no sample
	} {
		if got := metricValue(t, body, `vigil_check_ttfb_seconds_count{`+series(tc.target)+`}`); got != tc.count {
			t.Errorf("%s: vigil_check_ttfb_seconds_count = %g, want %g", tc.target, got, tc.count)
		}
		if got := metricValue(t, body, `vigil_check_ttfb_seconds_bucket{`+series(tc.target)+`,le="0.25"}`); got != tc.under250m {
			t.Errorf("%s: %g runs at or under 250ms, want %g", tc.target, got, tc.under250m)
		}
	}
	if got := metricValue(t, body, `vigil_check_ttfb_seconds_bucket{`+series("slow")+`,le="0.5"}`); got != 2 {
		t.Errorf("slow: %g runs at or under 500ms, want 2 (observed at the run's duration, about the 250ms timeout)", got)
	}
	if got := metricValue(t, body, `vigil_check_failures_total{cause="timeout",check="page",region="test-region",target="slow"}`); got != 2 {
		t.Errorf("slow: %g timeout failures, want 2", got)
	}
}
