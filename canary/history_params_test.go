package canary

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestHistoryAndVerdictsParams: the history and verdicts endpoints answer
// a contradictory or out-of-range parameter with a 400 naming it, instead
// of 200 [] (or a silently capped answer); from=0 is Unix 0 (everything
// kept), not "0s ago"; to= alone reads the hour before it.
func TestHistoryAndVerdictsParams(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := testConfig(t, map[string]string{"o1": "http://127.0.0.1:1"},
		CheckConfig{Name: "home", Targets: []string{"o1"}, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/"}})
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-150 * time.Minute) // outside the default last hour
	if err := st.Publish(context.Background(), []reporting.Verdict{{Check: "home", Target: "o1", Region: "test-region",
		Vantage: "v1", State: reporting.StateHealthy, OK: true, At: at, Expires: at.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(st))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		query string
		code  int
		want  []string // in the body: the error, or the verdicts' count as "n=N"
	}{
		{"/api/v1/checks/home/history?from=0", 200, []string{"n=1"}},
		{"/api/v1/checks/home/history?to=2h", 200, []string{"n=1"}},
		{"/api/v1/checks/home/history", 200, []string{"n=0"}},
		{"/api/v1/checks/home/history?from=1h&to=2h", 400, []string{`from \"1h\"`, `is after to \"2h\"`}},
		{"/api/v1/checks/home/history?from=1796093682000", 400, []string{"from:", "milliseconds"}},
		{"/api/v1/checks/home/history?from=-1h", 400, []string{"from:", "must be positive"}},
		{"/api/v1/checks/home/history?limit=20000", 400, []string{"limit:", "at most 10000"}},
		{"/api/v1/checks/home/history?from=0&limit=10000", 200, []string{"n=1"}},
		{"/api/v1/verdicts?max_age=-5s", 400, []string{"max_age:", "must be positive"}},
		{"/api/v1/verdicts?max_age=0", 400, []string{"max_age:", "must be positive"}},
	} {
		code, body := do(t, "GET", srv.URL+tc.query, "", "")
		if code == http.StatusOK {
			var vs []reporting.Verdict
			if err := json.Unmarshal([]byte(body), &vs); err != nil {
				t.Errorf("%s: %v: %s", tc.query, err, body)
				continue
			}
			body = "n=" + itoa(len(vs))
		}
		for _, w := range tc.want {
			if code != tc.code || !strings.Contains(body, w) {
				t.Errorf("GET %s: %d %s, want %d with %s", tc.query, code, strings.TrimSpace(body), tc.code, w)
			}
		}
	}
}
