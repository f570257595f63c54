package grafana

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTTFBCountsTimedOutRuns: the Grafana TTFB alert and panels count a
// run that timed out before its first byte (cause timeout, no TTFB) as a
// sample at its duration, above every TTFB, as vigil's own ttfb rule and
// status page do (reporting.Verdict.TTFBSample); a run without a first byte
// for another cause (connect) is no sample. slowapi → edge-c gets a first
// byte in 150 ms on 16 of its 20 runs of the last 10 minutes in eu-west and
// us-east and times out on 4: its p95 is a timeout, above the 600 ms
// objective, in 2 regions. In ap-south the 4 runs fail to connect instead:
// its p95 is 150 ms. Counting only runs with a TTFB, the rule said nothing
// and the panels drew 150 ms while a fifth of the runs got no answer.
func TestTTFBCountsTimedOutRuns(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	db.write(t, sampleLines(now))
	var sb strings.Builder
	start := now.Add(-10 * time.Minute)
	for _, region := range []string{"eu-west", "us-east", "ap-south"} {
		for i := range 20 {
			at := start.Add(time.Duration(i)*30*time.Second + time.Second)
			fields := `state="healthy",ok=true,cause="",ttfb_ms=150,duration_ms=180`
			if i%5 == 2 {
				cause := "timeout"
				if region == "ap-south" {
					cause = "connect"
				}
				fields = fmt.Sprintf(`state="unhealthy",ok=false,cause=%q,ttfb_ms=0,duration_ms=5000`, cause)
			}
			fmt.Fprintf(&sb, "vigil_verdict,check=slowapi,region=%s,target=edge-c,tier=shallow,vantage=%s-1 %s %d\n",
				region, region, fields, at.UnixNano())
		}
	}
	db.write(t, sb.String())

	got := firing(t, db, provisionedRule(t, "vigil-ttfb-p95"), now.Add(time.Second))
	want := "slowapi × edge-c TTFB p95 over 10 minutes above 600 ms in 2 regions"
	if got["slowapi/edge-c/shallow"] != want {
		t.Errorf("slowapi/edge-c/shallow: summary %q, want %q (all firing: %v)", got["slowapi/edge-c/shallow"], want, got)
	}

	// The panels: the p95 reaches the timed-out runs' 5 s in eu-west and
	// us-east, not in ap-south.
	vars := map[string][]string{"region": {AllValue}, "check": {"slowapi"}}
	maxOf := func(dashboard, panel, refID, by string) map[string]float64 {
		t.Helper()
		out := map[string]float64{}
		for _, q := range Queries() {
			if q.Dashboard != dashboard || q.Panel != panel || q.RefID != refID {
				continue
			}
			res, err := db.query(Interpolate(q.Flux, vars, now.Add(-time.Hour), now.Add(time.Second), time.Minute))
			if err != nil {
				t.Fatalf("%s/%s: %v", dashboard, panel, err)
			}
			vi, bi := -1, -1
			for i, h := range res.header {
				switch h {
				case "_value":
					vi = i
				case by:
					bi = i
				}
			}
			if vi < 0 || bi < 0 {
				t.Fatalf("%s/%s: no _value or %s column in %v", dashboard, panel, by, res.header)
			}
			for _, row := range res.rows {
				if v, err := strconv.ParseFloat(row[vi], 64); err == nil {
					out[row[bi]] = max(out[row[bi]], v)
				}
			}
			return out
		}
		t.Fatalf("no query %s/%s/%s", dashboard, panel, refID)
		return nil
	}
	p95 := maxOf(DashboardCheck, "TTFB p50 / p95 by region", "B", "region")
	for _, region := range []string{"eu-west", "us-east"} {
		if p95[region] < 5000 {
			t.Errorf("TTFB p95 panel, %s: largest %g ms, want the timed-out runs' 5000 (every p95 by region: %v)", region, p95[region], p95)
		}
	}
	if p95["ap-south"] > 200 {
		t.Errorf("TTFB p95 panel, ap-south: largest %g ms, want 150 (connect failures are no sample)", p95["ap-south"])
	}
	if byCheck := maxOf(DashboardOverview, "TTFB p95 per check", "A", "check"); byCheck["slowapi"] < 5000 {
		t.Errorf("TTFB p95 per check panel: slowapi largest %g ms, want 5000 (every check: %v)", byCheck["slowapi"], byCheck)
	}
}
