package statuspage

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestCheckPageWindowParam: a ?window= the page does not offer answers 400
// naming the parameter and the windows it offers, instead of silently
// drawing the default hour.
func TestCheckPageWindowParam(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	src.add(verdict("asset", "a", "eu", reporting.StateHealthy, "", time.Second))
	srv := serve(t, Options{Verdicts: src})
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/check/asset?window=bogus", http.StatusBadRequest, `window: "bogus": want one of 15m, 1h, 6h, 24h, 7d`},
		{"/check/asset?window=2h", http.StatusBadRequest, `window: "2h"`},
		{"/check/asset?window=6h", http.StatusOK, `<b aria-current="true">6h</b>`},
		{"/check/asset", http.StatusOK, `<b aria-current="true">1h</b>`},
	} {
		code, _, body := get(t, srv, tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s = %d, want %d with %q:\n%.300s", tc.path, code, tc.code, tc.want, body)
		}
	}
}

// TestCheckPageSlowRunsApart: a run that failed only its ttfb objective is
// slow, not down (uptime counts it as passed), so it is listed under
// "Recent slow runs", not "Recent failures"; a failed run stays there.
func TestCheckPageSlowRunsApart(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	slow := verdict("api", "a", "eu", reporting.StateDegraded, reporting.CauseTTFB, time.Minute)
	slow.Err, slow.TTFB = "ttfb 401ms over 300ms", 401*time.Millisecond
	down := verdict("api", "b", "eu", reporting.StateUnhealthy, "status", 2*time.Minute)
	down.Err, down.StatusCode = "status 503, want 200", 503
	src.add(slow, down, verdict("api", "a", "eu", reporting.StateHealthy, "", 10*time.Second))
	srv := serve(t, Options{Verdicts: src})
	code, _, body := get(t, srv, "/check/api")
	if code != http.StatusOK {
		t.Fatalf("GET /check/api = %d\n%s", code, body)
	}
	doc := parseHTML(t, body)
	rows := func(id string) []string {
		var out []string
		for _, n := range findAll(byID(doc, id), "data-cause") {
			tg, _ := attr(n, "data-target")
			c, _ := attr(n, "data-cause")
			out = append(out, tg+"/"+c)
		}
		return out
	}
	if got := rows("failure-list"); len(got) != 1 || got[0] != "b/status" {
		t.Errorf("Recent failures: %v, want only b/status (the slow run is not a failure)", got)
	}
	if got := rows("slow-list"); len(got) != 1 || got[0] != "a/ttfb" {
		t.Errorf("Recent slow runs: %v, want a/ttfb", got)
	}
}

// TestCheckPageSLOWithoutRuns: an SLO that covers the check but has no runs
// in its window yet is listed as "no runs yet", not as "No SLO covers this
// check." nor as -100% or 0ms.
func TestCheckPageSLOWithoutRuns(t *testing.T) {
	src := &memSource{now: func() time.Time { return t0 }}
	src.add(verdict("yearly", "a", "eu", reporting.StateHealthy, "", time.Second))
	srv := serve(t, Options{Verdicts: src, SLOs: func() []SLOStatus {
		return []SLOStatus{
			{Name: "yearly-avail", Check: "yearly", Objective: "99.9%", Current: -1, BudgetLeft: 1, Window: 30 * 24 * time.Hour},
			{Name: "yearly-ttfb (TTFB p95)", Check: "yearly", Objective: "300ms", Current: 0, BudgetLeft: 1, Window: 5 * time.Minute},
		}
	}})
	code, _, body := get(t, srv, "/check/yearly")
	if code != http.StatusOK {
		t.Fatalf("GET /check/yearly = %d\n%s", code, body)
	}
	list := text(byID(parseHTML(t, body), "slo-list"))
	for _, want := range []string{"yearly-avail 99.9% no runs yet 30d no runs yet", "yearly-ttfb (TTFB p95) 300ms no runs yet 5m no runs yet"} {
		if !strings.Contains(list, want) {
			t.Errorf("SLO list %q lacks %q", list, want)
		}
	}
	if strings.Contains(list, "No SLO covers") || strings.Contains(list, "-100") {
		t.Errorf("SLO list: %q", list)
	}
}
