package statuspage

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestCellSaysSince: through the embedded store, an unhealthy or degraded
// cell says since when its pair has been in that state ("down since 11:48
// UTC (12m 0s)", with the date when it began another day), on the overview
// and the check page, whose compact table of many targets says it too. A
// healthy cell, a stale one and one whose verdict does not say (written
// before since existed) say nothing: never 1970.
func TestCellSaysSince(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	since := func(v reporting.Verdict, ago time.Duration) reporting.Verdict {
		v.Since = t0.Add(-ago)
		return v
	}
	down, slow := reporting.StateUnhealthy, reporting.StateDegraded
	vs := []reporting.Verdict{
		since(verdict("api", "origin-a", "eu-west", down, "status", 5*time.Second), 12*time.Minute),
		since(verdict("api", "origin-a", "us-east", slow, "ttfb", 5*time.Second), 2*time.Hour+5*time.Minute),
		since(verdict("api", "origin-b", "eu-west", down, "connect_refused", 5*time.Second), 26*time.Hour),
		since(verdict("api", "origin-c", "eu-west", reporting.StateHealthy, "", 5*time.Second), 3*time.Hour),
		verdict("api", "origin-d", "eu-west", down, "status", 5*time.Second),
		since(verdict("api", "origin-e", "eu-west", down, "status", 2*time.Minute), 5*time.Minute),
	}
	// More targets than ManyTargets: the check page is compact.
	for i := range ManyTargets {
		vs = append(vs, since(verdict("api", fmt.Sprintf("fine-%02d", i), "eu-west", reporting.StateHealthy, "", 5*time.Second), time.Hour))
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, Options{Verdicts: st})
	want := map[string]string{
		"api|origin-a|eu-west": "down since 11:48 UTC (12m 0s)",
		"api|origin-a|us-east": "degraded since 09:55 UTC (2h 5m)",
		"api|origin-b|eu-west": "down since 2026-11-29 10:00 UTC (1d 2h)",
		"api|origin-c|eu-west": "",
		"api|origin-d|eu-west": "",
		"api|origin-e|eu-west": "", // stale: shown unknown
	}
	for _, path := range []string{"/", "/check/api"} {
		code, _, body := get(t, srv, path)
		if code != 200 {
			t.Fatalf("GET %s: %d", path, code)
		}
		if strings.Contains(body, "1970") || strings.Contains(body, "0001-01-01") {
			t.Errorf("GET %s: a zero since shown as a date", path)
		}
		cs := cells(t, parseHTML(t, body))
		for k, w := range want {
			c, ok := cs[k]
			if !ok {
				t.Fatalf("GET %s: no cell %s", path, k)
			}
			has := strings.Contains(c["text"], " since ")
			if w == "" && has || w != "" && !strings.Contains(c["text"], w) {
				t.Errorf("GET %s: cell %s (%s) reads %q; want %q", path, k, c["data-state"], c["text"], w)
			}
		}
		if !strings.Contains(body, `data-since="2026-11-30T11:48:00Z"`) {
			t.Errorf("GET %s: no data-since of origin-a's cell", path)
		}
	}
	_, _, body := get(t, srv, "/check/api")
	doc := parseHTML(t, body)
	rows := map[string]string{}
	for _, n := range findAll(doc, "data-target-row") {
		tg, _ := attr(n, "data-target-row")
		rows[tg] = text(n)
	}
	if len(rows) <= ManyTargets {
		t.Fatalf("check page: %d compact target rows, want every target's", len(rows))
	}
	for tg, w := range map[string]string{
		// The worst state over its regions, unhealthy, since when.
		"origin-a": "unhealthy down since 11:48 UTC (12m 0s)",
		"origin-b": "unhealthy down since 2026-11-29 10:00 UTC (1d 2h)",
		"origin-c": "",
		"origin-d": "",
	} {
		if w == "" && strings.Contains(rows[tg], "since") || w != "" && !strings.Contains(rows[tg], w) {
			t.Errorf("compact row %s reads %q, want %q", tg, rows[tg], w)
		}
	}
}

func TestFmtStateSince(t *testing.T) {
	for _, c := range []struct {
		s     reporting.State
		since time.Time
		want  string
	}{
		{reporting.StateUnhealthy, t0.Add(-12*time.Minute - 5*time.Second), "down since 11:47 UTC (12m 5s)"},
		{reporting.StateDegraded, t0.Add(-2 * time.Hour), "degraded since 10:00 UTC (2h 0m)"},
		{reporting.StateUnhealthy, t0.Add(-12*time.Hour - time.Second), "down since 2026-11-29 23:59 UTC (12h 0m)"},
		// A canary clock ahead of the page's: no negative age.
		{reporting.StateUnhealthy, t0.Add(3 * time.Second), "down since 12:00 UTC (0s)"},
	} {
		if got := fmtStateSince(c.s, c.since, t0); got != c.want {
			t.Errorf("fmtStateSince(%s, %v) = %q, want %q", c.s, c.since, got, c.want)
		}
	}
}
