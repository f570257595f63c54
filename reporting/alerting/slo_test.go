package alerting

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestSLOStatus(t *testing.T) {
	slos := []SLO{
		{Name: "avail", Check: "asset", Objective: 99, Window: time.Hour},
		{Name: "ttfb", Check: "asset", TTFBP95: 600 * time.Millisecond, Window: 5 * time.Minute},
	}
	h := newHarness(t, t0.Add(30*time.Second), Config{Quorum: 2}, slos)
	for m := t0.Add(-2 * time.Hour); !m.After(t0); m = m.Add(time.Minute) {
		for _, r := range []string{"eu", "us", "ap"} {
			st := H
			// eu fails 3 runs inside the window and 5 before it.
			if r == "eu" && (m.After(t0.Add(-3*time.Minute)) || (m.Before(t0.Add(-80*time.Minute)) && m.After(t0.Add(-86*time.Minute)))) {
				st = U
			}
			h.store.add(verdict("asset", "origin-a", r, m.Add(10*time.Second), st, time.Minute))
		}
	}
	got, err := h.a.SLOStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d statuses: %+v", len(got), got)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	av := got[0]
	if av.SLO != "avail" || av.Target != "origin-a" || av.Runs != 180 || av.Failed != 3 ||
		!near(av.Availability, 177.0/180) || !near(av.BudgetRemaining, 1-(3.0/180)/0.01) || av.Met {
		t.Fatalf("availability: %+v", av)
	}
	if len(av.Regions) != 3 || av.Regions[1].Region != "eu" || av.Regions[1].Runs != 60 || !near(av.Regions[1].Availability, 57.0/60) ||
		!near(av.Regions[0].BudgetRemaining, 1) {
		t.Fatalf("regions: %+v", av.Regions)
	}
	tt := got[1]
	if tt.SLO != "ttfb" || tt.TTFBP95 != 120*time.Millisecond || !tt.Met || len(tt.Regions) != 3 {
		t.Fatalf("ttfb: %+v", tt)
	}
}

// TestSLOStatusWithoutRuns: an SLO whose check has not run in its window
// (a new check, a yearly cron) is listed with no runs, so the status page
// shows it as such instead of "No SLO covers this check."
func TestSLOStatusWithoutRuns(t *testing.T) {
	slos := []SLO{
		{Name: "yearly-avail", Check: "yearly", Objective: 99.9, Window: 30 * 24 * time.Hour},
		{Name: "yearly-ttfb", Check: "yearly", Target: "origin-a", TTFBP95: 300 * time.Millisecond, Window: 5 * time.Minute},
	}
	h := newHarness(t, t0, Config{}, slos)
	h.store.add(verdict("asset", "origin-a", "eu", t0.Add(-time.Minute), H, time.Minute)) // another check runs
	got, err := h.a.SLOStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d statuses, want one per SLO: %+v", len(got), got)
	}
	av, tt := got[0], got[1]
	if av.SLO != "yearly-avail" || av.Check != "yearly" || av.Runs != 0 || av.Availability != -1 || !av.Met {
		t.Errorf("availability SLO without runs: %+v, want check yearly, 0 runs, availability -1, met", av)
	}
	if tt.SLO != "yearly-ttfb" || tt.Target != "origin-a" || tt.TTFBP95 != 0 || tt.TTFBObjective != 300*time.Millisecond || !tt.Met {
		t.Errorf("TTFB SLO without runs: %+v, want target origin-a, p95 0, objective 300ms, met", tt)
	}
}
