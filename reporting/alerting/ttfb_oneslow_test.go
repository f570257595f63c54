package alerting

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestTTFBOneSlowRunNoBreach: the TTFB rule and /api/v1/slos' met need at
// least 2 runs over the objective besides a p95 over it. With the defaults
// (a 5m window of a 30s check: 10 runs) the nearest-rank p95 is the
// slowest run, so one run at 1,002 ms made VigilTTFBSLOBreach fire and
// the SLO read "not met" for the 5 minutes it stayed in the window. A
// second slow run breaches. Run over the embedded SQLite store.
func TestTTFBOneSlowRunNoBreach(t *testing.T) {
	clock := &fakeClock{t: t0}
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Retention: 24 * time.Hour,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	slos := []SLO{{Name: "asset-ttfb", Check: "asset", TTFBP95: 600 * time.Millisecond, Window: 5 * time.Minute}}
	a, err := New(Config{Quorum: 1, DeadMan: DeadManRule{Disabled: true}, QuorumLost: QuorumLostRule{Disabled: true}},
		slos, st, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	const every = 30 * time.Second
	run := func(ttfb time.Duration) {
		t.Helper()
		now := clock.Add(every)
		v := verdict("asset", "origin-a", "eu", now, H, every)
		v.TTFB = ttfb
		if err := st.Publish(context.Background(), []reporting.Verdict{v}); err != nil {
			t.Fatal(err)
		}
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	state := func() (ttfbAlerts int, met bool) {
		t.Helper()
		for _, al := range a.Active() {
			if al.Rule == RuleTTFB {
				ttfbAlerts++
			}
		}
		ss, err := a.SLOStatus(context.Background())
		if err != nil || len(ss) != 1 {
			t.Fatalf("SLOStatus: %v %+v", err, ss)
		}
		return ttfbAlerts, ss[0].Met
	}
	for range 12 {
		run(120 * time.Millisecond)
	}
	run(1002 * time.Millisecond)
	// The slow run stays in the window for 5 minutes (10 runs).
	for i := range 10 {
		if n, met := state(); n != 0 || !met {
			t.Fatalf("one slow run of 10, %d runs after it: %d ttfb alerts, met %v; want none, met", i, n, met)
		}
		run(120 * time.Millisecond)
	}
	// Two slow runs in the window breach.
	run(1002 * time.Millisecond)
	run(900 * time.Millisecond)
	if n, met := state(); n != 1 || met {
		t.Fatalf("two slow runs of 10: %d ttfb alerts, met %v; want one alert, not met", n, met)
	}
}
