package store

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestFailedRunsReadTheirIndex: a read of a check's (or a check ×
// target's) failed runs searches the partial index of failed runs, on a
// new file and on one of an older layout indexed in the background once
// that is done; without it the planner walked every run of the window
// (8 s for a day of 300 targets with no failure).
func TestFailedRunsReadTheirIndex(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	from, to := now.Add(-24*time.Hour).UnixNano(), now.UnixNano()
	check := func(t *testing.T, s *Store) {
		t.Helper()
		if !s.failedIndexed.Load() {
			t.Fatal("the failed-run indexes are not marked as present")
		}
		for _, c := range []struct {
			q     reporting.HistoryQuery
			index string
		}{
			{reporting.HistoryQuery{Check: "c", Runs: reporting.FailedRuns, Limit: 30}, "verdicts_check_failed_at"},
			{reporting.HistoryQuery{Check: "c", Runs: reporting.DownRuns, Limit: 20}, "verdicts_check_failed_at"},
			{reporting.HistoryQuery{Check: "c", Target: "t", Runs: reporting.SlowRuns, Limit: 30}, "verdicts_target_failed_at"},
		} {
			query, args := historySQLIndexed(c.q, from, to, s.failedIndexed.Load())
			if p := plan(t, s, query, args); !strings.Contains(p, "INDEX "+c.index) || strings.Contains(p, "TEMP B-TREE") {
				t.Errorf("%+v: plan\n%s\nwant a search of %s and no sort", c.q, p, c.index)
			}
		}
		// And it answers: the one failure among passing runs.
		got, err := s.History(context.Background(), reporting.HistoryQuery{Check: "c", From: now.Add(-24 * time.Hour), To: now, Runs: reporting.FailedRuns, Limit: 30})
		if err != nil || len(got) != 1 || got[0].Target != "t" {
			t.Errorf("failed runs: %v %+v", err, got)
		}
	}
	publish := func(t *testing.T, s *Store) {
		var vs []reporting.Verdict
		for i := range 60 {
			vs = append(vs, reporting.Verdict{Check: "c", Target: []string{"t", "u"}[i%2], Region: "r", State: reporting.StateHealthy, OK: true,
				At: now.Add(-time.Duration(60-i) * time.Minute)})
		}
		vs[10].OK, vs[10].State, vs[10].Cause = false, reporting.StateUnhealthy, "status"
		if err := s.Publish(context.Background(), vs); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("new file", func(t *testing.T) {
		s, err := Open(t.TempDir(), Options{Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		publish(t, s)
		check(t, s)
	})
	t.Run("older layout, indexed in the background", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, Options{Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		publish(t, s)
		for _, q := range []string{"DROP INDEX verdicts_check_failed_at", "DROP INDEX verdicts_target_failed_at"} {
			if _, err := s.w.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		defer func(n int64) { indexInBackground = n }(indexInBackground)
		indexInBackground = 30
		s, err = Open(dir, Options{Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		select {
		case <-s.indexed:
		case <-time.After(10 * time.Second):
			t.Fatal("indexing did not end within 10 s")
		}
		check(t, s)
	})
}
