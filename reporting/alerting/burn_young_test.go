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

// burnOnFreshStore runs a check every 30s into a fresh embedded SQLite
// store, one region, with run(i) the state of its i-th run, and returns
// when (after the first run) each burn-rate severity first fired; absent:
// never within the runs.
func burnOnFreshStore(t *testing.T, runs int, run func(i int) reporting.State) map[string]time.Duration {
	t.Helper()
	clock := &fakeClock{t: t0}
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Retention: 30 * 24 * time.Hour,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	slos := []SLO{{Name: "asset-availability", Check: "asset", Objective: 99.9}}
	a, err := New(Config{DeadMan: DeadManRule{Disabled: true}, QuorumLost: QuorumLostRule{Disabled: true}, Down: DownRule{Disabled: true}},
		slos, st, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	const every = 30 * time.Second
	first := clock.Now().Add(every)
	fired := map[string]time.Duration{}
	for i := range runs {
		now := clock.Add(every)
		if err := st.Publish(context.Background(), []reporting.Verdict{verdict("asset", "origin-a", "eu", now, run(i), every)}); err != nil {
			t.Fatal(err)
		}
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, al := range a.Active() {
			if _, ok := fired[al.Severity]; al.Rule == RuleBurnRate && !ok {
				fired[al.Severity] = now.Sub(first)
				t.Logf("%s fired after %s: %s", al.Severity, now.Sub(first), al.Summary)
			}
		}
	}
	return fired
}

// TestBurnRateYoungStore: on a fresh store an origin hit before it
// listened (one connect_refused) and then passing does not burn the error
// budget: the windows' ratios count the runs the check's interval makes in
// them, not only the 11 the store holds (before: 1 in 11 was a 90× burn
// over 1h/5m, 6h/30m and 1d/2h, 3d/6h, a page and a ticket at once).
func TestBurnRateYoungStore(t *testing.T) {
	fired := burnOnFreshStore(t, 40, func(i int) reporting.State {
		if i == 0 {
			return U
		}
		return H
	})
	if len(fired) != 0 {
		t.Fatalf("one failed first run then passes: burn-rate alerts %v, want none", fired)
	}
}

// TestBurnRateFailingFromStart: a check failing every run from its first
// pages as the README says: once it has burn_rate.min_runs (10) runs,
// 4m30s after the first at a 30s interval (10 of the 120 runs the 1h
// window expects is 83× a 99.9% budget, 10 of 10 over 5m 1000×).
func TestBurnRateFailingFromStart(t *testing.T) {
	fired := burnOnFreshStore(t, 20, func(int) reporting.State { return U })
	if d, ok := fired[SeverityPage]; !ok || d != 4*time.Minute+30*time.Second {
		t.Fatalf("failing every run: page after %v (fired %v), want 4m30s", d, fired)
	}
}
