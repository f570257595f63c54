// Package reporting holds vigil's data model — the Verdict a canary publishes
// for every run and the Signal the proxy publishes from live traffic — and the
// small interfaces that move them: Sink (write), Source (read latest),
// HistorySource (read history for SLOs) and their Signal twins.
//
// Sub-packages implement them: the embedded SQLite store, InfluxDB, the
// Prometheus metrics, alerting, the status page and the Grafana dashboards.
// reporting never imports canary, proxy or scripts.
package reporting

import (
	"context"
	"time"
)

// State is a verdict's judgement of one check × target.
type State string

// Verdict states. A stale verdict (past Expires) is StateUnknown, never healthy.
const (
	StateUnknown   State = "unknown"
	StateHealthy   State = "healthy"
	StateDegraded  State = "degraded"
	StateUnhealthy State = "unhealthy"
)

// Tiers a check can belong to. Tier is metadata consumers filter on.
const (
	TierShallow   = "shallow"
	TierDeep      = "deep"
	TierSynthetic = "synthetic"
)

// Verdict is published after every run of a check against a target: the
// state-machine state plus the run's figures. JSON field names are snake_case
// with durations in milliseconds (see MarshalJSON).
type Verdict struct {
	Check   string
	Target  string
	Tier    string
	Region  string
	Vantage string

	State      State
	OK         bool   // this run passed
	Cause      string // this run's failure cause, "" when OK
	Err        string // this run's failure reason, human-readable
	StatusCode int
	// Proto is the protocol the answer came over (HTTP/1.1, HTTP/2.0) for
	// http checks that got one; "" otherwise.
	Proto string

	TTFB     time.Duration
	Duration time.Duration
	DNS      time.Duration
	Connect  time.Duration
	TLS      time.Duration
	Transfer time.Duration

	// Streak counts consecutive runs with the same OK value, this one included.
	Streak int
	// HeldUntil is the end of the flap hold-down while the pair is held
	// unhealthy by flap damping or still recovering from it (it then needs
	// rise + flap.extra_passes passes); zero otherwise. A restarted canary
	// restores the hold-down from it.
	HeldUntil time.Time
	// Since is when the pair entered State: the At of the run that changed
	// it (for a fresh canary, of its first verdict). Unchanged runs keep it,
	// and a restarted canary restores it with the state. Zero when unknown:
	// verdicts written before it existed, and those of a canary restarted
	// from them until the state next changes.
	Since time.Time
	// Interval is the check's scheduled interval (for dead-man rules).
	Interval time.Duration
	// At is when the run finished; Expires is when the verdict turns unknown.
	At, Expires time.Time
	// Artifact is a failure artifact (screenshot path) relative to the data dir, if any.
	Artifact string
	// URL is the page URL at failure for browser scripts, or the probed URL.
	URL string
	// CertExpiry is the earliest NotAfter of the certificates the server
	// presented, for TLS and HTTPS runs (zero otherwise), for the
	// certificate-expiry alert.
	CertExpiry time.Time

	// Instance is the canary process that wrote the verdict (NewInstance:
	// hostname and a random id drawn at its start); "" for verdicts of
	// versions before it. It is not part of the series (Key).
	Instance string
	// Duplicates, set by a reader, lists the canary instances (sorted, two
	// or more) it saw writing this same series at the same time: canaries
	// sharing agent.region and agent.vantage (see FindDuplicates). Nil
	// when there are none, and never stored.
	Duplicates []string
}

// Key identifies a verdict's series: check × target × region (× vantage).
func (v Verdict) Key() string {
	return v.Check + "\x00" + v.Target + "\x00" + v.Region + "\x00" + v.Vantage
}

// Latency causes: a run that failed only these assertions answered, but too
// slowly (the canary's "slow" outcome, state degraded). They are the
// values of checks.CauseTTFB and checks.CauseDuration; reporting does not
// import checks.
const (
	CauseTTFB     = "ttfb"
	CauseDuration = "duration"
)

// Agent causes: the agent itself could not run the check (checks.CauseAgent,
// checks.CauseBrowserUnavailable).
const (
	CauseAgent              = "agent"
	CauseBrowserUnavailable = "browser_unavailable"
)

// AgentFault reports whether the run was one the agent could not make for
// its own trouble (no file descriptor, no ICMP permission, no browser): it
// says nothing about the target. Such a verdict carries the state and
// expiry of the runs before it; availability figures (Unavailable, rollup
// totals, uptime) leave it out, and the dead_man alert rule counts the
// pair as silent while it has only such runs.
func (v Verdict) AgentFault() bool {
	return !v.OK && (v.Cause == CauseAgent || v.Cause == CauseBrowserUnavailable)
}

// Unavailable reports whether the run counts as failed for availability
// (Rollup.Failed, availability SLOs, burn rates, uptime): it did not pass,
// and not only because of a latency objective. A run that failed only its
// ttfb or duration assertion (Cause ttfb or duration: the cause order
// puts every other failure before them) counts as available; it counts
// against the TTFB SLO instead. A run the agent could not make
// (AgentFault) is not counted at all.
func (v Verdict) Unavailable() bool {
	return !v.OK && v.Cause != CauseTTFB && v.Cause != CauseDuration && !v.AgentFault()
}

// Current returns the verdict's state at now: StateUnknown once it expired.
func (v Verdict) Current(now time.Time) State {
	if v.State == "" || (!v.Expires.IsZero() && !now.Before(v.Expires)) {
		return StateUnknown
	}
	return v.State
}

// Signal is one passive observation window of one origin, published by the
// proxy from live traffic.
type Signal struct {
	Pool    string
	Origin  string // target name
	Region  string
	Vantage string // proxy instance
	At      time.Time
	Window  time.Duration

	Requests   int
	Status5xx  int
	ConnErrors int
	Timeouts   int
	P95        time.Duration
	// Ejected reports whether the passive detector had the origin ejected at
	// At. The canary's passive triggers run an origin's checks when it is
	// set, so it stays the passive detector's alone: an origin out by the
	// canaries' own verdicts must not trigger their checks again and again.
	Ejected bool
	// Reason is why the passive detector ejected the origin ("" when not).
	Reason string
	// Out reports whether this proxy instance had the origin out of
	// rotation at At for any reason: ejected by the passive detector, down
	// by a quorum of canary verdicts, or drained. Ejected implies Out.
	Out bool
	// OutBy names what held the origin out, comma separated, in the names
	// of the proxy's /api/v1/origins: "drained", "verdict_down",
	// "passive_ejected" ("" when not Out).
	OutBy string
}

// FailureRate is the share of requests in the window that failed (5xx,
// connection errors, timeouts), 0..1; 0 when there were no requests.
func (s Signal) FailureRate() float64 {
	if s.Requests == 0 {
		return 0
	}
	return float64(s.Status5xx+s.ConnErrors+s.Timeouts) / float64(s.Requests)
}

// Sink receives verdicts. Publish must not block its caller for long: slow
// sinks sit behind a Fanout, which queues and counts drops.
type Sink interface {
	Publish(ctx context.Context, v []Verdict) error
}

// Source returns the latest verdict per check × target × region × vantage
// whose At is within maxAge of now (maxAge 0: no limit).
type Source interface {
	Verdicts(ctx context.Context, maxAge time.Duration) ([]Verdict, error)
}

// HistoryQuery selects verdict history. Empty strings match everything.
type HistoryQuery struct {
	Check, Target, Region string
	From, To              time.Time // To zero: now
	// Limit keeps the newest Limit rows (still returned oldest first); 0: no limit.
	Limit int
	// Runs keeps only the runs of one outcome (History only; AllRuns:
	// every run). With a Limit it is the newest Limit runs of that outcome,
	// however many other runs are newer.
	Runs RunFilter
}

// RunFilter selects runs by outcome in a HistoryQuery.
type RunFilter int

const (
	// AllRuns keeps every run.
	AllRuns RunFilter = iota
	// FailedRuns keeps the runs that did not pass (OK false).
	FailedRuns
	// DownRuns keeps the failed runs whose cause is not a latency one
	// (not CauseTTFB or CauseDuration): Unavailable and AgentFault runs.
	DownRuns
	// SlowRuns keeps the failed runs whose cause is CauseTTFB or
	// CauseDuration: they answered, too slowly.
	SlowRuns
)

// Keep reports whether v is a run f keeps.
func (f RunFilter) Keep(v Verdict) bool {
	slow := v.Cause == CauseTTFB || v.Cause == CauseDuration
	switch f {
	case FailedRuns:
		return !v.OK
	case DownRuns:
		return !v.OK && !slow
	case SlowRuns:
		return !v.OK && slow
	}
	return true
}

// Rollup is one minute of one check × target × region. The vantages of a
// region are merged. TTFB figures count the runs that are TTFB samples
// (Verdict.TTFBSample): runs with a TTFB, and runs that timed out before
// their first byte, ranked above every TTFB; other failed runs are not in
// them.
type Rollup struct {
	Check, Target, Region string
	Minute                time.Time // start of the minute, UTC
	Total                 int       // runs
	// Failed counts the runs that were Unavailable: runs that failed only a
	// latency objective (cause ttfb or duration) are not counted. Rows the
	// embedded store wrote before this rule keep counting them.
	Failed    int
	Unhealthy int // runs whose verdict state was unhealthy
	// TTFBRuns counts the runs with a TTFB; TTFBTimeouts the runs that
	// timed out before their first byte.
	TTFBRuns, TTFBTimeouts int
	TTFBSum                time.Duration // over TTFBRuns (mean: TTFBSum / TTFBRuns)
	TTFBMax                time.Duration // over TTFBRuns
	// TTFBP95 is the p95 over TTFBRuns and TTFBTimeouts; when it falls on
	// a timed-out run (TTFBP95TimedOut) it is a lower bound: how long that
	// run waited.
	TTFBP95 time.Duration
}

// HistorySource reads verdict history and per-minute rollups (for SLOs,
// alerting and the status page).
type HistorySource interface {
	Source
	History(ctx context.Context, q HistoryQuery) ([]Verdict, error)
	Rollups(ctx context.Context, q HistoryQuery) ([]Rollup, error)
}

// SignalSink receives the proxy's passive observations.
type SignalSink interface {
	PublishSignals(ctx context.Context, s []Signal) error
}

// SignalSource returns signals with At after since.
type SignalSource interface {
	Signals(ctx context.Context, since time.Time) ([]Signal, error)
}
