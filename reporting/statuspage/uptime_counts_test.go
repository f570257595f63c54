package statuspage

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// minutesOnly hides the store's RollupCounts: the page then reads every
// minute, as it does from InfluxDB.
type minutesOnly struct{ reporting.HistorySource }

// TestUptimeFromSums: the uptime cells and the public page's days read
// from the store's sums (a few rows per series) equal those folded from
// every minute, over 40 days of runs of three targets in two regions.
func TestUptimeFromSums(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return t0 }, Log: slog.New(slog.DiscardHandler),
		Retention: 40 * 24 * time.Hour, RollupRetention: 40 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	var vs []reporting.Verdict
	for i := range 8000 {
		state, cause := reporting.StateHealthy, ""
		if rng.IntN(9) == 0 {
			state, cause = reporting.StateUnhealthy, "status"
		}
		v := verdict("web", fmt.Sprintf("o%d", rng.IntN(3)), []string{"eu", "us"}[rng.IntN(2)], state, cause,
			time.Duration(rng.Int64N(int64(40*24*time.Hour))))
		vs = append(vs, v)
		if i%1000 == 999 {
			if err := st.Publish(context.Background(), vs); err != nil {
				t.Fatal(err)
			}
			vs = vs[:0]
		}
	}
	if !reporting.CountsRollups(st) || reporting.CountsRollups(minutesOnly{st}) {
		t.Fatal("CountsRollups: want the store to count and the wrapper not to")
	}
	read := func(src reporting.HistorySource) ([]uptimeRow, []dayCell) {
		p, err := New(Options{Verdicts: src, Now: func() time.Time { return t0 }, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		rows, days, err := p.uptimeDays(context.Background(), "web", t0)
		if err != nil {
			t.Fatal(err)
		}
		return rows, days
	}
	sumRows, sumDays := read(st)
	minRows, minDays := read(minutesOnly{st})
	if len(sumRows) != 4 || sumRows[3].Cells[2].Total == 0 {
		t.Fatalf("rows from sums: %+v", sumRows)
	}
	if !reflect.DeepEqual(sumRows, minRows) {
		t.Errorf("uptime from sums:\n%+v\nfrom minutes:\n%+v", sumRows, minRows)
	}
	if !reflect.DeepEqual(sumDays, minDays) {
		t.Errorf("days from sums:\n%+v\nfrom minutes:\n%+v", sumDays, minDays)
	}
}
