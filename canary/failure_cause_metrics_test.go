package canary

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// closedURL is the URL of a server that was just closed: connections to it
// are refused.
func closedURL(t *testing.T) string {
	t.Helper()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	return dead.URL
}

// triggerAndScrape runs each check × target pair once, in order, and
// returns the canary's /metrics.
func triggerAndScrape(t *testing.T, c *Canary, pairs ...[2]string) string {
	t.Helper()
	for _, p := range pairs {
		if _, err := c.Trigger(p[0], p[1]); err != nil {
			t.Fatalf("trigger %v: %v", p, err)
		}
	}
	api := httptest.NewServer(c.Handler(nil))
	t.Cleanup(api.Close)
	_, body := do(t, "GET", api.URL+"/metrics", "", "")
	return body
}

// TestMetricsFailuresByCause: vigil_check_failures_total counts failed runs
// by cause, so a refused connection and a wrong status are told apart in
// Prometheus (vigil_checks_total only says fail); a pair that never failed
// exports none.
func TestMetricsFailuresByCause(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(503)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(t, map[string]string{"o": srv.URL, "dead": closedURL(t)},
		CheckConfig{Name: "bad", Targets: []string{"o", "dead"}, Rise: 1, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/bad"}},
		CheckConfig{Name: "good", Targets: []string{"o"}, Rise: 1, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/"}})
	c := start(t, cfg, compile(t, cfg), Options{})
	pairs := [][2]string{{"bad", "o"}, {"bad", "dead"}, {"good", "o"}}
	body := triggerAndScrape(t, c, append(pairs, pairs...)...)
	if got := metricValue(t, body, `vigil_check_failures_total{cause="status",check="bad",region="test-region",target="o"}`); got != 2 {
		t.Errorf("bad × o status failures = %g, want 2", got)
	}
	if got := metricValue(t, body, `vigil_check_failures_total{cause="connect_refused",check="bad",region="test-region",target="dead"}`); got != 2 {
		t.Errorf("bad × dead connect_refused failures = %g, want 2", got)
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "vigil_check_failures_total{") &&
			(strings.Contains(line, `check="good"`) || strings.Contains(line, `cause="status"`) && strings.Contains(line, `target="dead"`)) {
			t.Errorf("failures exported for a cause or pair that never failed so: %s", line)
		}
	}
}
