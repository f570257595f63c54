package canary

import (
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestSeedHoldFollowsCurrentFlapConfig: a verdict published during a flap
// hold-down (HeldUntil 5m after it) seeds a machine whose flap damping was
// changed before the restart. The damping in force decides: switched off
// (flap.max_changes: 0), the pair is not held at all; with a shorter
// hold_down, the hold ends at the verdict's At + hold_down and recovery
// then needs rise + extra_passes passes.
func TestSeedHoldFollowsCurrentFlapConfig(t *testing.T) {
	at0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		flap FlapConfig
		// wantStates: the state after each pass, one every 30s after the restart
		wantStates   string
		wantHeldEnds time.Duration // HeldUntil reported by the first run (0: none)
	}{
		{name: "damping switched off", flap: FlapConfig{MaxChanges: 0},
			wantStates: "HHHH"},
		{name: "hold_down shortened to 1m", flap: FlapConfig{MaxChanges: 4, Window: 10 * time.Minute, HoldDown: time.Minute, ExtraPasses: 2},
			wantStates: "UUUH", wantHeldEnds: time.Minute},
		{name: "hold_down unchanged", flap: FlapConfig{MaxChanges: 4, Window: 10 * time.Minute, HoldDown: 5 * time.Minute, ExtraPasses: 2},
			wantStates: "UUUU", wantHeldEnds: 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(Params{Rise: 1, Fall: 1, Interval: 30 * time.Second, Flap: tc.flap})
			m.Seed(reporting.Verdict{State: reporting.StateUnhealthy, Streak: 1, At: at0,
				Expires: at0.Add(90 * time.Second), HeldUntil: at0.Add(5 * time.Minute)})
			at := at0
			var got []byte
			for i := range len(tc.wantStates) {
				at = at.Add(30 * time.Second)
				s := m.Observe(at, Pass)
				got = append(got, stateLetter(s.State))
				if i == 0 {
					var ends time.Duration
					if !s.HeldUntil.IsZero() {
						ends = s.HeldUntil.Sub(at0)
					}
					if ends != tc.wantHeldEnds {
						t.Errorf("first run after the restart reports held_until +%s, want +%s", ends, tc.wantHeldEnds)
					}
				}
			}
			if string(got) != tc.wantStates {
				t.Errorf("states after passes every 30s: %s, want %s", got, tc.wantStates)
			}
		})
	}
}

// TestSeedHoldFromExpiredVerdict: a verdict published during a flap
// hold-down that expired while the canary was stopped (longer than
// expire_after) still restores the hold: the pair stays unhealthy (held)
// until held_until, then needs rise + extra passes. Was: it started from
// unknown, turned healthy at once and its down alert resolved early.
func TestSeedHoldFromExpiredVerdict(t *testing.T) {
	at0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := NewMachine(Params{Rise: 1, Fall: 1, Interval: 30 * time.Second,
		Flap: FlapConfig{MaxChanges: 4, Window: 10 * time.Minute, HoldDown: 5 * time.Minute, ExtraPasses: 2}})
	m.SeedHold(reporting.Verdict{State: reporting.StateUnhealthy, Streak: 1, At: at0,
		Expires: at0.Add(90 * time.Second), HeldUntil: at0.Add(5 * time.Minute)})
	at := at0.Add(2 * time.Minute) // restarted after the verdict expired
	var got []byte
	for range 10 {
		at = at.Add(30 * time.Second)
		got = append(got, stateLetter(m.Observe(at, Pass).State))
	}
	// Held through the runs at +2.5m … +4.5m; from +5m rise (1) + extra
	// passes (2) = 3 passes: healthy at +6m.
	if string(got) != "UUUUUUUHHH" {
		t.Errorf("states after passes every 30s: %s, want held until +5m, then rise + extra passes", got)
	}
}

// TestRestoreKeepsHoldOfExpiredVerdict: Restore hands an expired verdict
// whose hold-down is not over to the pair's machine.
func TestRestoreKeepsHoldOfExpiredVerdict(t *testing.T) {
	cfg := testConfig(t, map[string]string{"x": "http://127.0.0.1:1"},
		CheckConfig{Name: "hz", Targets: []string{"x"}, HTTP: &checks.HTTPSpec{}})
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	now := c.now()
	c.Restore([]reporting.Verdict{{Check: "hz", Target: "x", Region: "test-region", Vantage: "v1",
		State: reporting.StateUnhealthy, Streak: 1, At: now.Add(-time.Minute), Expires: now.Add(-50 * time.Second),
		HeldUntil: now.Add(2 * time.Minute)}})
	e := c.byName[[2]string{"hz", "x"}]
	e.mu.Lock()
	held := e.machine.HeldUntil()
	e.mu.Unlock()
	if held.IsZero() {
		t.Fatal("the hold-down of an expired verdict was dropped at restore")
	}
}
