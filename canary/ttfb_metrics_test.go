package canary

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/scripts"
)

// TestMetricsTTFBEveryKind: vigil_ttfb_seconds carries the verdict's TTFB
// (what the built-in TTFB SLO rule reads) for a script check as for an
// http check, so the generated Prometheus TTFB rule can judge scripts,
// which export no probe_http_duration_seconds; a run without a first byte
// exports none.
func TestMetricsTTFBEveryKind(t *testing.T) {
	const wait = 150 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(wait)
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(t, map[string]string{"o": srv.URL, "dead": closedURL(t)},
		CheckConfig{Name: "page", Targets: []string{"o"}, Rise: 1, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/"}},
		CheckConfig{Name: "flow", Targets: []string{"o", "dead"}, Rise: 1, Interval: time.Hour,
			Script: scripts.Script{{HTTP: &checks.HTTPSpec{Path: "/login"}}, {HTTP: &checks.HTTPSpec{Path: "/home"}}}})
	c := start(t, cfg, compile(t, cfg), Options{})
	body := triggerAndScrape(t, c, [2]string{"page", "o"}, [2]string{"flow", "o"}, [2]string{"flow", "dead"})
	for _, check := range []string{"page", "flow"} {
		v, _ := latestOf(c, check, "o")
		got := metricValue(t, body, `vigil_ttfb_seconds{check="`+check+`",region="test-region",target="o",tier="`+v.Tier+`"}`)
		if got < wait.Seconds() || got != v.TTFB.Seconds() {
			t.Errorf("%s: vigil_ttfb_seconds = %g, want the verdict's TTFB %g (at least %s)", check, got, v.TTFB.Seconds(), wait)
		}
	}
	if strings.Contains(body, `vigil_ttfb_seconds{check="flow",region="test-region",target="dead"`) {
		t.Errorf("flow × dead got no first byte but exports vigil_ttfb_seconds:\n%s", body)
	}
}
