package statuspage

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestUptimeSaysHowMuchHistoryItCovers: an uptime column whose window
// reaches back before the stored history (a check added 2 hours ago, a
// store keeping less than 30 days) says over how much it was counted, on
// the check page ("over the last 2h 0m only", data-covered) and in
// /api/v1/slos (covered_seconds), instead of passing 2 hours off as 30
// days; history older than the window covers it whole, whatever gaps it
// has inside.
func TestUptimeSaysHowMuchHistoryItCovers(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var vs []reporting.Verdict
	vs = append(vs, runs("web", "new", "eu", 2*time.Hour, 30, 3)...) // history starts 2h ago
	vs = append(vs, runs("web", "old", "eu", time.Hour, 10, 0)...)
	vs = append(vs, runs("web", "old", "eu", 8*24*time.Hour, 10, 0)...) // and 8 days ago: a gap between
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: st})

	// The first run is 2h + 30s before t0; its minute starts up to a
	// minute earlier.
	lo, hi := int64((2*time.Hour+30*time.Second)/time.Second), int64((2*time.Hour+90*time.Second)/time.Second)
	day, week, month := int64(86400), int64(7*86400), int64(30*86400)
	eightDays := [2]int64{8*day + 10, 8*day + 70}
	want := map[string][3][2]int64{ // target → per window, covered_seconds within [lo, hi]
		"new": {{lo, hi}, {lo, hi}, {lo, hi}},
		"old": {{day, day}, {week, week}, eightDays},
		"":    {{day, day}, {week, week}, eightDays},
	}
	code, reports, body := getReports(t, srv, srv.URL+"/api/v1/slos?check=web")
	if code != 200 {
		t.Fatalf("GET /api/v1/slos?check=web: %d\n%s", code, body)
	}
	if len(reports) != 3 {
		t.Fatalf("%d reports, want new, old and all targets\n%s", len(reports), body)
	}
	for _, r := range reports {
		w := want[r.Target]
		for i, u := range r.Uptime {
			if c := u.CoveredSeconds; c < w[i][0] || c > w[i][1] {
				t.Errorf("api: target %q %s: covered_seconds %d, want %d..%d", r.Target, u.Window, c, w[i][0], w[i][1])
			}
		}
	}

	_, _, page := get(t, srv, "/check/web")
	for _, n := range findAll(parseHTML(t, page), "data-uptime-target") {
		tg, _ := attr(n, "data-uptime-target")
		win, _ := attr(n, "data-window")
		cov, _ := attr(n, "data-covered")
		i := map[string]int{"24h": 0, "7d": 1, "30d": 2}[win]
		w := want[tg][i]
		c, err := strconv.ParseInt(cov, 10, 64)
		if err != nil || c < w[0] || c > w[1] {
			t.Errorf("page: target %q %s: data-covered %q, want %d..%d", tg, win, cov, w[0], w[1])
		}
		full := map[string]int64{"24h": day, "7d": week, "30d": month}[win]
		partial := w[1] < full-60
		txt := text(n)
		if has := strings.Contains(txt, "over the last"); has != partial {
			t.Errorf("page: target %q %s: %q; want the covered span said: %v", tg, win, txt, partial)
		}
		if tg == "new" && !strings.Contains(txt, "over the last 2h ") {
			t.Errorf("page: target new %s: %q, want it counted over the last 2h", win, txt)
		}
	}
}
