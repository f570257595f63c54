package store

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// plan returns SQLite's EXPLAIN QUERY PLAN for query, one step a line.
func plan(t *testing.T, s *Store, query string, args []any) string {
	t.Helper()
	rows, err := s.r.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestHistoryReadsUseTimeIndex: the reads of a check page, the history API
// and the alerter search an index on the filter's columns followed by the
// time, and need no sort: a week of a 1 s check on 3 targets (1.8 M rows)
// made a check page read every row of the check and sort them (1.2 CPU-s a
// render, every 5 s). Checked on a new file and on files written with the
// older layout (verdicts_series only), which Open upgrades: a large one in
// the background, saying so.
func TestHistoryReadsUseTimeIndex(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	from, to := now.Add(-time.Hour).UnixNano(), now.UnixNano()
	history := []struct {
		name string
		q    reporting.HistoryQuery
	}{
		{"check page", reporting.HistoryQuery{Check: "c", Limit: 50000}},
		{"check page, one target", reporting.HistoryQuery{Check: "c", Target: "t", Limit: 50000}},
		{"API, target and region", reporting.HistoryQuery{Check: "c", Target: "t", Region: "r", Limit: 1000}},
		{"API, region", reporting.HistoryQuery{Check: "c", Region: "r", Limit: 1000}},
		{"alert rule", reporting.HistoryQuery{Check: "c", Target: "t"}},
		{"whole check", reporting.HistoryQuery{Check: "c"}},
	}
	rollups := []struct {
		name string
		q    reporting.HistoryQuery
	}{
		{"SLO", reporting.HistoryQuery{Check: "c", Target: "t"}},
		{"SLO, region", reporting.HistoryQuery{Check: "c", Target: "t", Region: "r"}},
	}
	timeRange := regexp.MustCompile(`SEARCH \w+ USING (PRIMARY KEY|(COVERING )?INDEX \w+) \(check_name=\? .*\b(at|minute)>\? AND (at|minute)<\?\)`)
	check := func(t *testing.T, s *Store) {
		for _, tc := range history {
			query, args := historySQL(tc.q, from, to)
			p := plan(t, s, query, args)
			if !timeRange.MatchString(p) || strings.Contains(p, "TEMP B-TREE") {
				t.Errorf("history, %s: plan\n%s\nwant a search of an index on check_name … at using the at range, and no temp b-tree", tc.name, p)
			}
		}
		for _, tc := range rollups {
			query, args := rollupsSQL(tc.q, from, to)
			if p := plan(t, s, query, args); !timeRange.MatchString(p) {
				t.Errorf("rollups, %s: plan\n%s\nwant a search of an index on check_name, target(, region), minute using the minute range", tc.name, p)
			}
		}
	}

	t.Run("new file", func(t *testing.T) {
		s, err := Open(t.TempDir(), Options{Now: clock, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		check(t, s)
	})

	for _, tc := range []struct {
		name       string
		background int64 // indexInBackground
	}{
		{"small file of the older layout: indexed at Open", 1000},
		{"large file of the older layout: indexed in the background", 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, Options{Now: clock, Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"DROP INDEX verdicts_check_at", "DROP INDEX verdicts_target_at", "DROP INDEX rollups_target",
				"CREATE INDEX verdicts_series ON verdicts(check_name, target, region, at)"} {
				if _, err := s.w.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			var vs []reporting.Verdict
			for i := range 30 {
				vs = append(vs, reporting.Verdict{Check: "c", Target: []string{"t", "u", "w"}[i%3], Region: "r", State: reporting.StateHealthy,
					OK: true, At: now.Add(-time.Duration(30-i) * time.Minute)})
			}
			if err := s.Publish(context.Background(), vs); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			defer func(n int64) { indexInBackground = n }(indexInBackground)
			indexInBackground = tc.background
			var log logBuf
			s, err = Open(dir, Options{Now: clock, Log: slog.New(slog.NewTextHandler(&log, nil))})
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
			var lines []string
			if tc.background <= 30 {
				lines = []string{"store: indexing the stored history in the background for faster reads (once, after an upgrade)",
					"verdicts=30", "store: indexed the stored history"}
			}
			for _, want := range lines {
				if !strings.Contains(log.String(), want) {
					t.Errorf("log lacks %q:\n%s", want, log.String())
				}
			}
			if len(lines) == 0 && strings.Contains(log.String(), "index") {
				t.Errorf("a small file's indexing is logged:\n%s", log.String())
			}
			var n int
			if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name='verdicts_series'`).Scan(&n); err != nil || n != 0 {
				t.Errorf("verdicts_series still there (%d, %v): it costs every write and no read uses it", n, err)
			}
			got, err := s.History(context.Background(), reporting.HistoryQuery{Check: "c", Target: "u", From: now.Add(-time.Hour), Limit: 3})
			if err != nil || len(got) != 3 || got[0].Target != "u" || !got[0].At.Before(got[2].At) || !got[2].At.Equal(now.Add(-2*time.Minute)) {
				t.Errorf("History(c, u, limit 3) after the upgrade = %+v, %v; want u's newest 3, oldest first", got, err)
			}
		})
	}
}
