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
