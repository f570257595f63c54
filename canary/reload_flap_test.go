package canary

import (
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// dampingOff is flap.max_changes: 0 as the config leaves it: the other
// flap keys keep their defaults.
var dampingOff = FlapConfig{MaxChanges: 0, Window: 10 * time.Minute, HoldDown: 5 * time.Minute, ExtraPasses: 2}

// TestSetParamsHoldFollowsNewFlapConfig: a pair is held down by flap
// damping (hold_down 5m, rise 2, extra_passes 2); 10 s into the hold a
// reload changes its flap damping, then the origin passes every 10 s. The
// new damping decides at once, as at a restart (Seed): switched off, the
// hold ends now and recovery needs rise passes; a shorter hold_down ends
// the hold at most hold_down after it began, then rise + extra_passes
// passes; a longer one does not lengthen the running hold.
func TestSetParamsHoldFollowsNewFlapConfig(t *testing.T) {
	base := testParams()
	base.Rise, base.Fall = 2, 1
	for _, tc := range []struct {
		name string
		flap FlapConfig
		// states after the passes made every 10 s after the reload
		want string
		// HeldUntil reported by the first run after the reload, from the
		// start of the hold (-1: none)
		wantHeld time.Duration
	}{
		{name: "damping switched off", flap: dampingOff,
			want: "UHHHHHHH", wantHeld: -1},
		{name: "hold_down shortened to 1m", flap: FlapConfig{MaxChanges: 4, Window: 10 * time.Minute, HoldDown: time.Minute, ExtraPasses: 2},
			want: "UUUUUUUH", wantHeld: time.Minute},
		{name: "hold_down shortened below the time already held", flap: FlapConfig{MaxChanges: 4, Window: 10 * time.Minute, HoldDown: 5 * time.Second, ExtraPasses: 2},
			want: "UUUHHHHH", wantHeld: 5 * time.Second},
		{name: "hold_down unchanged", flap: base.Flap,
			want: "UUUUUUUU", wantHeld: 5 * time.Minute},
		{name: "hold_down lengthened", flap: FlapConfig{MaxChanges: 4, Window: 10 * time.Minute, HoldDown: 10 * time.Minute, ExtraPasses: 2},
			want: "UUUUUUUU", wantHeld: 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(base)
			at := t0
			// Five changes into or out of unhealthy: the fifth starts the hold.
			if got := feed(m, &at, "PPFPPFPPF"); got != "?HUUHUUHU" {
				t.Fatalf("flapping: %s", got)
			}
			start := at
			if !m.HeldUntil().Equal(start.Add(5 * time.Minute)) {
				t.Fatalf("held until %v, want the hold's start + 5m", m.HeldUntil())
			}
			if got := feed(m, &at, "P"); got != "U" {
				t.Fatalf("during the hold: %s", got)
			}
			p := base
			p.Flap = tc.flap
			m.SetParams(p)
			var got []byte
			for i := range len(tc.want) {
				at = at.Add(10 * time.Second)
				st := m.Observe(at, Pass)
				got = append(got, stateLetter(st.State))
				if i == 0 {
					held := time.Duration(-1)
					if !st.HeldUntil.IsZero() {
						held = st.HeldUntil.Sub(start)
					}
					if held != tc.wantHeld {
						t.Errorf("first run after the reload reports held_until %s, want %s", fromStart(held), fromStart(tc.wantHeld))
					}
				}
			}
			if string(got) != tc.want {
				t.Errorf("states after passes every 10s: %s, want %s", got, tc.want)
			}
		})
	}
}

func fromStart(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return "the hold's start + " + d.String()
}

// TestSetParamsDampingOffWhileRecovering: the hold has ended but the pair
// still needs rise + extra_passes passes; a reload that switches damping
// off drops the extra passes: rise passes make it healthy.
func TestSetParamsDampingOffWhileRecovering(t *testing.T) {
	p := testParams()
	p.Rise, p.Fall = 2, 1
	p.ExpireAfter = time.Hour
	m := NewMachine(p)
	at := t0
	if got := feed(m, &at, "PPFPPFPPF"); got != "?HUUHUUHU" {
		t.Fatalf("flapping: %s", got)
	}
	at = m.HeldUntil().Add(-p.Interval)
	if got := feed(m, &at, "P"); got != "U" {
		t.Fatalf("first pass after the hold: %s, want U (rise 2 + extra 2)", got)
	}
	p.Flap = dampingOff
	m.SetParams(p)
	if got := feed(m, &at, "P"); got != "H" {
		t.Fatalf("after damping was switched off: %s, want H (rise 2)", got)
	}
}

// TestReloadEndsHoldDown: through a canary reload. A pair flaps into a
// 1h hold-down; a reload that sets checks[0].flap.max_changes: 0 (as the
// file would) ends it, so the next passing run is healthy, where before
// the reload passes kept it unhealthy.
func TestReloadEndsHoldDown(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	mk := func(flap *FlapConfig, keys ...string) *Config {
		cfg := &Config{
			Agent:    AgentConfig{Region: "test-region", Vantage: "v1", Concurrency: 4},
			Defaults: Defaults{Interval: time.Hour},
			Targets:  []TargetConfig{{Name: "o1", URL: o.URL()}},
			Checks: []CheckConfig{{Name: "c", Targets: []string{"o1"}, Rise: 1, Fall: 1, Flap: flap,
				HTTP: &checks.HTTPSpec{Path: "/healthz"}}},
		}
		cfg.SetKeys(keys)
		if err := cfg.ValidateAndSetDefaults(); err != nil {
			t.Fatalf("config: %v", err)
		}
		return cfg
	}
	cfg := mk(&FlapConfig{MaxChanges: 1, Window: 10 * time.Minute, HoldDown: time.Hour, ExtraPasses: 1})
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	run := func(step string) reporting.Verdict {
		t.Helper()
		v, err := c.Trigger("c", "o1")
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return v
	}
	if v := run("first pass"); v.State != reporting.StateHealthy {
		t.Fatalf("first pass: %s", v.State)
	}
	if err := o.SetMode(checktest.Mode503); err != nil {
		t.Fatal(err)
	}
	if v := run("failure"); v.State != reporting.StateUnhealthy {
		t.Fatalf("failure: %s", v.State)
	}
	if err := o.SetMode(checktest.ModeOK); err != nil {
		t.Fatal(err)
	}
	// The second change exceeds max_changes 1: held down for 1h.
	for i := range 2 {
		if v := run("pass during the hold"); v.State != reporting.StateUnhealthy || v.HeldUntil.IsZero() {
			t.Fatalf("pass %d during the hold: %s held until %v, want unhealthy and held", i+1, v.State, v.HeldUntil)
		}
	}

	cfg2 := mk(&FlapConfig{MaxChanges: 0}, "checks[0].flap.max_changes")
	c.Reload(cfg2, compile(t, cfg2))
	v := run("pass after the reload")
	if v.State != reporting.StateHealthy || !v.HeldUntil.IsZero() {
		t.Fatalf("pass after the reload: %s held until %v, want healthy (rise 1), not held", v.State, v.HeldUntil)
	}
}
