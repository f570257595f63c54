package alerting

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// minutesOnly hides the store's RollupCounts: readers then read every
// minute, as from InfluxDB.
type minutesOnly struct{ reporting.HistorySource }

// TestSLOStatusFromSums: the error-budget standings read from the store's
// sums (whole hours and the minutes at the ends) equal those folded from
// every minute, for a 30-day and a 3-day SLO over 20 days of runs.
func TestSLOStatusFromSums(t *testing.T) {
	clock := &fakeClock{t: t0}
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Retention: 40 * 24 * time.Hour, RollupRetention: 40 * 24 * time.Hour,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	var vs []reporting.Verdict
	for range 6000 {
		s := H
		if rng.IntN(11) == 0 {
			s = U
		}
		at := t0.Add(-time.Duration(rng.Int64N(int64(20 * 24 * time.Hour))))
		vs = append(vs, verdict("asset", []string{"origin-a", "origin-b"}[rng.IntN(2)], []string{"eu", "us"}[rng.IntN(2)], at, s, time.Minute))
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	slos := []SLO{{Name: "month", Check: "asset", Objective: 99.9, Window: 30 * 24 * time.Hour},
		{Name: "days", Check: "asset", Target: "origin-b", Objective: 99, Window: 3*24*time.Hour + 17*time.Minute}}
	status := func(src reporting.HistorySource) []SLOStatus {
		a, err := New(Config{DeadMan: DeadManRule{Disabled: true}}, slos, src, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(context.Background())
		out, err := a.SLOStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].SLO+out[i].Target < out[j].SLO+out[j].Target })
		for i := range out {
			sort.Slice(out[i].Regions, func(x, y int) bool { return out[i].Regions[x].Region < out[i].Regions[y].Region })
		}
		return out
	}
	if !reporting.CountsRollups(st) {
		t.Fatal("the store does not count rollups")
	}
	sums, minutes := status(st), status(minutesOnly{st})
	if len(sums) != 3 || sums[0].Runs == 0 {
		t.Fatalf("standings from sums: %+v", sums)
	}
	if !reflect.DeepEqual(sums, minutes) {
		t.Errorf("from sums:\n%+v\nfrom minutes:\n%+v", sums, minutes)
	}
}
