package store

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// seedWeek writes, straight into dir's store, a week of a 1 s check
// ("busy") on 3 targets, rows raw verdicts in all (the newest at now), its
// rollups for 35 days, and a 30 s check ("other") beside it, then closes the
// store. The file has the layout of a version before readIndexes. It is the data a long-running agent has; Publish would take
// minutes to write it.
func seedWeek(tb testing.TB, dir string, now time.Time, rows int) {
	tb.Helper()
	s, err := Open(dir, Options{Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	// The layout before readIndexes: the Open that follows adds them.
	for _, ix := range readIndexes {
		if _, err := s.w.Exec("DROP INDEX " + ix.name); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := s.w.Exec("CREATE INDEX verdicts_series ON verdicts(check_name, target, region, at)"); err != nil {
		tb.Fatal(err)
	}
	targets := []string{"origin-a", "origin-b", "origin-c"}
	step := 7 * 24 * time.Hour / time.Duration(rows/len(targets))
	const batch = 20000
	for i := 0; i < rows; i += batch {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			tb.Fatal(err)
		}
		ins, err := tx.PrepareContext(ctx, insertVerdict)
		if err != nil {
			tb.Fatal(err)
		}
		for j := i; j < min(i+batch, rows); j++ {
			at := now.Add(-time.Duration(rows-1-j) / time.Duration(len(targets)) * step)
			v := reporting.Verdict{Check: "busy", Target: targets[j%len(targets)], Region: "eu-west", Vantage: "canary-1",
				State: reporting.StateHealthy, OK: j%97 != 0, StatusCode: 200, TTFB: time.Duration(j%400) * time.Millisecond,
				Interval: time.Second, At: at, Expires: at.Add(3 * time.Second)}
			if j%30 == 0 {
				v.Check, v.Interval = "other", 30*time.Second
			}
			if _, err := ins.ExecContext(ctx, verdictArgs(&v)...); err != nil {
				tb.Fatal(err)
			}
		}
		ins.Close()
		if err := tx.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
	h := ttfbHist{}
	h.add(120 * time.Millisecond)
	blob := h.encode()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for m := now.Add(-35 * 24 * time.Hour).Truncate(time.Minute); !m.After(now); m = m.Add(time.Minute) {
		for _, c := range []string{"busy", "other"} {
			for _, t := range targets {
				if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO rollups VALUES (?,?,?,?,60,1,0,7200000000,300000000,?)`,
					c, t, "eu-west", m.UnixNano(), blob); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// benchRows is VIGIL_BENCH_ROWS, default 300,000.
func benchRows() int {
	if n, err := strconv.Atoi(os.Getenv("VIGIL_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 300000
}

// BenchmarkHistoryLongRunning runs the reads of a check page (the last hour
// up to 50,000 verdicts, the last day up to 20,000, the uptime rollups), of
// the verdict history API for one target, and of a latency SLO rule, on a
// store holding a week of a 1 s check on 3 targets: VIGIL_BENCH_ROWS raw
// verdicts (default 300,000; a week is 1,814,400). Their cost must follow
// the window and the limit, not the history kept:
//
//	VIGIL_BENCH_ROWS=1814400 go test -run '^$' -bench HistoryLongRunning -benchtime 10x ./reporting/store
func BenchmarkHistoryLongRunning(b *testing.B) {
	dir := b.TempDir()
	now := time.Now().Truncate(time.Second)
	began := time.Now()
	seedWeek(b, dir, now, benchRows())
	b.Logf("seeded %d verdicts in %v", benchRows(), time.Since(began).Round(time.Millisecond))
	began = time.Now()
	s, err := Open(dir, Options{Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.Logf("opened in %v", time.Since(began).Round(time.Millisecond))
	<-s.indexed
	b.Logf("read indexes created in the background %v after Open", time.Since(began).Round(time.Millisecond))
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		q    reporting.HistoryQuery
		roll bool
	}{
		{"page-hour", reporting.HistoryQuery{Check: "busy", From: now.Add(-time.Hour), To: now, Limit: 50000}, false},
		{"page-day", reporting.HistoryQuery{Check: "busy", From: now.Add(-24 * time.Hour), To: now, Limit: 20000}, false},
		{"page-target-hour", reporting.HistoryQuery{Check: "busy", Target: "origin-b", From: now.Add(-time.Hour), To: now, Limit: 50000}, false},
		{"api-target-region", reporting.HistoryQuery{Check: "busy", Target: "origin-b", Region: "eu-west", From: now.Add(-time.Hour), To: now, Limit: 1000}, false},
		{"slo-5m", reporting.HistoryQuery{Check: "busy", Target: "origin-b", From: now.Add(-5 * time.Minute), To: now}, false},
		{"rollups-uptime-30d", reporting.HistoryQuery{Check: "busy", From: now.Add(-30 * 24 * time.Hour), To: now}, true},
		{"rollups-slo-1h", reporting.HistoryQuery{Check: "busy", Target: "origin-b", From: now.Add(-time.Hour), To: now}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := 0
			for i := 0; i < b.N; i++ {
				if bc.roll {
					r, err := s.Rollups(ctx, bc.q)
					if err != nil {
						b.Fatal(err)
					}
					n = len(r)
				} else {
					v, err := s.History(ctx, bc.q)
					if err != nil {
						b.Fatal(err)
					}
					n = len(v)
				}
			}
			b.ReportMetric(float64(n), "rows")
		})
	}
}
