package canary

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/scripts"
)

// A script step that is only slow does not hide a later hard failure: the
// verdict is unhealthy with the failing step's cause and URL. A script that
// is only slow is degraded, with the slow step's URL.
func TestScriptSlowThenFailVerdict(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			time.Sleep(250 * time.Millisecond)
		case "/status/500":
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	slow := scripts.Step{HTTP: &checks.HTTPSpec{Path: "/slow"}, Expect: &checks.Expect{TTFB: 100 * time.Millisecond}}
	cfg := testConfig(t, map[string]string{"o": srv.URL},
		CheckConfig{Name: "slow-then-500", Targets: []string{"o"}, Rise: 1, Fall: 1, Interval: time.Second, Timeout: 900 * time.Millisecond,
			Script: scripts.Script{slow, {HTTP: &checks.HTTPSpec{Path: "/status/500"}}}},
		CheckConfig{Name: "slow-then-ok", Targets: []string{"o"}, Rise: 1, Fall: 1, Interval: time.Second, Timeout: 900 * time.Millisecond,
			Script: scripts.Script{slow, {HTTP: &checks.HTTPSpec{Path: "/"}}}})
	c := start(t, cfg, compile(t, cfg), Options{})
	waitFor(t, "slow-then-500 unhealthy", stateIs(c, "slow-then-500", "o", reporting.StateUnhealthy))
	waitFor(t, "slow-then-ok degraded", stateIs(c, "slow-then-ok", "o", reporting.StateDegraded))

	v, _ := latestOf(c, "slow-then-500", "o")
	if v.Cause != string(checks.CauseScript) || v.StatusCode != 500 || v.URL != srv.URL+"/status/500" {
		t.Errorf("slow-then-500 verdict: cause %q status %d url %q err %q; want cause script, status 500, url %s/status/500",
			v.Cause, v.StatusCode, v.URL, v.Err, srv.URL)
	}
	v, _ = latestOf(c, "slow-then-ok", "o")
	if v.Cause != string(checks.CauseTTFB) || v.URL != srv.URL+"/slow" {
		t.Errorf("slow-then-ok verdict: cause %q url %q err %q; want cause ttfb, url %s/slow", v.Cause, v.URL, v.Err, srv.URL)
	}
}
