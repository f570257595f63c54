package canary

import (
	"math/bits"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
)

// Outcome classifies one run for the state machine.
type Outcome int

const (
	// Pass: every assertion held.
	Pass Outcome = iota
	// Slow: the origin answered correctly but an SLO assertion (ttfb,
	// duration) failed, and nothing else did.
	Slow
	// Fail: anything else — the check could not complete or a functional
	// assertion (status, header, body, …) said no.
	Fail
	// Agent: the agent itself could not run the check (cause agent or
	// browser_unavailable: no file descriptor, no ICMP permission, no
	// browser). The run says nothing about the target: the machine does
	// not count it, and the verdict keeps its state and its expiry, so an
	// agent that stays broken makes its verdicts go stale (unknown), never
	// unhealthy.
	Agent
)

// String names the outcome: pass, slow or fail.
func (o Outcome) String() string {
	switch o {
	case Pass:
		return "pass"
	case Slow:
		return "slow"
	case Agent:
		return "agent"
	}
	return "fail"
}

// Classify turns a Result into an Outcome. A failed run is Slow only when
// its cause is an SLO cause and no non-SLO assertion failed.
func Classify(r checks.Result) Outcome {
	if r.OK {
		return Pass
	}
	if r.Cause.AgentFault() {
		return Agent
	}
	if !r.Cause.SLO() {
		return Fail
	}
	for _, a := range r.Assertions {
		if !a.OK && !isSLOAssertion(a.Name) {
			return Fail
		}
	}
	return Slow
}

func isSLOAssertion(name string) bool {
	return name == string(checks.CauseTTFB) || name == string(checks.CauseDuration) ||
		hasPrefix(name, "ttfb") || hasPrefix(name, "duration")
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// Params are the thresholds of one pair's state machine, taken from its
// validated CheckConfig by ParamsFor.
type Params struct {
	// Rise consecutive passes turn the state healthy (≥ 1).
	Rise int
	// Fall consecutive failures turn the state unhealthy (≥ 1).
	Fall int
	// Flap is flap damping; MaxChanges 0 disables it.
	Flap FlapConfig
	// Interval is the regular interval between runs.
	Interval time.Duration
	// ExpireAfter is how long a verdict stays valid after its run.
	ExpireAfter time.Duration
	// Adaptive lets a long-stable healthy pair slow down to 2 × Interval.
	Adaptive bool
}

// ParamsFor returns the state-machine parameters of a validated check.
func ParamsFor(c *CheckConfig) Params {
	p := Params{Rise: c.Rise, Fall: c.Fall, Interval: c.Interval, ExpireAfter: c.ExpireAfter}
	if c.Flap != nil {
		p.Flap = *c.Flap
	}
	if c.Adaptive != nil {
		p.Adaptive = *c.Adaptive
	}
	return p.normalized()
}

func (p Params) normalized() Params {
	p.Rise = max(p.Rise, 1)
	p.Fall = max(p.Fall, 1)
	if p.Interval <= 0 {
		p.Interval = 30 * time.Second
	}
	if p.ExpireAfter <= 0 {
		p.ExpireAfter = 3 * p.Interval
	}
	return p
}

// Adaptive interval tuning.
const (
	// confirmDivisor: a healthy pair whose run fails re-checks after
	// Interval/confirmDivisor (at least minConfirm) to confirm.
	confirmDivisor = 4
	minConfirm     = time.Second
	// stableRuns consecutive passes make a healthy pair "stable"; with
	// adaptive it then slows linearly to 2 × Interval over slowRamp more passes.
	stableRuns = 10
	slowRamp   = 20
)

// Machine is the verdict state machine of one check × target. It is pure:
// every method takes the time from its caller. It is not safe for
// concurrent use.
//
// Every run is a Pass, a Slow (only SLO assertions failed) or a Fail.
// Transitions, evaluated after each run in this order:
//
//  1. Fall consecutive Fails → unhealthy (from any state, unknown included).
//  2. During a flap hold-down → unhealthy.
//  3. Rise consecutive Passes → healthy (Rise + Flap.ExtraPasses after a hold-down).
//  4. healthy, and Fall consecutive runs that did not pass (Slow or Fail,
//     fewer than Fall Fails) → degraded.
//  5. unknown or unhealthy, the run was Slow, and Rise consecutive runs
//     answered (Pass or Slow; Rise + ExtraPasses after a hold-down) → degraded.
//  6. unknown, Rise + Fall - 1 runs since it became unknown (enough for
//     rules 1 or 3 to have decided) decided nothing, and one of them was a
//     Fail → unhealthy: an origin that fails every other run must not read
//     as never probed.
//  7. healthy or degraded, and Fall of the last 2 × Fall - 1 runs were
//     Fails (most of them) → unhealthy: an origin that fails every other
//     run reads unhealthy whatever state it was in, as rule 6 has it from
//     unknown. The window is at most 63 runs (Fall above 32 needs Fall of
//     the last 63).
//
// So degraded uses the same hysteresis as healthy and unhealthy: a Slow run
// breaks a pass streak and a fail streak alike; a degraded pair returns to
// healthy after Rise passes and becomes unhealthy after Fall Fails.
//
// Flap damping: when a change into or out of unhealthy (to or from healthy
// or degraded; leaving unknown does not count) makes more than
// Flap.MaxChanges such changes within Flap.Window, the state is held
// unhealthy until
// Flap.HoldDown has passed; runs during the hold do not count towards
// recovery, and recovery then needs Rise + Flap.ExtraPasses passes. A
// reload (SetParams) or restart (Seed) that turns damping off ends a hold
// at once; one that shortens HoldDown ends it at most HoldDown after it
// began.
// Changes between healthy and degraded do not count: an origin whose
// latency hovers around its SLO is reported as such, not ejected as down.
//
// Expiry: a run that comes after the previous verdict expired starts again
// from unknown (its counters reset; a hold-down stays).
type Machine struct {
	p Params

	state                          reporting.State
	pass, answered, notPass, fails int // consecutive counters
	lastOK                         bool
	streak                         int
	undecided                      int    // runs since the state became unknown (rule 6)
	recent                         uint64 // the last runs, newest in bit 0: 1 a Fail (rule 7)
	recentN                        int    // runs in recent, at most 63
	undecidedFail                  bool   // one of them was a Fail
	changes                        []time.Time
	holdStart, holdUntil           time.Time // the current or last flap hold-down
	recovering                     bool
	expires                        time.Time
	// since is when the state was entered (Step.Since); zero when unknown
	// (seeded from a verdict that did not carry it).
	since time.Time
}

// NewMachine returns a machine in state unknown.
func NewMachine(p Params) *Machine {
	return &Machine{p: p.normalized(), state: reporting.StateUnknown}
}

// SetParams changes the thresholds (on reload) and keeps the state.
//
// A flap hold-down follows the new flap damping at once, as Seed does at a
// restart: with damping off (Flap.MaxChanges 0) the hold ends now, the
// extra passes are no longer asked for and the flap history is dropped, so
// recovery needs Rise passes; otherwise a hold ends at the latest
// Flap.HoldDown after it began (a shortened hold_down applies at once, a
// longer one does not lengthen a running hold).
func (m *Machine) SetParams(p Params) {
	m.p = p.normalized()
	if m.p.Flap.MaxChanges <= 0 {
		m.changes = nil
		m.holdStart, m.holdUntil, m.recovering = time.Time{}, time.Time{}, false
		return
	}
	if end := m.holdStart.Add(m.p.Flap.HoldDown); !m.holdUntil.IsZero() && m.holdUntil.After(end) {
		m.holdUntil = end
	}
}

// Params returns the machine's thresholds.
func (m *Machine) Params() Params { return m.p }

// State returns the state at now: unknown once the last verdict expired.
func (m *Machine) State(now time.Time) reporting.State {
	if m.expires.IsZero() || !now.Before(m.expires) {
		return reporting.StateUnknown
	}
	return m.state
}

// Seed restores the machine from a verdict published before a restart: its
// state, streak, expiry and since (when the state was entered; a verdict
// without it leaves it unknown until the state next changes). An expired
// verdict leaves the machine unknown.
// The consecutive counters are rebuilt from the streak, so a pair that was
// healthy with a streak of passes stays healthy through fall-1 failures.
//
// A verdict with HeldUntil set was published during a flap hold-down or
// while the pair recovered from one: the hold-down is restored (the pair
// stays unhealthy until HeldUntil) and recovery again needs Rise +
// Flap.ExtraPasses passes. Passes made during the hold do not count, so
// of the verdict's streak only the runs that can have come after HeldUntil
// (one per Interval) are counted. The flap history (changes that could
// start a new hold-down) is not restored.
//
// The flap damping in force decides, not the one the verdict was published
// under: with damping off (Flap.MaxChanges 0) the hold-down is not restored
// at all, and it ends at the latest at the verdict's At + Flap.HoldDown, so
// a hold_down shortened before the restart applies at once.
func (m *Machine) Seed(v reporting.Verdict) {
	if v.Expires.IsZero() || v.State == "" || v.Streak <= 0 {
		return
	}
	m.state, m.expires, m.streak, m.lastOK = v.State, v.Expires, v.Streak, v.OK
	m.since = v.Since
	m.pass, m.answered, m.notPass, m.fails = 0, 0, 0, 0
	switch {
	case v.OK || (checks.Cause(v.Cause).AgentFault() && v.State == reporting.StateHealthy):
		// A run the agent could not make (Agent) carries the state and
		// streak of the runs before it, not its own: the streak is read
		// by the state.
		m.pass, m.answered = v.Streak, v.Streak
	case checks.Cause(v.Cause).SLO() || (checks.Cause(v.Cause).AgentFault() && v.State == reporting.StateDegraded):
		m.notPass, m.answered = v.Streak, v.Streak
	default:
		m.notPass, m.fails = v.Streak, v.Streak
	}
	m.holdStart, m.holdUntil, m.recovering = time.Time{}, time.Time{}, false
	if held, ok := m.seedHold(v); ok {
		after := 0
		if !v.At.Before(held) {
			after = int(v.At.Sub(held)/m.p.Interval) + 1
		}
		m.pass, m.answered = min(m.pass, after), min(m.answered, after)
	}
}

// SeedHold restores only the flap hold-down of a verdict too old to seed
// the state (expired: the canary was stopped longer than expire_after):
// the pair starts unknown but stays held unhealthy until the verdict's
// held_until, so a restart does not end a hold-down early.
func (m *Machine) SeedHold(v reporting.Verdict) {
	m.seedHold(v)
}

// seedHold sets the hold-down v reports, capped by the flap damping in
// force, and returns its end; false when v reports none or damping is off.
func (m *Machine) seedHold(v reporting.Verdict) (time.Time, bool) {
	if v.HeldUntil.IsZero() || v.State != reporting.StateUnhealthy || m.p.Flap.MaxChanges <= 0 {
		return time.Time{}, false
	}
	held := v.HeldUntil
	if !v.At.IsZero() && held.After(v.At.Add(m.p.Flap.HoldDown)) {
		held = v.At.Add(m.p.Flap.HoldDown)
	}
	// The hold began at the latest at v.At (unknown without it): a later
	// SetParams caps it from there.
	m.holdStart, m.holdUntil, m.recovering = v.At, held, true
	if v.At.IsZero() {
		m.holdStart = held.Add(-m.p.Flap.HoldDown)
	}
	return held, true
}

// heldUntil is what a verdict reports as HeldUntil: the end of the
// hold-down while the pair is held or still needs the extra passes after
// it, zero otherwise.
func (m *Machine) heldUntil() time.Time {
	if !m.recovering {
		return time.Time{}
	}
	return m.holdUntil
}

// HeldUntil returns the end of the current flap hold-down (zero if none).
func (m *Machine) HeldUntil() time.Time { return m.holdUntil }

// Step is what one Observe decided.
type Step struct {
	// State after the run; From is the state before it (unknown if the
	// previous verdict had expired).
	State, From reporting.State
	// Changed reports State != From.
	Changed bool
	// Streak counts consecutive runs with the same pass/no-pass value, this
	// one included.
	Streak int
	// HeldDown reports that flap damping holds the state unhealthy.
	HeldDown bool
	// Since is when the pair entered State: the at of the run that changed
	// it, of the machine's first run, or of the run that found the previous
	// verdict expired (the state starting again from unknown). Runs that
	// leave the state as it was keep it. Zero when unknown: a machine
	// seeded from a verdict without it, until the state changes. Published
	// as Verdict.Since so a restart (Seed) keeps it.
	Since time.Time
	// HeldUntil is the end of the flap hold-down while the pair is held
	// down or recovering from one (it needs Rise + Flap.ExtraPasses
	// passes); zero otherwise. Published as Verdict.HeldUntil so a restart
	// (Seed) keeps the hold-down.
	HeldUntil time.Time
	// Next is the delay until the next run the adaptive logic asks for:
	// shorter than Interval to confirm a first failure, longer (up to
	// 2 × Interval, adaptive only) for a long-stable pair, else Interval.
	Next time.Duration
	// Expires is when this verdict turns unknown: at + ExpireAfter.
	Expires time.Time
}

// Observe feeds one run that finished at at and returns the new state.
func (m *Machine) Observe(at time.Time, o Outcome) Step {
	p := m.p
	if !m.expires.IsZero() && !at.Before(m.expires) {
		if m.state != reporting.StateUnknown {
			// Unknown since it expired, as the API reports an expired
			// verdict, not since this run.
			m.since = m.expires
		}
		m.state = reporting.StateUnknown
		m.pass, m.answered, m.notPass, m.fails, m.streak = 0, 0, 0, 0, 0
		m.undecided, m.undecidedFail = 0, false
		m.recent, m.recentN = 0, 0
	}
	if m.expires.IsZero() && m.since.IsZero() {
		// The first verdict (or the first after a restart that found
		// nothing to seed): the state, unknown, begins with it.
		m.since = at
	}
	prev := m.state
	if o == Agent {
		// Not counted: state, counters, streak and expiry stay as the
		// last counted run left them (an expiry reached meanwhile still
		// turns the state unknown, above). A machine without any counted
		// run reports a verdict that is already stale.
		exp := m.expires
		if exp.IsZero() {
			exp = at
		}
		held := at.Before(m.holdUntil)
		return Step{
			State: prev, From: prev, Streak: m.streak, HeldDown: held, Since: m.since,
			HeldUntil: m.heldUntil(), Next: p.Interval, Expires: exp,
		}
	}
	m.recent <<= 1
	if o == Fail {
		m.recent |= 1
	}
	m.recentN = min(m.recentN+1, 63)
	if prev == reporting.StateUnknown {
		m.undecided++
		m.undecidedFail = m.undecidedFail || o == Fail
	}
	switch o {
	case Pass:
		m.pass++
		m.answered++
		m.notPass, m.fails = 0, 0
	case Slow:
		m.pass = 0
		m.answered++
		m.notPass++
		m.fails = 0
	default:
		m.pass, m.answered = 0, 0
		m.notPass++
		m.fails++
	}
	ok := o == Pass
	if m.streak > 0 && ok == m.lastOK {
		m.streak++
	} else {
		m.streak = 1
	}
	m.lastOK = ok

	held := at.Before(m.holdUntil)
	if held {
		// Runs during a hold-down do not count towards recovery.
		m.pass, m.answered = 0, 0
	}
	need := p.Rise
	if m.recovering {
		need += p.Flap.ExtraPasses
	}
	next := prev
	switch {
	case m.fails >= p.Fall:
		next = reporting.StateUnhealthy
	case held:
		next = reporting.StateUnhealthy
	case m.pass >= need:
		next = reporting.StateHealthy
	case prev == reporting.StateHealthy && m.notPass >= p.Fall:
		next = reporting.StateDegraded
	case o == Slow && (prev == reporting.StateUnknown || prev == reporting.StateUnhealthy) && m.answered >= need:
		next = reporting.StateDegraded
	case prev == reporting.StateUnknown && m.undecidedFail && m.undecided >= p.Rise+p.Fall-1:
		next = reporting.StateUnhealthy
	case (prev == reporting.StateHealthy || prev == reporting.StateDegraded) && m.mostlyFailing():
		next = reporting.StateUnhealthy
	}
	if next != reporting.StateUnknown {
		m.undecided, m.undecidedFail = 0, false
	}
	if next != prev && prev != reporting.StateUnknown && (prev == reporting.StateUnhealthy || next == reporting.StateUnhealthy) &&
		p.Flap.MaxChanges > 0 && !held {
		m.changes = append(m.changes, at)
		cut := 0
		for cut < len(m.changes) && !m.changes[cut].After(at.Add(-p.Flap.Window)) {
			cut++
		}
		m.changes = m.changes[cut:]
		if len(m.changes) > p.Flap.MaxChanges {
			m.changes = m.changes[:0]
			m.holdStart, m.holdUntil = at, at.Add(p.Flap.HoldDown)
			m.recovering = true
			m.pass, m.answered = 0, 0
			next = reporting.StateUnhealthy
			held = p.Flap.HoldDown > 0
		}
	}
	if m.recovering && !held && (next == reporting.StateHealthy || next == reporting.StateDegraded) {
		m.recovering = false
	}
	if next != prev {
		m.since = at
	}
	m.state = next
	m.expires = at.Add(p.ExpireAfter)
	return Step{
		State: next, From: prev, Changed: next != prev, Streak: m.streak, HeldDown: held, Since: m.since,
		HeldUntil: m.heldUntil(), Next: m.nextDelay(o), Expires: m.expires,
	}
}

// mostlyFailing reports rule 7: Fall of the last 2 × Fall - 1 runs (at
// most the last 63) were Fails.
func (m *Machine) mostlyFailing() bool {
	window := min(2*m.p.Fall-1, 63)
	if m.recentN < min(m.p.Fall, window) {
		return false
	}
	return bits.OnesCount64(m.recent&(1<<window-1)) >= min(m.p.Fall, window)
}

// nextDelay is the adaptive interval after a run with outcome o.
func (m *Machine) nextDelay(o Outcome) time.Duration {
	p := m.p
	switch {
	case (m.state == reporting.StateHealthy && o != Pass) ||
		(m.state == reporting.StateDegraded && o == Fail):
		// A run disagrees with the state: confirm sooner.
		return min(max(p.Interval/confirmDivisor, minConfirm), p.Interval)
	case p.Adaptive && m.state == reporting.StateHealthy && m.pass >= stableRuns:
		ceiling := min(2*p.Interval, p.ExpireAfter*2/3)
		if ceiling <= p.Interval {
			return p.Interval
		}
		ramp := min(m.pass-stableRuns, slowRamp)
		return p.Interval + (ceiling-p.Interval)*time.Duration(ramp)/slowRamp
	}
	return p.Interval
}
