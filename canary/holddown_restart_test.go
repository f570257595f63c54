package canary

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestHoldDownSurvivesRestart: a flapping pair is held unhealthy; its
// verdict goes through the embedded store (as a canary publishes it) and a
// restarted canary's machine is seeded from what the store returns. The
// origin is healthy again, yet the pair stays unhealthy until the hold-down
// ends and then needs rise + flap.extra_passes passes, as without the
// restart.
func TestHoldDownSurvivesRestart(t *testing.T) {
	p := testParams()
	p.Rise, p.Fall = 1, 1
	for _, tc := range []struct {
		name string
		// passes made after the hold-down started and before the restart
		// (one every interval, the first 2 s after the hold started)
		before int
		// passes after the hold-down, across the restart, until healthy
		want int
	}{
		// Restarted 2 s after the hold started (the reported case).
		{name: "restart during the hold", before: 1, want: 3},
		// Restarted after the hold ended, one of the 3 passes made.
		{name: "restart while recovering", before: 31, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(p)
			at := t0
			if got := feed(m, &at, "PFPFPF"); got != "HUHUHU" {
				t.Fatalf("flapping: %s", got)
			}
			holdEnd := m.HeldUntil()
			if holdEnd.IsZero() {
				t.Fatal("no hold-down")
			}
			var last Step
			passesAfterHold := 0
			at = at.Add(2*time.Second - p.Interval)
			for range tc.before {
				at = at.Add(p.Interval)
				last = m.Observe(at, Pass)
				if !at.Before(holdEnd) {
					passesAfterHold++
				}
			}
			if last.State != reporting.StateUnhealthy {
				t.Fatalf("before the restart: %s, want unhealthy", last.State)
			}

			st, err := store.Open(t.TempDir(), store.Options{Now: func() time.Time { return at },
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			v := reporting.Verdict{Check: "home", Target: "o1", Region: "eu", Vantage: "eu-1", State: last.State,
				OK: true, Streak: last.Streak, HeldUntil: last.HeldUntil, Interval: p.Interval, At: at, Expires: last.Expires}
			if err := st.Publish(context.Background(), []reporting.Verdict{v}); err != nil {
				t.Fatal(err)
			}
			vs, err := st.Verdicts(context.Background(), 0)
			if err != nil || len(vs) != 1 {
				t.Fatalf("verdicts from the store: %v, %v", vs, err)
			}
			if !vs[0].HeldUntil.Equal(holdEnd) {
				t.Fatalf("stored verdict held until %v, want %v", vs[0].HeldUntil, holdEnd)
			}

			restarted := NewMachine(p)
			restarted.Seed(vs[0])
			at = at.Add(2 * time.Second) // first run 2 s after the restart
			for n := 0; n < 60; n++ {
				st := restarted.Observe(at, Pass)
				if at.Before(holdEnd) {
					if st.State != reporting.StateUnhealthy {
						t.Fatalf("%s before the hold-down ends, after the restart: %s, want unhealthy",
							holdEnd.Sub(at), st.State)
					}
				} else {
					passesAfterHold++
					if st.State == reporting.StateHealthy {
						break
					}
				}
				at = at.Add(p.Interval)
			}
			if passesAfterHold != tc.want {
				t.Fatalf("healthy after %d passes past the hold-down, want %d (rise 1 + extra_passes 2)",
					passesAfterHold, tc.want)
			}
		})
	}
}
