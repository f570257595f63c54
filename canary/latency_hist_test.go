package canary

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/alerting"
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

// TestLatencyHistogramBounds: the histograms' buckets are the bounds the
// generated Prometheus TTFB rule is built on (alerting.LatencyBuckets), so
// a typical objective such as the reference config's 600 ms is a bucket
// bound and "p95 above 600 ms" is read from the runs, not interpolated
// between 500 ms and 1 s.
func TestLatencyHistogramBounds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(t, map[string]string{"o": srv.URL},
		CheckConfig{Name: "page", Targets: []string{"o"}, Rise: 1, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/"}})
	cfg.Agent.LatencyHistograms = true
	c := start(t, cfg, compile(t, cfg), Options{})
	body := triggerAndScrape(t, c, [2]string{"page", "o"})
	le := regexp.MustCompile(`le="([^"]+)"`)
	for _, name := range []string{"vigil_check_duration_seconds", "vigil_check_ttfb_seconds"} {
		var got []float64
		for _, line := range strings.Split(body, "\n") {
			if !strings.HasPrefix(line, name+"_bucket{") {
				continue
			}
			m := le.FindStringSubmatch(line)
			if m == nil || m[1] == "+Inf" {
				continue
			}
			f, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatalf("%s: le %q: %v", name, m[1], err)
			}
			got = append(got, f)
		}
		want := alerting.LatencyBuckets[:]
		if len(got) != len(want) {
			t.Fatalf("%s: bounds %v, want alerting.LatencyBuckets %v", name, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: bounds %v, want alerting.LatencyBuckets %v", name, got, want)
			}
		}
	}
	if got := metricValue(t, body, `vigil_check_ttfb_seconds_bucket{check="page",region="test-region",target="o",le="0.6"}`); got != 1 {
		t.Errorf("runs under 600ms = %g, want the one fast run", got)
	}
}
