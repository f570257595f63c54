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

// TestSlowOnlyRunsDoNotBurnAvailability: an origin that answers 200 but
// slowly (every run fails only its ttfb objective: cause ttfb, state
// degraded) for 40 minutes, through the embedded store. The availability
// SLO stays at 100% with no failed run and no burn-rate alert (page or
// ticket) fires; the TTFB SLO alert does.
func TestSlowOnlyRunsDoNotBurnAvailability(t *testing.T) {
	clock := &fakeClock{t: t0.Add(-3 * time.Hour)}
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Retention: 30 * 24 * time.Hour,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const every = 30 * time.Second
	var vs []reporting.Verdict
	for at := t0.Add(-2 * time.Hour); !at.After(t0.Add(40 * time.Minute)); at = at.Add(every) {
		v := verdict("asset", "origin-a", "eu", at, H, every)
		v.StatusCode = 200
		if !at.Before(t0) {
			v.State, v.OK, v.Cause, v.Err = reporting.StateDegraded, false, reporting.CauseTTFB, "ttfb 700ms over 500ms"
			v.TTFB = 700 * time.Millisecond
		}
		vs = append(vs, v)
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	clock.Set(t0.Add(40*time.Minute + time.Second))
	slos := []SLO{
		{Name: "asset-avail", Check: "asset", Objective: 99},
		{Name: "asset-ttfb", Check: "asset", TTFBP95: 500 * time.Millisecond, Window: 5 * time.Minute},
	}
	a, err := New(Config{BurnRate: BurnRateRule{MinRuns: 5}, DeadMan: DeadManRule{Disabled: true}}, slos, st,
		Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if err := a.Evaluate(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, al := range a.Active() {
		rules = append(rules, al.Rule+"/"+al.Severity)
		if al.Rule == RuleBurnRate {
			t.Errorf("burn-rate alert for slow-only runs: %s", al.Summary)
		}
	}
	if len(rules) != 1 || rules[0] != RuleTTFB+"/"+SeverityTicket {
		t.Errorf("active alerts %v, want the ttfb SLO alert only", rules)
	}
	status, err := a.SLOStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range status {
		switch s.SLO {
		case "asset-avail":
			if s.Runs == 0 || s.Failed != 0 || s.Availability != 1 || !s.Met {
				t.Errorf("availability SLO: %d runs, %d failed, availability %v, met %v; want 100%% met",
					s.Runs, s.Failed, s.Availability, s.Met)
			}
		case "asset-ttfb":
			if s.Met || s.TTFBP95 != 700*time.Millisecond {
				t.Errorf("ttfb SLO: p95 %s, met %v; want 700ms, not met", s.TTFBP95, s.Met)
			}
		}
	}
}
