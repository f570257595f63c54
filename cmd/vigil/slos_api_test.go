package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestSLOsAPI: GET /api/v1/slos on agent.listen, beside the canary's
// /api/v1/ endpoints, answers the figures of the check page from
// verdicts stored in the embedded store: uptime per window (runs, failed
// runs, the ratio), and each SLO's objective, window, current value,
// error budget left and state as the alerter computes them.
func TestSLOsAPI(t *testing.T) {
	data := t.TempDir()
	now := time.Now()
	st, err := store.Open(data, store.Options{Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// Another canary's region (this agent's canary runs nothing: its
	// check is disabled): 40 runs half an hour ago (2 failed), 60 three days
	// ago (6 failed), 100 twenty days ago (none failed), each with a
	// 100 ms first byte.
	var vs []reporting.Verdict
	add := func(ago time.Duration, n, failed int) {
		for i := range n {
			at := now.Add(-ago).Add(time.Duration(i) * time.Second)
			v := reporting.Verdict{Check: "web", Target: "o1", Region: "eu", Vantage: "eu-1", Tier: reporting.TierDeep,
				State: reporting.StateHealthy, OK: true, StatusCode: 200, TTFB: 100 * time.Millisecond,
				Interval: time.Minute, At: at, Expires: at.Add(3 * time.Minute)}
			if i < failed {
				v.State, v.OK, v.Cause, v.StatusCode = reporting.StateUnhealthy, false, "status", 500
			}
			vs = append(vs, v)
		}
	}
	add(30*time.Minute, 40, 2)
	add(3*24*time.Hour, 60, 6)
	add(20*24*time.Hour, 100, 0)
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	path := writeConfig(t, fmt.Sprintf(`
agent: {region: r1, data_dir: %s}
targets: [{name: o1, url: "http://127.0.0.1:1/"}]
checks: [{name: web, targets: [o1], disabled: true, http: {path: /}}]
slos:
  - {name: web-avail, check: web, objective: 99%%, window: 30d}
  - {name: web-week, check: web, target: o1, objective: 95%%, window: 7d}
  - {name: web-ttfb, check: web, ttfb_p95: 600ms, window: 1h}
alerting: {dead_man: {disabled: true}}
`, data))
	cfg, err := loadConfig(path, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(cfg, appOptions{roles: roles{canary: true, alerter: true, page: true}, listener: ln, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer runApp(t, a)()
	base := "http://" + ln.Addr().String()

	type slo struct {
		Name           string   `json:"name"`
		Kind           string   `json:"kind"`
		Objective      string   `json:"objective"`
		ObjectiveValue *float64 `json:"objective_value"`
		Unit           string   `json:"unit"`
		WindowSeconds  int64    `json:"window_seconds"`
		Current        *float64 `json:"current"`
		BudgetLeft     *float64 `json:"budget_left"`
		State          string   `json:"state"`
	}
	var got []struct {
		Check  string `json:"check"`
		Target string `json:"target"`
		Uptime []struct {
			Window        string   `json:"window"`
			WindowSeconds int64    `json:"window_seconds"`
			Runs          int      `json:"runs"`
			Failed        int      `json:"failed"`
			Uptime        *float64 `json:"uptime"`
		} `json:"uptime"`
		SLOs []slo `json:"slos"`
	}
	resp, err := http.Get(base + "/api/v1/slos?check=web")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/slos?check=web: %s %s\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if len(got) != 1 || got[0].Check != "web" || got[0].Target != "o1" {
		t.Fatalf("want one report, web × o1:\n%s", body)
	}
	near := func(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 1e-9 }
	r := got[0]
	for i, w := range []struct {
		window       string
		secs         int64
		runs, failed int
		uptime       float64
	}{
		{"24h", 86400, 40, 2, 0.95},
		{"7d", 7 * 86400, 100, 8, 0.92},
		{"30d", 30 * 86400, 200, 8, 0.96},
	} {
		if i >= len(r.Uptime) {
			t.Fatalf("uptime has %d windows, want 3:\n%s", len(r.Uptime), body)
		}
		u := r.Uptime[i]
		if u.Window != w.window || u.WindowSeconds != w.secs || u.Runs != w.runs || u.Failed != w.failed || !near(u.Uptime, w.uptime) {
			t.Errorf("uptime %d: %+v, want %s (%ds): %d runs, %d failed, uptime %v", i, u, w.window, w.secs, w.runs, w.failed, w.uptime)
		}
	}
	want := map[string]struct {
		kind, objective, unit string
		objValue              float64
		secs                  int64
		current, budget       float64
		state                 string
	}{
		// 8 of 200 runs failed: 96 %, 4 % of a 1 % budget: spent 4 times.
		"web-avail": {"availability", "99%", "ratio", 0.99, 30 * 86400, 0.96, -3, "unhealthy"},
		// 8 of 100 in a week: 92 %, 8 % of a 5 % budget.
		"web-week": {"availability", "95%", "ratio", 0.95, 7 * 86400, 0.92, 1 - 0.08/0.05, "unhealthy"},
		// Every first byte in the last hour took 100 ms (the exact p95 of
		// raw runs).
		"web-ttfb": {"ttfb_p95", "600ms", "seconds", 0.6, 3600, 0.1, 1, "healthy"},
	}
	if len(r.SLOs) != len(want) {
		t.Errorf("%d SLOs, want %d:\n%s", len(r.SLOs), len(want), body)
	}
	for _, s := range r.SLOs {
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("SLO %q: not in the config", s.Name)
			continue
		}
		if s.Kind != w.kind || s.Objective != w.objective || s.Unit != w.unit || !near(s.ObjectiveValue, w.objValue) ||
			s.WindowSeconds != w.secs || !near(s.Current, w.current) || !near(s.BudgetLeft, w.budget) || s.State != w.state {
			t.Errorf("SLO %s: %+v (current %v, budget left %v), want %+v", s.Name, s, deref(s.Current), deref(s.BudgetLeft), w)
		}
	}

	// The canary's own endpoints still answer beside it.
	resp, err = http.Get(base + "/api/v1/verdicts")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /api/v1/verdicts: %s", resp.Status)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
