package grafana

import (
	"fmt"
	gomath "math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Sample data: 3 regions × 2 checks × 2 targets, one run every 30 s over
// the last 30 minutes, plus proxy signals. edge-b is down in us-east and
// eu-west for the last 5 minutes; ap-south is slow (TTFB > 600 ms); every
// 10th run of edge-a in us-east fails its status assertion; every 10th run
// of edge-a in ap-south fails only its TTFB objective (slow, not down).
var (
	sampleRegions = []string{"ap-south", "eu-west", "us-east"}
	sampleChecks  = []string{"api", "home"}
	sampleTargets = []string{"edge-a", "edge-b"}
)

// blobEscaper escapes a line protocol string field's value.
var blobEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

func sampleLines(now time.Time) string {
	var sb strings.Builder
	const runs = 60
	start := now.Add(-30 * time.Minute)
	for i := 0; i < runs; i++ {
		at := start.Add(time.Duration(i) * 30 * time.Second)
		for _, region := range sampleRegions {
			for _, check := range sampleChecks {
				for _, target := range sampleTargets {
					state, ok, cause, errText, status := "healthy", true, "", "", 200
					switch {
					case target == "edge-b" && region != "ap-south" && i >= runs-10:
						state, ok, cause, errText, status = "unhealthy", false, "timeout", `context deadline exceeded after 5s`, 0
					case target == "edge-a" && region == "us-east" && i%10 == 3:
						state, ok, cause, errText, status = "degraded", false, "status", `status 503, want 200`, 503
					case target == "edge-a" && region == "ap-south" && i%10 == 5:
						state, ok, cause, errText = "degraded", false, "ttfb", `ttfb 690ms > 600ms`
					}
					ttfb := 120.0 + float64(i%7)*5
					if region == "ap-south" {
						ttfb += 560
					}
					fmt.Fprintf(&sb, "vigil_verdict,check=%s,region=%s,target=%s,tier=shallow,vantage=%s-1 "+
						"state=%q,ok=%t,cause=%q,status_code=%di,ttfb_ms=%g,duration_ms=%g,dns_ms=3,connect_ms=8,tls_ms=15,transfer_ms=12,"+
						"streak=%di,interval_ms=30000,expires=%di,artifact=\"\",err=%q,url=\"https://%s.example/health\",verdict_json=\"%s\" %d\n",
						check, region, target, region,
						state, ok, cause, status, ttfb, ttfb+12, 1+i%5,
						at.Add(time.Minute).UnixNano(), errText, target,
						// As reporting/influx writes it; the certificates expire in 90 days.
						blobEscaper.Replace(fmt.Sprintf(`{"s":%q,"ok":%t,"c":%q,"e":%q,"x":%d,"ce":%d}`,
							state, ok, cause, errText, at.Add(time.Minute).UnixNano(), now.Add(90*24*time.Hour).UnixNano())),
						at.UnixNano())
				}
			}
		}
		for _, region := range []string{"eu-west", "us-east"} {
			for _, origin := range sampleTargets {
				ejected := origin == "edge-b" && region == "eu-west" && i >= runs-10
				fmt.Fprintf(&sb, "vigil_signal,pool=web,origin=%s,region=%s,vantage=proxy-%s "+
					"requests=%di,status_5xx=%di,conn_errors=%di,timeouts=%di,p95_ms=%g,ejected=%t,window_ms=30000 %d\n",
					origin, region, region, 200+i, i%3, i%2, i%4/3, 80.0+float64(i), ejected, at.UnixNano())
			}
		}
	}
	return sb.String()
}

// TestEveryQueryReturnsRows runs every Flux query of every panel, variable
// and alert rule against a real InfluxDB 1.8 with sample data, with the
// variables substituted as Grafana does, and checks each returns rows.
func TestEveryQueryReturnsRows(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	db.write(t, sampleLines(now))

	cases := []struct {
		name string
		vars map[string][]string
	}{
		{"all regions", map[string][]string{"region": {AllValue}, "check": {"api"}}},
		{"two regions", map[string][]string{"region": {"eu-west", "us-east"}, "check": {"home"}}},
	}
	qs := Queries()
	if len(qs) < 20 {
		t.Fatalf("Queries() returned %d queries; every panel, variable and rule should be there", len(qs))
	}
	for _, q := range qs {
		for _, c := range cases {
			t.Run(q.Dashboard+"/"+q.Panel+"/"+q.RefID+"/"+c.name, func(t *testing.T) {
				flux := Interpolate(q.Flux, c.vars, now.Add(-time.Hour), now.Add(time.Second), time.Minute)
				if strings.Contains(flux, "${") || strings.Contains(flux, "v.timeRange") || strings.Contains(flux, "v.windowPeriod") {
					t.Fatalf("uninterpolated variable left in:\n%s", flux)
				}
				res, err := db.query(flux)
				if err != nil {
					t.Fatalf("%v\nquery:\n%s", err, flux)
				}
				// The sample's only slow runs are in ap-south.
				noSlow := q.Panel == "Recent slow runs" && !slices.Contains(c.vars["region"], AllValue)
				if len(res.rows) == 0 && !noSlow {
					t.Fatalf("no rows\nquery:\n%s", flux)
				}
			})
		}
	}
}

// TestQueryResults checks what the key panels and rules say about the
// sample data, not only that they answer.
func TestQueryResults(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	db.write(t, sampleLines(now))
	all := map[string][]string{"region": {AllValue}, "check": {"api"}}
	run := func(t *testing.T, dashboard, panel, refID string) *fluxResult {
		t.Helper()
		for _, q := range Queries() {
			if q.Dashboard == dashboard && q.Panel == panel && q.RefID == refID {
				flux := Interpolate(q.Flux, all, now.Add(-time.Hour), now.Add(time.Second), time.Minute)
				res, err := db.query(flux)
				if err != nil {
					t.Fatalf("%v\nquery:\n%s", err, flux)
				}
				return res
			}
		}
		t.Fatalf("no query %s/%s/%s", dashboard, panel, refID)
		return nil
	}
	col := func(t *testing.T, res *fluxResult, name string) int {
		t.Helper()
		i := slices.Index(res.header, name)
		if i < 0 {
			t.Fatalf("no column %q in %v", name, res.header)
		}
		return i
	}

	t.Run("matrix", func(t *testing.T) {
		res := run(t, DashboardOverview, "Verdict matrix (latest state, check × region)", "A")
		if len(res.rows) != len(sampleChecks) {
			t.Fatalf("rows = %d, want one per check (%d): %v", len(res.rows), len(sampleChecks), res.rows)
		}
		ci := col(t, res, "check")
		want := map[string]string{"ap-south": "0", "eu-west": "3", "us-east": "3"} // edge-b down in eu-west and us-east
		for _, row := range res.rows {
			for region, sev := range want {
				if got := row[col(t, res, region)]; got != sev {
					t.Errorf("check %s region %s: severity %s, want %s", row[ci], region, got, sev)
				}
			}
		}
	})
	t.Run("availability", func(t *testing.T) {
		res := run(t, DashboardOverview, "Availability over the range", "A")
		if len(res.rows) != len(sampleChecks) {
			t.Fatalf("rows = %v, want one per check", res.rows)
		}
		// Per check: 360 runs, 26 failed (20 timeouts, 6 status); the 6
		// slow-only runs count as available.
		for _, row := range res.rows {
			v := row[col(t, res, "_value")]
			if f, err := strconv.ParseFloat(v, 64); err != nil || gomath.Abs(f-100*334.0/360) > 0.01 {
				t.Errorf("check %s availability %s%%: want %.2f (slow-only runs available)", row[col(t, res, "check")], v, 100*334.0/360)
			}
		}
	})
	t.Run("failures by cause", func(t *testing.T) {
		res := run(t, DashboardCheck, "Failures by cause", "A")
		got := map[string]string{}
		for _, row := range res.rows {
			got[row[col(t, res, "cause")]] = row[col(t, res, "failures")]
		}
		// api: edge-b timeouts in 2 regions × 10 runs; edge-a us-east status every 10th of 60 runs.
		if got["timeout"] != "20" || got["status"] != "6" || got["ttfb"] != "" {
			t.Errorf("failures by cause = %v, want timeout 20, status 6 and no ttfb (slow is not down)", got)
		}
	})
	t.Run("recent failures", func(t *testing.T) {
		res := run(t, DashboardCheck, "Recent failures", "A")
		// 26 failed runs; the 6 slow-only ones (a failed TTFB objective)
		// are not failures (slow is not down).
		if len(res.rows) != 26 {
			t.Errorf("recent failures: %d rows, want 26", len(res.rows))
		}
		slow := run(t, DashboardCheck, "Recent slow runs", "A")
		if len(slow.rows) != 6 {
			t.Errorf("recent slow runs: %d rows, want 6", len(slow.rows))
		}
		for _, row := range slow.rows {
			if c := row[col(t, slow, "cause")]; c != "ttfb" {
				t.Errorf("slow run with cause %q", c)
			}
		}
		if c := col(t, res, "err"); !strings.Contains(res.rows[0][c], "deadline") {
			t.Errorf("newest failure err = %q, want the timeout", res.rows[0][c])
		}
		if c := col(t, res, "url"); res.rows[0][c] != "https://edge-b.example/health" {
			t.Errorf("newest failure url = %q", res.rows[0][c])
		}
	})
	t.Run("phases", func(t *testing.T) {
		res := run(t, DashboardCheck, "Phase breakdown (mean)", "A")
		for _, name := range []string{"dns", "connect", "tls", "wait", "transfer"} {
			col(t, res, name)
		}
	})
	t.Run("alert origin down", func(t *testing.T) {
		var q NamedQuery
		for _, x := range Queries() {
			if x.Dashboard == "alerting" && strings.HasPrefix(x.Panel, "Origin down") && x.RefID == "A" {
				q = x
			}
		}
		res, err := db.query(Interpolate(q.Flux, nil, now.Add(-5*time.Minute), now.Add(time.Second), time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.rows) != len(sampleChecks) {
			t.Fatalf("rows %v, want edge-b of each check", res.rows)
		}
		for _, row := range res.rows {
			if row[col(t, res, "target")] != "edge-b" || row[col(t, res, "_value")] != "2" {
				t.Errorf("row %v: want target edge-b down in 2 regions", row)
			}
		}
	})
	t.Run("alert ttfb p95", func(t *testing.T) {
		var q NamedQuery
		for _, x := range Queries() {
			if x.Dashboard == "alerting" && strings.HasPrefix(x.Panel, "TTFB p95") {
				q = x
			}
		}
		res, err := db.query(Interpolate(q.Flux, nil, now.Add(-10*time.Minute), now.Add(time.Second), time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		// One row per check × target: the number of regions whose p95 is
		// above the objective, only ap-south (slow for every pair).
		if len(res.rows) != len(sampleChecks)*len(sampleTargets) {
			t.Errorf("%d rows, want one per check × target: %v", len(res.rows), res.rows)
		}
		for _, row := range res.rows {
			if v := row[col(t, res, "_value")]; v != "1" {
				t.Errorf("%s → %s: %s regions above %g ms, want 1 (ap-south)", row[col(t, res, "check")], row[col(t, res, "target")], v, TTFBP95ThresholdMS)
			}
		}
	})
}
