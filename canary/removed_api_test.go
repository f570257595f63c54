package canary

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestVerdictsAPIDropsRemovedPairs: /api/v1/verdicts leaves out at once
// this canary's region's pairs a reload removed, as the status page does;
// the store keeps their last verdict for its retention (7 days) and the API
// showed it all that time, as unknown once expired. Another region's series
// of the same pair stay: they are not this config's to judge.
func TestVerdictsAPIDropsRemovedPairs(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	targets := map[string]string{"o1": "http://127.0.0.1:1", "o2": "http://127.0.0.1:1"}
	home := func(ts ...string) CheckConfig {
		return CheckConfig{Name: "home", Targets: ts, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/healthz"}}
	}
	cfg := testConfig(t, targets, home("o1", "o2"), CheckConfig{Name: "api", Targets: []string{"o1"}, Interval: time.Hour,
		HTTP: &checks.HTTPSpec{Path: "/api"}})
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	var vs []reporting.Verdict
	for _, s := range [][3]string{{"home", "o1", "test-region"}, {"home", "o2", "test-region"}, {"api", "o1", "test-region"},
		{"home", "o2", "other-region"}} {
		vs = append(vs, reporting.Verdict{Check: s[0], Target: s[1], Region: s[2], Vantage: "v1", State: reporting.StateHealthy,
			OK: true, At: at, Expires: at.Add(2 * time.Hour)})
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(st))
	t.Cleanup(srv.Close)
	series := func() []string {
		t.Helper()
		return apiSeries(t, srv.URL, func(v reporting.Verdict) string { return v.Check + "/" + v.Target + "/" + v.Region })
	}
	want := []string{"api/o1/test-region", "home/o1/test-region", "home/o2/other-region", "home/o2/test-region"}
	if got := series(); !slices.Equal(got, want) {
		t.Fatalf("before the reload: %v, want %v", got, want)
	}

	cfg2 := testConfig(t, targets, home("o1")) // home × o2 and api removed
	c.Reload(cfg2, compile(t, cfg2))
	want = []string{"home/o1/test-region", "home/o2/other-region"}
	if got := series(); !slices.Equal(got, want) {
		t.Fatalf("after a reload removed home × o2 and api: %v, want %v", got, want)
	}
}

// TestVerdictsAPIKeepsOtherVantagesOfItsRegion: two canaries of one region
// (vantages v1 and v2, each with checks of its own) write to one store.
// This canary's API must still answer v2's verdicts, whatever this config
// runs: a proxy reading it would otherwise keep in rotation an origin v2
// says is down. A reload removing this canary's own check drops only its
// own series.
func TestVerdictsAPIKeepsOtherVantagesOfItsRegion(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	targets := map[string]string{"o1": "http://127.0.0.1:1"}
	check := func(name string) CheckConfig {
		return CheckConfig{Name: name, Targets: []string{"o1"}, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/" + name}}
	}
	cfg := testConfig(t, targets, check("hza"), check("keep")) // vantage v1 of test-region
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	verdict := func(check, vantage string, state reporting.State) reporting.Verdict {
		return reporting.Verdict{Check: check, Target: "o1", Region: "test-region", Vantage: vantage, State: state,
			OK: state == reporting.StateHealthy, At: at, Expires: at.Add(2 * time.Hour)}
	}
	if err := st.Publish(context.Background(), []reporting.Verdict{
		verdict("hza", "v1", reporting.StateHealthy),
		verdict("keep", "v1", reporting.StateHealthy),
		verdict("hzb", "v2", reporting.StateUnhealthy), // the other canary's check, not in this config
		verdict("hza", "v2", reporting.StateHealthy),   // v2 runs hza too
	}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(st))
	t.Cleanup(srv.Close)
	series := func() []string {
		t.Helper()
		return apiSeries(t, srv.URL, func(v reporting.Verdict) string { return v.Check + "/" + v.Vantage + "/" + string(v.State) })
	}
	want := []string{"hza/v1/healthy", "hza/v2/healthy", "hzb/v2/unhealthy", "keep/v1/healthy"}
	if got := series(); !slices.Equal(got, want) {
		t.Fatalf("verdicts: %v, want %v (v2's series are another canary's)", got, want)
	}

	cfg2 := testConfig(t, targets, check("keep")) // hza removed from this canary
	c.Reload(cfg2, compile(t, cfg2))
	want = []string{"hza/v2/healthy", "hzb/v2/unhealthy", "keep/v1/healthy"}
	if got := series(); !slices.Equal(got, want) {
		t.Fatalf("after a reload removed hza: %v, want %v", got, want)
	}
}

// apiSeries reads GET /api/v1/verdicts from base and returns key of each
// verdict, sorted.
func apiSeries(t *testing.T, base string, key func(reporting.Verdict) string) []string {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/verdicts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []reporting.Verdict
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&got) != nil {
		t.Fatalf("GET /api/v1/verdicts: %s", resp.Status)
	}
	var out []string
	for _, v := range got {
		out = append(out, key(v))
	}
	slices.Sort(out)
	return out
}
