package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestRollupCounts: the sums RollupCounts reads from whole hours and the
// minutes at the ends are those of the minutes themselves (SumRollups
// over Rollups) for ranges that start and end inside hours, with and
// without a step, per check, target and region; also in a file written
// before the hourly table existed (filled from the minutes at Open), and
// after pruning.
func TestRollupCounts(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 30, 12, 34, 56, 0, time.UTC)
	o := store.Options{Now: func() time.Time { return now }, Retention: 10 * 24 * time.Hour, RollupRetention: 10 * 24 * time.Hour}
	s := open(t, dir, o)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	var vs []reporting.Verdict
	for i := range 6000 {
		v := reporting.Verdict{Check: []string{"api", "web"}[i%2], Target: fmt.Sprintf("o%d", rng.IntN(3)), Region: []string{"eu", "us"}[rng.IntN(2)],
			Vantage: "v", State: reporting.StateHealthy, OK: true, At: now.Add(-time.Duration(rng.Int64N(int64(50 * time.Hour))))}
		if rng.IntN(7) == 0 {
			v.OK, v.State, v.Cause = false, reporting.StateUnhealthy, "status"
		}
		vs = append(vs, v)
	}
	for i := 0; i < len(vs); i += 500 {
		if err := s.Publish(ctx, vs[i:i+500]); err != nil {
			t.Fatal(err)
		}
	}
	queries := []struct {
		q    reporting.HistoryQuery
		step time.Duration
	}{
		{reporting.HistoryQuery{Check: "api", From: now.Add(-30 * time.Hour)}, 0},
		{reporting.HistoryQuery{Check: "api", Target: "o1", From: now.Add(-26*time.Hour - 17*time.Minute - 5*time.Second)}, 0},
		{reporting.HistoryQuery{Check: "web", From: now.Add(-49 * time.Hour)}, time.Hour},
		{reporting.HistoryQuery{Check: "web", From: now.Add(-49 * time.Hour)}, 24 * time.Hour},
		{reporting.HistoryQuery{Check: "web", From: now.Add(-3 * time.Hour), To: now.Add(-90 * time.Minute)}, 0},
		{reporting.HistoryQuery{Check: "api", From: now.Add(-20 * time.Minute)}, 0},             // inside one hour: minutes only
		{reporting.HistoryQuery{Check: "api", From: now.Add(-5 * time.Hour)}, 15 * time.Minute}, // not whole hours: minutes
		{reporting.HistoryQuery{From: now.Add(-60 * time.Hour)}, 0},
	}
	check := func(label string, st *store.Store) {
		t.Helper()
		for _, c := range queries {
			got, err := st.RollupCounts(ctx, c.q, c.step)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := st.Rollups(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			want := reporting.SumRollups(rs, c.q.From, c.step)
			if len(want) == 0 {
				t.Fatalf("%s: %+v: no rollups to compare", label, c.q)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %+v step %s:\ngot  %+v\nwant %+v", label, c.q, c.step, got, want)
			}
		}
	}
	check("written", s)
	s.Close()

	// A file from before the hourly table: the hours are filled at Open.
	db, err := sql.Open("sqlite", filepath.Join(dir, "vigil.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DROP TABLE rollups_hourly`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s2 := open(t, dir, o)
	check("filled at open", s2)

	// Pruning drops whole hours with their minutes only.
	now = now.Add(10*24*time.Hour - 20*time.Hour - 30*time.Minute)
	if err := s2.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	check("pruned", s2)
}
