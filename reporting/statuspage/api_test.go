package statuspage

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// runs returns n verdicts of check × target in region, one a second
// ending ago before t0, the first failed of them failing with cause
// "status" (an outage: counted as failed).
func runs(check, target, region string, ago time.Duration, n, failed int) []reporting.Verdict {
	var out []reporting.Verdict
	for i := range n {
		cause, state := "", reporting.StateHealthy
		if i < failed {
			cause, state = "status", reporting.StateUnhealthy
		}
		v := verdict(check, target, region, state, cause, ago+time.Duration(n-i)*time.Second)
		out = append(out, v)
	}
	return out
}

// apiReport is what a client reads of GET /api/v1/slos.
type apiReport struct {
	Check  string `json:"check"`
	Target string `json:"target"`
	Uptime []struct {
		Window         string   `json:"window"`
		WindowSeconds  int64    `json:"window_seconds"`
		Runs           int      `json:"runs"`
		Failed         int      `json:"failed"`
		Uptime         *float64 `json:"uptime"`
		CoveredSeconds int64    `json:"covered_seconds"`
	} `json:"uptime"`
	SLOs []struct {
		Name           string   `json:"name"`
		Kind           string   `json:"kind"`
		Objective      string   `json:"objective"`
		ObjectiveValue *float64 `json:"objective_value"`
		Unit           string   `json:"unit"`
		WindowSeconds  int64    `json:"window_seconds"`
		Current        *float64 `json:"current"`
		BudgetLeft     *float64 `json:"budget_left"`
		State          string   `json:"state"`
	} `json:"slos"`
}

func getReports(t *testing.T, srv interface{ Close() }, url string) (int, []apiReport, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.WriteString(string(buf[:n]))
		if err != nil {
			break
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q, want application/json", url, ct)
	}
	var out []apiReport
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(b.String()), &out); err != nil {
			t.Fatalf("GET %s: %v\n%s", url, err, b.String())
		}
	}
	return resp.StatusCode, out, b.String()
}

func near(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 1e-9 }

// TestSLOsAPIFromStore: GET /api/v1/slos answers, per check × target, the
// uptime over 24h, 7d and 30d that the check page shows, counted from
// verdicts stored in the embedded store (runs and failed runs per window),
// and each SLO's figures in its unit; ?check= and ?target= narrow it, and
// a check nothing is known of is a 404.
func TestSLOsAPIFromStore(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var vs []reporting.Verdict
	vs = append(vs, runs("web", "o1", "eu", time.Hour, 40, 2)...)        // 24h: 40 runs, 2 failed
	vs = append(vs, runs("web", "o1", "eu", 3*24*time.Hour, 60, 6)...)   // 7d: 100 runs, 8 failed
	vs = append(vs, runs("web", "o1", "eu", 20*24*time.Hour, 100, 0)...) // 30d: 200 runs, 8 failed
	vs = append(vs, runs("web", "o2", "eu", time.Hour, 10, 0)...)
	vs = append(vs, runs("api", "o1", "us", time.Minute, 5, 5)...)
	// A run failing only its TTFB objective is slow, not down; one the
	// agent could not make is no run of the target's.
	slow := verdict("web", "o2", "eu", reporting.StateUnhealthy, "ttfb", 2*time.Hour)
	agent := verdict("web", "o2", "eu", reporting.StateUnknown, reporting.CauseAgent, 2*time.Hour+time.Second)
	vs = append(vs, slow, agent)
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	month := 30 * 24 * time.Hour
	srv := serve(t, Options{Verdicts: st, SLOs: func() []SLOStatus {
		return []SLOStatus{
			{Name: "web-avail · o1", SLO: "web-avail", Check: "web", Target: "o1", Objective: "99%", Current: 0.96, BudgetLeft: -3, Window: month},
			{Name: "web-ttfb · o2 (TTFB p95)", SLO: "web-ttfb", Check: "web", Target: "o2", Objective: "600ms", Current: 0.212, BudgetLeft: 1, Window: 7 * 24 * time.Hour},
			{Name: "new", Check: "new", Objective: "99.9%", Current: -1, BudgetLeft: 1, Window: month},
		}
	}})

	code, all, body := getReports(t, srv, srv.URL+"/api/v1/slos")
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/slos: %d\n%s", code, body)
	}
	var got []string
	for _, r := range all {
		got = append(got, r.Check+"/"+r.Target)
	}
	if want := "api/o1 new/ web/o1 web/o2 web/"; strings.Join(got, " ") != want {
		t.Fatalf("reports %q, want %q (by check, then target, all targets last)\n%s", strings.Join(got, " "), want, body)
	}
	type cell struct {
		runs, failed int
		uptime       float64
	}
	wantUptime := map[string][3]cell{
		"api/o1": {{5, 5, 0}, {5, 5, 0}, {5, 5, 0}},
		"web/o1": {{40, 2, 0.95}, {100, 8, 0.92}, {200, 8, 0.96}},
		"web/o2": {{11, 0, 1}, {11, 0, 1}, {11, 0, 1}},
		"web/":   {{51, 2, 49.0 / 51}, {111, 8, 103.0 / 111}, {211, 8, 203.0 / 211}},
	}
	for _, r := range all {
		k := r.Check + "/" + r.Target
		if len(r.Uptime) != 3 {
			t.Errorf("%s: %d uptime windows, want 3", k, len(r.Uptime))
			continue
		}
		for i, w := range []struct {
			label string
			secs  int64
		}{{"24h", 86400}, {"7d", 7 * 86400}, {"30d", 30 * 86400}} {
			u := r.Uptime[i]
			if u.Window != w.label || u.WindowSeconds != w.secs {
				t.Errorf("%s: window %d is %s (%ds), want %s (%ds)", k, i, u.Window, u.WindowSeconds, w.label, w.secs)
			}
			want, ok := wantUptime[k]
			if !ok {
				if u.Runs != 0 || u.Failed != 0 || u.Uptime != nil {
					t.Errorf("%s %s: %d runs, %d failed, uptime %v; want 0, 0, null", k, u.Window, u.Runs, u.Failed, u.Uptime)
				}
				continue
			}
			if c := want[i]; u.Runs != c.runs || u.Failed != c.failed || !near(u.Uptime, c.uptime) {
				t.Errorf("%s %s: %d runs, %d failed, uptime %v; want %d, %d, %v", k, u.Window, u.Runs, u.Failed, deref(u.Uptime), c.runs, c.failed, c.uptime)
			}
		}
	}

	slo := func(k string, i int) (apiReport, bool) {
		for _, r := range all {
			if r.Check+"/"+r.Target == k && i < len(r.SLOs) {
				return r, true
			}
		}
		t.Errorf("%s: no SLO %d", k, i)
		return apiReport{}, false
	}
	if r, ok := slo("web/o1", 0); ok {
		s := r.SLOs[0]
		if s.Name != "web-avail" || s.Kind != "availability" || s.Objective != "99%" || !near(s.ObjectiveValue, 0.99) || s.Unit != "ratio" ||
			s.WindowSeconds != 30*86400 || !near(s.Current, 0.96) || !near(s.BudgetLeft, -3) || s.State != "unhealthy" {
			t.Errorf("web/o1 SLO: %+v", s)
		}
	}
	if r, ok := slo("web/o2", 0); ok {
		s := r.SLOs[0]
		if s.Name != "web-ttfb" || s.Kind != "ttfb_p95" || s.Objective != "600ms" || !near(s.ObjectiveValue, 0.6) || s.Unit != "seconds" ||
			s.WindowSeconds != 7*86400 || !near(s.Current, 0.212) || !near(s.BudgetLeft, 1) || s.State != "healthy" {
			t.Errorf("web/o2 SLO: %+v", s)
		}
	}
	if r, ok := slo("new/", 0); ok {
		if s := r.SLOs[0]; s.Name != "new" || s.Current != nil || s.State != "no_runs" || !near(s.BudgetLeft, 1) {
			t.Errorf("SLO without runs: %+v, want current null and state no_runs", s)
		}
	}
	for _, r := range all {
		if r.SLOs == nil {
			t.Errorf("%s/%s: slos null, want []", r.Check, r.Target)
		}
	}

	// The check page shows the same uptime figures.
	_, _, page := get(t, srv, "/check/web")
	for _, n := range findAll(parseHTML(t, page), "data-uptime-target") {
		tg, _ := attr(n, "data-uptime-target")
		win, _ := attr(n, "data-window")
		runs, _ := attr(n, "data-runs")
		failed, _ := attr(n, "data-failed")
		k := "web/" + tg
		if tg == "all" || tg == "" {
			k = "web/"
		}
		for i, w := range []string{"24h", "7d", "30d"} {
			if c := wantUptime[k][i]; w == win && (runs != strconv.Itoa(c.runs) || failed != strconv.Itoa(c.failed)) {
				t.Errorf("check page %s %s: %s runs, %s failed; the API says %d, %d", k, win, runs, failed, c.runs, c.failed)
			}
		}
	}

	code, one, body := getReports(t, srv, srv.URL+"/api/v1/slos?check=web&target=o2")
	if code != http.StatusOK || len(one) != 1 || one[0].Check != "web" || one[0].Target != "o2" || len(one[0].SLOs) != 1 {
		t.Errorf("?check=web&target=o2: %d\n%s\nwant web/o2 only", code, body)
	}
	code, one, body = getReports(t, srv, srv.URL+"/api/v1/slos?check=api")
	if code != http.StatusOK || len(one) != 1 || one[0].Target != "o1" {
		t.Errorf("?check=api: %d\n%s\nwant api/o1 only", code, body)
	}
	code, _, body = getReports(t, srv, srv.URL+"/api/v1/slos?check=nope")
	if code != http.StatusNotFound || !strings.Contains(body, `"error":"check \"nope\": no verdicts`) {
		t.Errorf("?check=nope: %d\n%s\nwant 404 with an error", code, body)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
