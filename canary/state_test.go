package canary

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testParams() Params {
	return Params{Rise: 2, Fall: 3, Interval: 10 * time.Second, ExpireAfter: 30 * time.Second,
		Flap: FlapConfig{MaxChanges: 4, Window: 10 * time.Minute, HoldDown: 5 * time.Minute, ExtraPasses: 2}}
}

// feed runs outcomes (P pass, S slow, F fail) one interval apart and
// returns the state after each as a letter: ? unknown, H healthy,
// D degraded, U unhealthy.
func feed(m *Machine, at *time.Time, seq string) string {
	var b strings.Builder
	for _, ch := range seq {
		o := map[rune]Outcome{'P': Pass, 'S': Slow, 'F': Fail}[ch]
		*at = at.Add(m.Params().Interval)
		st := m.Observe(*at, o)
		b.WriteByte(stateLetter(st.State))
	}
	return b.String()
}

func stateLetter(s reporting.State) byte {
	switch s {
	case reporting.StateHealthy:
		return 'H'
	case reporting.StateDegraded:
		return 'D'
	case reporting.StateUnhealthy:
		return 'U'
	}
	return '?'
}

func TestMachineTransitions(t *testing.T) {
	cases := []struct {
		name string
		seq  string
		want string
	}{
		{"rise from unknown", "PP", "?H"},
		{"fall from unknown", "FFF", "??U"},
		{"fail breaks the pass streak", "PFPP", "???H"},
		{"healthy survives fall-1 failures", "PPFFP", "?HHHH"},
		{"healthy to unhealthy after fall", "PPFFF", "?HHHU"},
		{"unhealthy back to healthy after rise", "FFFPP", "??UUH"},
		{"slow runs from healthy degrade after fall", "PPSSS", "?HHHD"},
		{"degraded back to healthy after rise", "PPSSSPP", "?HHHDDH"},
		{"degraded to unhealthy after fall failures", "PPSSSFFF", "?HHHDDDU"},
		{"slow and fail mixed below fall from healthy degrade", "PPSFS", "?HHHD"},
		{"unhealthy origin answering slowly is degraded after rise", "FFFSS", "??UUD"},
		{"unknown origin answering slowly is degraded after rise", "SS", "?D"},
		{"a pass between slow runs keeps unknown until rise passes", "SPP", "??H"},
		{"fall failures from degraded even after a pass", "PPSSSPFFF", "?HHHDDDDU"},
		// Rule 6 (rise 2, fall 3): rise+fall-1 = 4 undecided runs with a
		// fail among them leave unknown for unhealthy.
		{"an origin failing every other run is unhealthy, not unknown", "PFPFPF", "???UUU"},
		{"fail-first alternation too", "FPFPFP", "???UUU"},
		{"once unhealthy, alternation keeps it there until rise passes", "PFPFPFPP", "???UUUUH"},
		{"slow runs alone never make it unhealthy", "SPSPSP", "??DDDD"},
		{"a fail then rise passes is healthy", "FPP", "??H"},
		// Rule 7 (fall 3): 3 fails among the last 5 runs make a healthy or
		// degraded origin unhealthy, so alternation reads as from unknown.
		{"alternation from healthy is unhealthy once most recent runs failed", "PPFPFPF", "?HHHHHU"},
		{"it stays unhealthy until rise passes", "PPFPFPFPFPP", "?HHHHHUUUUH"},
		{"one fail in three from healthy stays healthy", "PPFPPFPPFPP", "?HHHHHHHHHH"},
		{"alternation from degraded is unhealthy too", "PPSSSFPFPF", "?HHHDDDDDU"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(testParams())
			at := t0
			if got := feed(m, &at, tc.seq); got != tc.want {
				t.Fatalf("%s: states %s, want %s", tc.seq, got, tc.want)
			}
		})
	}
}

// TestMachineUndecidedCountsFromExpiry: rule 6 counts the runs since the
// pair became unknown; runs before an expiry do not count.
func TestMachineUndecidedCountsFromExpiry(t *testing.T) {
	m := NewMachine(testParams())
	at := t0
	if got := feed(m, &at, "PFP"); got != "???" {
		t.Fatalf("PFP: %s, want ???", got)
	}
	at = at.Add(time.Minute) // past expire_after: unknown again, counting from zero
	if got := feed(m, &at, "FPF"); got != "???" {
		t.Fatalf("after expiry FPF: %s, want ??? (3 runs since it became unknown, rise+fall-1 = 4)", got)
	}
	if got := feed(m, &at, "P"); got != "U" {
		t.Fatalf("fourth undecided run: %s, want U", got)
	}
}

func TestMachineStreakAndExpires(t *testing.T) {
	m := NewMachine(testParams())
	at := t0
	var st Step
	for i, o := range []Outcome{Pass, Pass, Pass, Fail, Slow} {
		at = at.Add(10 * time.Second)
		st = m.Observe(at, o)
		want := []int{1, 2, 3, 1, 2}[i]
		if st.Streak != want {
			t.Fatalf("run %d: streak %d, want %d", i, st.Streak, want)
		}
	}
	if !st.Expires.Equal(at.Add(30 * time.Second)) {
		t.Fatalf("expires %v, want at+30s", st.Expires)
	}
}

func TestMachineExpiryToUnknown(t *testing.T) {
	m := NewMachine(testParams())
	at := t0
	if got := feed(m, &at, "PP"); got != "?H" {
		t.Fatalf("got %s", got)
	}
	if s := m.State(at.Add(29 * time.Second)); s != reporting.StateHealthy {
		t.Fatalf("before expiry: %s", s)
	}
	if s := m.State(at.Add(30 * time.Second)); s != reporting.StateUnknown {
		t.Fatalf("at expiry: %s, want unknown", s)
	}
	// A run after expiry starts from unknown: one pass is not enough.
	at = at.Add(time.Minute)
	st := m.Observe(at, Pass)
	if st.From != reporting.StateUnknown || st.State != reporting.StateUnknown {
		t.Fatalf("after expiry: from %s to %s, want unknown → unknown", st.From, st.State)
	}
	if st = m.Observe(at.Add(time.Second), Pass); st.State != reporting.StateHealthy {
		t.Fatalf("second pass: %s", st.State)
	}
}

func TestMachineFlapHoldDown(t *testing.T) {
	p := testParams()
	p.Rise, p.Fall = 1, 1
	m := NewMachine(p)
	at := t0
	// P: unknown→H (not counted); then F,P,F,P = 4 changes (allowed),
	// the 5th change (F) exceeds MaxChanges 4 and starts the hold-down.
	if got := feed(m, &at, "PFPFP"); got != "HUHUH" {
		t.Fatalf("before hold: %s", got)
	}
	at = at.Add(10 * time.Second)
	st := m.Observe(at, Fail)
	if st.State != reporting.StateUnhealthy || !st.HeldDown {
		t.Fatalf("5th change: %s held=%v, want unhealthy held", st.State, st.HeldDown)
	}
	holdEnd := at.Add(p.Flap.HoldDown)
	if !m.HeldUntil().Equal(holdEnd) {
		t.Fatalf("held until %v, want %v", m.HeldUntil(), holdEnd)
	}
	// Passes during the hold-down keep it unhealthy.
	for at.Add(10 * time.Second).Before(holdEnd) {
		at = at.Add(10 * time.Second)
		if st := m.Observe(at, Pass); st.State != reporting.StateUnhealthy || !st.HeldDown {
			t.Fatalf("during hold at %v: %s held=%v", at.Sub(t0), st.State, st.HeldDown)
		}
	}
	// After it: Rise (1) + ExtraPasses (2) = 3 passes.
	at = holdEnd
	if got := feed(m, &at, "PPP"); got != "UUH" {
		t.Fatalf("after hold: %s, want UUH", got)
	}
	// Recovered: normal rise again.
	if got := feed(m, &at, "FP"); got != "UH" {
		t.Fatalf("after recovery: %s, want UH", got)
	}
}

// TestMachineFlapFromUnknownNotCounted: a pair that starts unhealthy
// (unknown → unhealthy: leaving unknown does not count, as the README
// says) is held at the change that makes more than max_changes after
// that, not one change early.
func TestMachineFlapFromUnknownNotCounted(t *testing.T) {
	p := testParams()
	p.Rise, p.Fall = 1, 1
	m := NewMachine(p)
	at := t0
	// F: unknown→U (not counted); then P,F,P,F = 4 changes (allowed).
	if got := feed(m, &at, "FPFPF"); got != "UHUHU" {
		t.Fatalf("before hold: %s", got)
	}
	if !m.HeldUntil().IsZero() {
		t.Fatal("held at the 4th change: leaving unknown was counted")
	}
	at = at.Add(10 * time.Second)
	if st := m.Observe(at, Pass); st.State != reporting.StateUnhealthy || !st.HeldDown {
		t.Fatalf("5th change: %s held=%v, want unhealthy held", st.State, st.HeldDown)
	}
}

func TestMachineLatencyFlapsAreNotHeld(t *testing.T) {
	p := testParams()
	p.Rise, p.Fall = 1, 1
	m := NewMachine(p)
	at := t0
	// Healthy ↔ degraded ten times: no hold-down.
	if got := feed(m, &at, "PSPSPSPSPSPS"); got != "HDHDHDHDHDHD" {
		t.Fatalf("got %s", got)
	}
	if !m.HeldUntil().IsZero() {
		t.Fatal("latency flapping was held down")
	}
	// Degraded ↔ unhealthy does count.
	if got := feed(m, &at, "FSFSF"); got != "UDUDU" || m.HeldUntil().IsZero() {
		t.Fatalf("got %s, held until %v", got, m.HeldUntil())
	}
}

func TestMachineFlapWindowForgets(t *testing.T) {
	p := testParams()
	p.Rise, p.Fall = 1, 1
	p.Flap.Window = time.Minute
	p.Interval = 20 * time.Second
	p.ExpireAfter = time.Hour
	m := NewMachine(p)
	at := t0
	// A change every 20 s: at most 3 within any minute, never more than 4.
	if got := feed(m, &at, "PFPFPFPFPF"); got != "HUHUHUHUHU" {
		t.Fatalf("got %s", got)
	}
	if !m.HeldUntil().IsZero() {
		t.Fatal("held down although changes were spread out")
	}
}

func TestMachineAdaptive(t *testing.T) {
	p := testParams()
	m := NewMachine(p)
	at := t0
	feed(m, &at, "PP")
	at = at.Add(p.Interval)
	if st := m.Observe(at, Fail); st.State != reporting.StateHealthy || st.Next != p.Interval/4 {
		t.Fatalf("first failure: %s next %s, want healthy and %s", st.State, st.Next, p.Interval/4)
	}
	at = at.Add(p.Interval)
	if st := m.Observe(at, Slow); st.Next != p.Interval/4 {
		t.Fatalf("second non-pass: next %s", st.Next)
	}
	at = at.Add(p.Interval)
	if st := m.Observe(at, Fail); st.State != reporting.StateDegraded || st.Next != p.Interval/4 {
		t.Fatalf("degraded then fail: %s next %s", st.State, st.Next)
	}

	// Minimum confirm delay is 1 s.
	short := p
	short.Interval = 2 * time.Second
	ms := NewMachine(short)
	at = t0
	feed(ms, &at, "PP")
	if st := ms.Observe(at.Add(time.Second), Fail); st.Next != time.Second {
		t.Fatalf("confirm delay %s, want 1s", st.Next)
	}

	// Not adaptive: a stable pair keeps its interval.
	m = NewMachine(p)
	at = t0
	feed(m, &at, strings.Repeat("P", 40))
	if st := m.Observe(at.Add(p.Interval), Pass); st.Next != p.Interval {
		t.Fatalf("non-adaptive next %s", st.Next)
	}
	// Adaptive: slows from stableRuns on, up to 2 × interval.
	p.Adaptive = true
	m = NewMachine(p)
	at = t0
	var prev time.Duration
	for i := 0; i < 40; i++ {
		at = at.Add(p.Interval)
		st := m.Observe(at, Pass)
		if st.Next < prev || st.Next > 2*p.Interval {
			t.Fatalf("run %d: next %s (prev %s)", i, st.Next, prev)
		}
		prev = st.Next
	}
	if prev != 2*p.Interval {
		t.Fatalf("after 40 passes next %s, want %s", prev, 2*p.Interval)
	}
	// And a failure confirms quickly again.
	if st := m.Observe(at.Add(p.Interval), Fail); st.Next != p.Interval/4 {
		t.Fatalf("stable then fail: next %s", st.Next)
	}
	// Slowing never outlives the verdict: capped at 2/3 of expire_after.
	p.ExpireAfter = 15 * time.Second
	m = NewMachine(p)
	at = t0
	var st Step
	for i := 0; i < 40; i++ {
		at = at.Add(p.Interval)
		st = m.Observe(at, Pass)
	}
	if st.Next != p.Interval {
		t.Fatalf("capped next %s, want %s", st.Next, p.Interval)
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		name string
		r    checks.Result
		want Outcome
	}{
		{"ok", checks.Result{OK: true}, Pass},
		{"refused", checks.Result{Cause: checks.CauseConnectRefused}, Fail},
		{"status", checks.Result{Cause: checks.CauseStatus}, Fail},
		{"ttfb", checks.Result{Cause: checks.CauseTTFB, Assertions: []checks.AssertionResult{
			{Name: "status", OK: true}, {Name: "ttfb", OK: false}}}, Slow},
		{"duration", checks.Result{Cause: checks.CauseDuration}, Slow},
		{"ttfb plus a failed body assertion", checks.Result{Cause: checks.CauseTTFB, Assertions: []checks.AssertionResult{
			{Name: "ttfb", OK: false}, {Name: `body contains "x"`, OK: false}}}, Fail},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.r); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestMachineSeedAgentFault: a restart that restores from the verdict of a
// run the agent could not make (it carries the state and streak of the
// counted runs before it) reads the streak by the state: a healthy pair
// seeded so stays healthy through fall − 1 failures, as after a pass.
func TestMachineSeedAgentFault(t *testing.T) {
	m := NewMachine(testParams())
	at := t0
	m.Seed(reporting.Verdict{State: reporting.StateHealthy, OK: false, Cause: reporting.CauseAgent, Streak: 5,
		At: at, Expires: at.Add(30 * time.Second)})
	if got := feed(m, &at, "FF"); got != "HH" {
		t.Fatalf("after seeding healthy from an agent-fault verdict, two fails: %s, want HH", got)
	}
	if got := feed(m, &at, "F"); got != "U" {
		t.Fatalf("third fail: %s, want U", got)
	}
}
