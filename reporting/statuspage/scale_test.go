package statuspage

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestFailuresCoverTheDayAtScale: the check page of a check on many
// targets lists a failure and a slow run of two hours ago although more
// than 20,000 passing runs of the other targets came after them (the page
// read failures among the newest 20,000 runs: ~11 minutes at 300 targets
// every 10 s, under a heading saying 24h). It is compact (ManyTargets): a
// row per target, no chart per target, refreshed every 30s at most.
func TestFailuresCoverTheDayAtScale(t *testing.T) {
	st := openStore(t)
	down := verdict("web", "o00", "eu", reporting.StateUnhealthy, "connect_refused", 2*time.Hour)
	down.Err = "connection refused"
	slow := verdict("web", "o01", "eu", reporting.StateDegraded, reporting.CauseTTFB, 2*time.Hour-time.Second)
	vs := []reporting.Verdict{down, slow}
	const targets, runs = 25, 810 // 20,250 passing runs in the last 100 minutes
	for i := range runs {
		for tg := range targets {
			v := verdict("web", fmt.Sprintf("o%02d", tg), "eu", reporting.StateHealthy, "", 100*time.Minute-time.Duration(i)*7400*time.Millisecond-time.Duration(tg)*time.Millisecond)
			vs = append(vs, v)
		}
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: st})
	code, _, body := get(t, srv, "/check/web")
	if code != http.StatusOK {
		t.Fatalf("GET /check/web = %d\n%s", code, body)
	}
	doc := parseHTML(t, body)
	list := func(id string) []string {
		var out []string
		for _, n := range findAll(doc, "data-cause") {
			if !inside(n, id) {
				continue
			}
			tg, _ := attr(n, "data-target")
			c, _ := attr(n, "data-cause")
			out = append(out, tg+":"+c)
		}
		return out
	}
	if got := list("failure-list"); len(got) != 1 || got[0] != "o00:connect_refused" {
		t.Errorf("recent failures = %q, want the failure of 2h ago (o00:connect_refused)", got)
	}
	if got := list("slow-list"); len(got) != 1 || got[0] != "o01:ttfb" {
		t.Errorf("recent slow runs = %q, want the slow run of 2h ago (o01:ttfb)", got)
	}
	if n := len(findAll(doc, "data-target-row")); n != targets {
		t.Errorf("compact page: %d target rows, want %d", n, targets)
	}
	if n := len(findAll(doc, "data-chart-target")); n != 0 {
		t.Errorf("compact page: %d charts, want none (a row per target)", n)
	}
	if !strings.Contains(body, `data-refresh-ms="30000"`) {
		t.Errorf("compact page: want data-refresh-ms=30000 (BigPageRefresh)")
	}
	rows := findAll(doc, "data-target-row")
	if len(rows) > 0 {
		if s, _ := attr(rows[0], "data-state"); s != string(reporting.StateHealthy) {
			t.Errorf("first target row state %q", s)
		}
		if h := text(rows[0]); !strings.Contains(h, "42 ms 42 ms") {
			t.Errorf("first target row %q: want its TTFB mean and p95 42ms", h)
		}
	}

	// A target's own page is the full one.
	_, _, one := get(t, srv, "/check/web?target=o03")
	if d := parseHTML(t, one); len(findAll(d, "data-chart-target")) != 1 || len(findAll(d, "data-target-row")) != 0 {
		t.Errorf("?target=: want one chart and no compact table")
	}
}

// TestChartNeverClaimsAWindowItDidNotRead: when the chart window holds more
// raw runs than the page reads (DefaultHistoryLimit), the chart is drawn
// from per-minute rollups over the whole window and says why, and the
// phase breakdown names the span its runs cover.
func TestChartNeverClaimsAWindowItDidNotRead(t *testing.T) {
	defer func(n int) { historyLimit = n }(historyLimit)
	historyLimit = 60
	st := openStore(t)
	var vs []reporting.Verdict
	for i := range 360 { // one run every 10 s over the last hour
		vs = append(vs, verdict("web", "a", "eu", reporting.StateHealthy, "", time.Hour-time.Duration(i)*10*time.Second))
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: st})
	_, _, body := get(t, srv, "/check/web")
	if !strings.Contains(body, "from per-minute rollups (the window holds more than the 60 runs a page reads raw)") {
		t.Errorf("chart of 1h over 60 of its 360 runs: want it drawn from rollups, saying why")
	}
	if want := "average of the last " + fmtDur(600*time.Second); !strings.Contains(body, want) {
		i := strings.Index(body, "average of the last")
		t.Errorf("phase breakdown: want %q (the span of the 60 runs read), got %q", want, body[i:min(i+40, len(body))])
	}
}

func inside(n *html.Node, id string) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if v, ok := attr(p, "id"); ok && v == id {
			return true
		}
	}
	return false
}
