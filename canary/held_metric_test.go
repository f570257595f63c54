package canary

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestMetricsHeldUntil: while flap damping holds a pair unhealthy,
// vigil_verdict_held_until_timestamp_seconds says until when (it showed
// only on the status page and in the API); a pair not held has none.
func TestMetricsHeldUntil(t *testing.T) {
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			w.WriteHeader(503)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(t, map[string]string{"o": srv.URL},
		CheckConfig{Name: "flappy", Targets: []string{"o"}, Rise: 1, Fall: 1, Interval: time.Hour,
			Flap: &FlapConfig{MaxChanges: 2, Window: 10 * time.Minute, HoldDown: 5 * time.Minute, ExtraPasses: 1},
			HTTP: &checks.HTTPSpec{Path: "/"}},
		CheckConfig{Name: "steady", Targets: []string{"o"}, Rise: 1, Fall: 1, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/"}})
	c := start(t, cfg, compile(t, cfg), Options{})
	var v struct{ held time.Time }
	for _, f := range []bool{false, true, false, true} {
		fail.Store(f)
		got, err := c.Trigger("flappy", "o")
		if err != nil {
			t.Fatal(err)
		}
		v.held = got.HeldUntil
	}
	if v.held.IsZero() {
		t.Fatal("flapping did not start a hold-down")
	}
	body := triggerAndScrape(t, c, [2]string{"steady", "o"})
	name := `vigil_verdict_held_until_timestamp_seconds{check="flappy",region="test-region",target="o",tier="`
	if got := metricValue(t, body, name+`deep"}`); got != float64(v.held.Unix()) {
		t.Errorf("held until %g, want %d", got, v.held.Unix())
	}
	if strings.Contains(body, `vigil_verdict_held_until_timestamp_seconds{check="steady"`) {
		t.Errorf("a pair not held exports a hold-down end")
	}
}
