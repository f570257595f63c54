// Package canary schedules every check × target pair, runs it with a per-run
// timeout under a global concurrency limit, judges the results with a
// hysteresis state machine (rise, fall, degraded, flap damping, adaptive
// interval, expiry) and publishes one reporting.Verdict per run to a
// reporting.Sink. It also serves the verdict API, /healthz and /metrics.
//
// The canary owns every goroutine that runs checks; checks never schedule
// themselves.
package canary

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
	"github.com/vigil-synthetics/vigil/scripts"
)

// Errors returned by Trigger and Run.
var (
	// ErrUnknownPair: no configured pair has that check and target.
	ErrUnknownPair = errors.New("canary: no such check × target")
	// ErrRunning: Run was called twice.
	ErrRunning = errors.New("canary: already running")
)

// Options wires the canary into the process.
type Options struct {
	// Sink receives every verdict, in batches (see PublishBatch and
	// PublishEvery). nil: verdicts are only kept in memory (Latest). The
	// canary never closes the sink. Pass a reporting.Fanout so one slow sink
	// cannot hold up the others.
	Sink reporting.Sink
	// Registry receives the canary's collectors. nil: a private registry,
	// still served by Handler at /metrics.
	Registry *prometheus.Registry
	// Log receives run panics, sink errors and schedule notes. nil: slog.Default().
	Log *slog.Logger
	// Now is the clock for verdict timestamps and state-machine decisions.
	// nil: time.Now. (Timers always use the real clock.)
	Now func() time.Time
	// Dropped, if set, returns a running total of verdicts the sinks dropped
	// (e.g. the sum of Fanout.Dropped over the sink names); an increase in
	// the last HealthWindow makes Health report an error.
	Dropped func() uint64
	// PublishBatch is the most verdicts per Sink.Publish call (default 256).
	PublishBatch int
	// PublishEvery is the longest a verdict waits to be published (default 250ms).
	PublishEvery time.Duration
	// PublishQueue is how many verdicts wait for the sink before new ones are
	// dropped and counted in vigil_canary_publish_dropped_total (default 16384).
	PublishQueue int
	// HealthWindow is how long recent drops keep /healthz at 503 (default 5m).
	HealthWindow time.Duration
	// Redact rewrites every text of a run that leaves the canary — the
	// verdict's Err and URL, assertion got/want, script step errors and
	// URLs, logged panics — so that secrets the config took from the
	// environment (and an origin may echo back) are never shown or stored.
	// nil: text is kept as is. SetRedact replaces it on a config reload.
	Redact func(string) string
}

// Canary schedules and judges pairs. Create it with New, start it with Run.
// All methods are safe for concurrent use.
type Canary struct {
	log  *slog.Logger
	now  func() time.Time
	sink reporting.Sink
	o    Options
	reg  *prometheus.Registry
	m    *metrics

	mu      sync.Mutex // guards cfg, entries, byName, queue, sem
	cfg     *Config
	entries map[string]*entry // by Pair.Key()
	byName  map[[2]string]*entry
	queue   timeQueue
	sem     chan struct{}
	browser chan struct{}
	wake    chan struct{}

	labels   atomic.Pointer[agentLabels]
	redactFn atomic.Pointer[func(string) string]
	running  atomic.Bool
	stopped  atomic.Bool
	stopping atomic.Bool     // Run's ctx is done: queued scheduled runs are dropped
	aborted  atomic.Bool     // Abort was called: runs are cancelled and dropped
	runCtx   context.Context // base of every run's context; cancelled only by Abort
	abort    context.CancelFunc
	// stopCtx is done once Run's ctx is: browser runs still waiting for a
	// browser slot give up (scripts.WithSlotWaitCancel) and are dropped.
	stopCtx   context.Context
	stopWaits context.CancelFunc
	wg        sync.WaitGroup // in-flight runs
	reloadErr atomic.Pointer[errBox]

	pubMu sync.RWMutex
	pubCh chan reporting.Verdict // nil outside Run: publish directly

	// lagHook, if set before Run, sees every schedule lag (benchmarks).
	lagHook func(time.Duration)

	dropMu       sync.Mutex
	dropLast     uint64
	dropLastSeen time.Time

	// satLog spaces the agent.concurrency warning (noteSlotWait) and
	// counts the long waits between its lines.
	satLog units.Spacer

	// authFail logs refused admin requests (rate-limited).
	authFail units.AuthFailures

	// push holds the push checks' pings; pushM counts them; pushNames
	// are the push checks whose counters exist (guarded by mu).
	push      pushBook
	pushM     *pushMetrics
	pushNames []string
}

type errBox struct{ err error }

// agentLabels are the agent's labels on every verdict.
type agentLabels struct{ Region, Vantage string }

// entry is the canary's record of one pair.
type entry struct {
	key    string
	pair   atomic.Pointer[Pair]
	kindOf string // check kind, for the browser semaphore

	// Guarded by Canary.mu:
	idx     int
	next    time.Time
	plan    plan
	removed bool
	// deferNext: the scheduled run in flight is a restart's catch-up run
	// (plan.resume) or a run deferred for one. A slot that comes while it
	// runs is owed (owed: its time) and run as soon as it ends, instead
	// of being skipped, so a restart neither skips nor repeats a run.
	// Runs end within their timeout, which is under the interval: each
	// deferred run ends closer to its slot, and the chain stops.
	deferNext bool
	owed      time.Time
	// pingAt: the latest run a push check's ping brought forward
	// (judgeAfterPing).
	pingAt time.Time

	mu      sync.Mutex // guards machine, latest, has, done
	machine *Machine
	latest  reporting.Verdict
	has     bool
	// lastRes is the latest run's result (redacted), for LastRuns; lastAt
	// is when it finished. Zero until the pair ran in this process.
	lastRes checks.Result
	lastAt  time.Time
	// certExpiry is the leaf certificate NotAfter of the last TLS run.
	certExpiry time.Time
	done       chan struct{} // non-nil while a run is in flight; closed when it ends
	// agentSince is when the current series of runs the agent could not
	// make (Outcome Agent) began; zero when the latest run was counted.
	agentSince time.Time

	passes, fails, slows, skipped atomic.Uint64 // slows: failed only a latency objective
	// failed counts failed runs (fail and slow) by cause, in the order of
	// checks.AllCauses (vigil_check_failures_total).
	failed []atomic.Uint64
	// dur and ttfb are the runs' latency histograms (agent.latency_histograms).
	dur, ttfb latencyHist
}

// New builds a canary for a validated config and its compiled pairs
// (Config.Compile). It registers the canary's collectors on o.Registry.
func New(cfg *Config, pairs []Pair, o Options) (*Canary, error) {
	if cfg == nil {
		return nil, errors.New("canary: nil config")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PublishBatch <= 0 {
		o.PublishBatch = 256
	}
	if o.PublishEvery <= 0 {
		o.PublishEvery = 250 * time.Millisecond
	}
	if o.PublishQueue <= 0 {
		o.PublishQueue = 16384
	}
	if o.HealthWindow <= 0 {
		o.HealthWindow = 5 * time.Minute
	}
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	c := &Canary{
		log: o.Log, now: o.Now, sink: o.Sink, o: o, reg: reg,
		entries: map[string]*entry{},
		byName:  map[[2]string]*entry{},
		wake:    make(chan struct{}, 1),
	}
	c.runCtx, c.abort = context.WithCancel(context.Background())
	c.stopCtx, c.stopWaits = context.WithCancel(context.Background())
	c.SetRedact(o.Redact)
	c.m = newMetrics(c)
	c.push.log = o.Log
	c.pushM = newPushMetrics(c)
	for _, col := range append(c.m.collectors(), c.pushM) {
		if err := reg.Register(col); err != nil {
			return nil, fmt.Errorf("canary: register metrics: %w", err)
		}
	}
	c.Reload(cfg, pairs)
	return c, nil
}

// Run schedules every pair until ctx is done, then waits for in-flight runs
// (each ends within its own timeout, or at once after Abort, which drops
// them), publishes what they produced and
// returns nil. Browser runs still waiting for a browser slot then give up
// and are dropped without a verdict, like scheduled runs that had not
// started. It does not close the sink.
func (c *Canary) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	pubDone := c.startPublisher()
	c.log.Info("canary running", "pairs", c.pairCount())
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait := c.fireDue()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			c.stopping.Store(true)
			c.stopWaits()
			c.wg.Wait()
			c.stopPublisher(pubDone)
			c.stopped.Store(true)
			c.log.Info("canary stopped")
			return nil
		case <-timer.C:
		case <-c.wake:
		}
	}
}

// fireDue starts every due pair and returns how long to sleep.
func (c *Canary) fireDue() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for len(c.queue) > 0 {
		e := c.queue[0]
		if e.next.After(now) {
			return e.next.Sub(now)
		}
		planned := e.next
		catchUp := e.plan.resumed
		e.plan.resumed = false
		e.next = e.plan.advance(now)
		heap.Fix(&c.queue, 0)
		c.fire(e, planned, catchUp)
	}
	return time.Hour
}

// fire starts a scheduled run of e unless it is still running: then the
// run is skipped, or owed when the run in flight is a catch-up run (see
// entry.deferNext). catchUp: this run is one, or is owed for one. Called
// with c.mu held.
func (c *Canary) fire(e *entry, planned time.Time, catchUp bool) {
	if !e.start() {
		if e.deferNext && e.owed.IsZero() {
			e.owed = planned
			return
		}
		e.skipped.Add(1)
		return
	}
	e.deferNext = catchUp
	sem := c.sem
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if catchUp {
			defer c.runOwed(e)
		}
		defer c.recoverRun(e)
		c.run(e, planned, sem)
	}()
}

// runOwed ends a catch-up run of e: the slot that came while it ran, if
// any, runs now (while Run's wait group still counts this run, so a stop
// waits for it or drops it like any queued run).
func (c *Canary) runOwed(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	owed := e.owed
	e.owed, e.deferNext = time.Time{}, false
	if owed.IsZero() || e.removed || c.stopping.Load() {
		return
	}
	c.fire(e, owed, true)
}

// recoverRun keeps a panic outside the check itself (the check's own panics
// are caught by probe) from taking the process down: it logs the stack and
// ends the run so the pair is scheduled again.
func (c *Canary) recoverRun(e *entry) {
	r := recover()
	if r == nil {
		return
	}
	c.log.Error("canary run panicked", "pair", strings.ReplaceAll(e.key, "\x00", " "),
		"panic", c.redact(fmt.Sprint(r)), "stack", c.redact(string(debug.Stack())))
	if e.mu.TryLock() {
		done := e.done
		e.done = nil
		e.mu.Unlock()
		if done != nil {
			close(done)
		}
	}
}

// start marks e as running; false if it already is.
func (e *entry) start() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done != nil {
		return false
	}
	e.done = make(chan struct{})
	return true
}

// run executes one run of e (started with e.start), judges and publishes
// it, and returns the verdict.
func (c *Canary) run(e *entry, planned time.Time, sem chan struct{}) reporting.Verdict {
	p := e.pair.Load()
	// Browser checks wait for a browser slot before taking a general one,
	// so queued browser runs never hold back HTTP checks.
	var bsem chan struct{}
	if usesBrowser(p) {
		c.mu.Lock()
		bsem = c.browser
		c.mu.Unlock()
		bsem <- struct{}{}
	}
	select {
	case sem <- struct{}{}:
	default: // every slot taken: the run starts late
		waitStart := time.Now()
		sem <- struct{}{}
		c.noteSlotWait(p, time.Since(waitStart), cap(sem))
	}
	if (!planned.IsZero() && c.stopping.Load()) || c.aborted.Load() {
		// Shutting down: a scheduled run that has not started yet is
		// dropped (after Abort, any run).
		<-sem
		if bsem != nil {
			<-bsem
		}
		e.drop()
		return reporting.Verdict{}
	}
	if !planned.IsZero() {
		lag := max(time.Since(planned), 0)
		c.m.lag.Observe(lag.Seconds())
		if c.lagHook != nil {
			c.lagHook(lag)
		}
	}
	c.m.inFlight.Inc()
	started := time.Now()
	res := c.redactResult(c.probe(p))
	c.m.inFlight.Dec()
	if bsem != nil {
		<-bsem
	}
	<-sem
	if c.stopping.Load() && scripts.WaitCanceled(res) {
		// Shutting down: a browser run that was still waiting for its
		// browser slot did not start, and is dropped like a queued run.
		return e.drop()
	}
	if c.aborted.Load() {
		// Abort cancelled the run: its result is not kept, as a kill.
		return e.drop()
	}
	c.mu.Lock()
	removed := e.removed
	c.mu.Unlock()
	if removed {
		// A reload removed the pair while it ran: its verdict is not
		// kept, published or logged (a store's other readers would see a
		// fresh verdict of a check that no longer exists).
		return e.drop()
	}
	v := c.judge(e, p, res, started)
	c.publish(v)
	return v
}

// satLogEvery is the most often noteSlotWait logs.
const satLogEvery = time.Minute

// noteSlotWait logs, at most once a minute, a run that waited longer than
// its jitter window (10% of its interval, at least 100ms) for a free slot
// of agent.concurrency: the only other trace is vigil_schedule_lag_seconds
// and vigil_runs_in_flight, and one blackholed origin with many checks
// holds slots for their whole timeout, delaying every other origin's
// checks.
func (c *Canary) noteSlotWait(p *Pair, waited time.Duration, slots int) {
	if waited < max(p.Check.Interval/10, 100*time.Millisecond) {
		return
	}
	ok, quiet := c.satLog.Allow(time.Now(), satLogEvery)
	if !ok {
		return
	}
	c.log.Warn("canary: runs wait for a free slot of agent.concurrency and start late (checks that time out hold their slot for the whole timeout); raise agent.concurrency or lower those timeouts",
		"concurrency", slots, "check", p.Check.Name, "target", p.Target.Name, "waited", waited.Round(time.Millisecond).String(),
		"more_late_runs_not_logged", quiet)
}

// drop ends a run of e without a verdict and returns e's latest one.
func (e *entry) drop() reporting.Verdict {
	e.mu.Lock()
	v := e.latest
	done := e.done
	e.done = nil
	e.mu.Unlock()
	if done != nil {
		close(done)
	}
	return v
}

// Abort cancels every run in flight and drops their results, as a kill
// would: no verdict of them is kept or published (what earlier runs
// produced still is, when Run returns). Runs that would start afterwards
// are dropped too. It is for a second shutdown signal: Run's ctx being
// done lets runs in flight finish within their timeout, which may be long
// (a synthetic check's 50 s); after Abort, Run returns as soon as the
// checks notice the cancellation.
func (c *Canary) Abort() {
	c.aborted.Store(true)
	c.abort()
	c.stopWaits()
}

// usesBrowser reports whether the pair's probe says it drives the browser.
func usesBrowser(p *Pair) bool {
	if b, ok := p.Probe.(interface{ UsesBrowser() bool }); ok {
		return b.UsesBrowser()
	}
	return false
}

// probe runs the check with its timeout (Pair.RunContext), turning a panic
// into a Result with cause internal and logging the stack. A browser run
// still waiting for its browser slot when the canary stops gives up.
func (c *Canary) probe(p *Pair) (res checks.Result) {
	ctx, cancel := p.RunContext(scripts.WithSlotWaitCancel(c.runCtx, c.stopCtx))
	defer cancel()
	start := c.now()
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("check panicked", "check", p.Check.Name, "target", p.Target.Name,
				"panic", c.redact(fmt.Sprint(r)), "stack", c.redact(string(debug.Stack())))
			res = checks.Result{Cause: checks.CauseInternal, Err: fmt.Sprintf("panic: %v", r),
				Start: start, Phases: checks.Phases{Total: c.now().Sub(start)}}
		}
	}()
	if p.Check.Push != nil {
		return c.judgePush(p)
	}
	if p.Probe == nil {
		return checks.Result{Cause: checks.CauseInternal, Err: "check not compiled", Start: start}
	}
	res = p.Probe.Run(ctx, p.Target)
	if res.Start.IsZero() {
		res.Start = start
	}
	return res
}

// decidingStep is the failed script step with a URL whose failure
// decided the run: the first hard failure, or, in a run that was only
// slow, the first slow step (a slow step does not stop a script, so a hard
// failure may follow it).
func decidingStep(res checks.Result) (checks.StepResult, bool) {
	var slow *checks.StepResult
	for i, s := range res.Steps {
		if s.OK || s.Skipped || s.URL == "" {
			continue
		}
		if !s.Cause.SLO() {
			return s, true
		}
		if slow == nil {
			slow = &res.Steps[i]
		}
	}
	if slow != nil {
		return *slow, true
	}
	return checks.StepResult{}, false
}

// judge feeds the result to e's state machine, records the verdict as e's
// latest, reschedules e if the adaptive interval asks for it, and ends the
// run, which started at started (real clock).
func (c *Canary) judge(e *entry, p *Pair, res checks.Result, started time.Time) reporting.Verdict {
	at := c.now()
	o := Classify(res)
	agent := c.labels.Load()

	e.mu.Lock()
	step := e.machine.Observe(at, o)
	v := reporting.Verdict{
		Check: p.Check.Name, Target: p.Target.Name, Tier: p.Check.Tier,
		Region: agent.Region, Vantage: agent.Vantage,
		State: step.State, OK: res.OK, Cause: string(res.Cause), Err: res.Err,
		StatusCode: res.StatusCode, Proto: res.Proto,
		TTFB: res.Phases.TTFB, Duration: res.Phases.Total, DNS: res.Phases.DNS,
		Connect: res.Phases.Connect, TLS: res.Phases.TLS, Transfer: res.Phases.Transfer,
		Streak: step.Streak, HeldUntil: step.HeldUntil, Since: step.Since, Interval: max(step.Next, p.Check.Interval),
		At: at, Expires: step.Expires, URL: c.redactURL(ProbedURL(p)), CertExpiry: res.CertExpiry,
	}
	if len(res.Artifacts) > 0 {
		v.Artifact = res.Artifacts[0]
	}
	if n := len(res.Steps); n > 0 && !res.OK {
		if s, ok := decidingStep(res); ok {
			v.URL = c.redactURL(units.RedactURL(s.URL))
		}
	}
	e.latest, e.has = v, true
	e.lastRes, e.lastAt = res, at
	if o != Agent {
		e.certExpiry = res.CertExpiry
	}
	agentSince := e.agentSince
	switch {
	case o == Agent && agentSince.IsZero():
		e.agentSince = at
	case o != Agent:
		e.agentSince = time.Time{}
	}
	done := e.done
	e.done = nil
	e.mu.Unlock()
	if o != Agent && !agentSince.IsZero() {
		c.log.Info("check runs again after the agent's own trouble", "check", v.Check, "target", v.Target,
			"since", agentSince.UTC().Format(time.RFC3339), "for", at.Sub(agentSince).Round(time.Second).String())
	}
	switch {
	case o == Agent:
		// Not a judgement of the target: vigil_checks_total leaves it
		// out (vigil_check_failures_total{cause} counts it below).
		if agentSince.IsZero() {
			c.log.Warn("check cannot run: the agent's own trouble, not the target's; the run is not counted and the verdict keeps its state until it expires",
				"check", v.Check, "target", v.Target, "cause", v.Cause, "err", v.Err, "state", string(step.State), "expires", step.Expires.UTC().Format(time.RFC3339))
		}
	case res.OK:
		e.passes.Add(1)
	case v.Unavailable():
		e.fails.Add(1)
	default: // slow, not down: counts as available
		e.slows.Add(1)
	}
	if !res.OK {
		if i, ok := causeIndex[res.Cause]; ok {
			e.failed[i].Add(1)
		}
	}
	if o != Agent {
		e.dur.observe(v.Duration)
		// A run that timed out before its first byte is observed at its
		// duration, at or above its timeout (latencyHist).
		if d, _, ok := v.TTFBSample(); ok {
			e.ttfb.observe(d)
		}
	}
	if step.Changed {
		level := slog.LevelInfo
		if step.From == reporting.StateUnknown && step.State == reporting.StateHealthy {
			// Every pair leaves unknown once at start; a healthy start is
			// routine, an unhealthy or degraded one is news (it may page).
			level = slog.LevelDebug
		}
		c.log.Log(context.Background(), level, "verdict changed", "check", v.Check, "target", v.Target, "from", string(step.From),
			"to", string(step.State), "cause", v.Cause, "held_down", step.HeldDown)
	}
	c.reschedule(e, started, step.Next, p.Check.Interval)
	if done != nil {
		close(done)
	}
	return v
}

// ProbedURL is the URL a verdict reports (and vigil check --json): the check's own http.url, else the
// target URL joined with http.path, else the target URL — redacted
// (units.RedactURL), since verdicts are shown on the status page, the API
// and in alerts and a URL may carry a secret.
func ProbedURL(p *Pair) string {
	u := p.Target.URL
	if h := p.Check.HTTP; h != nil {
		switch {
		case h.URL != "":
			u = h.URL
		case h.Path != "" && h.Path != "/":
			u = checks.JoinTargetPath(p.Target.URL, h.Path)
		}
	}
	return units.RedactURL(u)
}

// SetRedact replaces Options.Redact (nil: keep text as is). A config reload
// calls it with the new config's redactor before Reload, so pairs that use
// a newly referenced secret never publish it. Runs in flight pick it up
// when they end.
func (c *Canary) SetRedact(f func(string) string) {
	if f == nil {
		c.redactFn.Store(nil)
		return
	}
	c.redactFn.Store(&f)
}

// redact applies the current Redact hook.
func (c *Canary) redact(s string) string {
	f := c.redactFn.Load()
	if f == nil || s == "" {
		return s
	}
	return (*f)(s)
}

// redactURL redacts a URL that units.RedactURL has already stripped of
// userinfo and query values: a secret in the path or a bare query key is
// caught both as written and percent-decoded (url.URL.String escapes
// characters such as a space or a slash in a path segment).
func (c *Canary) redactURL(u string) string {
	u = c.redact(u)
	for _, unescape := range []func(string) (string, error){url.PathUnescape, url.QueryUnescape} {
		if d, err := unescape(u); err == nil && d != u {
			if r := c.redact(d); r != d {
				return r // shown decoded: the escaped form held a secret
			}
		}
	}
	return u
}

// redactResult returns res with every text a verdict, a log line or an
// alert may show passed through the Redact hook. Slices are copied: the
// probe's result is not modified.
func (c *Canary) redactResult(res checks.Result) checks.Result {
	if c.redactFn.Load() == nil {
		return res
	}
	res.Err = c.redact(res.Err)
	res.Assertions = c.redactAssertions(res.Assertions)
	if res.Steps != nil {
		steps := make([]checks.StepResult, len(res.Steps))
		for i, s := range res.Steps {
			s.Err = c.redact(s.Err) // s.URL: judge redacts the one a verdict shows
			s.Assertions = c.redactAssertions(s.Assertions)
			steps[i] = s
		}
		res.Steps = steps
	}
	return res
}

func (c *Canary) redactAssertions(as []checks.AssertionResult) []checks.AssertionResult {
	if as == nil {
		return nil
	}
	out := make([]checks.AssertionResult, len(as))
	for i, a := range as {
		a.Name, a.Got, a.Want = c.redact(a.Name), c.redact(a.Got), c.redact(a.Want)
		out[i] = a
	}
	return out
}

// reschedule applies the adaptive interval after a run that started at
// started: a shorter delay pulls the next run forward (a confirm run), to
// delay after that start, or right away when the run itself lasted longer
// (an origin that times out is confirmed in about fall × timeout, not
// fall × (timeout + delay)); a longer one stretches the next regular slot.
func (c *Canary) reschedule(e *entry, started time.Time, delay, interval time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.removed {
		return
	}
	if e.plan.cron == nil {
		e.plan.eff = max(delay, interval)
	}
	if delay >= interval || e.idx < 0 {
		return
	}
	at := started.Add(delay)
	if now := time.Now(); at.Before(now) {
		at = now
	}
	if at.Before(e.next) {
		if e.plan.regular.IsZero() {
			e.plan.regular = e.next
		}
		e.plan.gap = delay
		e.next = at
		c.queue.fix(e)
		c.signal()
	}
}

func (c *Canary) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// slotKey is what a pair's interval slot is hashed from: the pair and the
// canary's region and vantage, so that the canaries of several regions
// probing one pair take turns over its interval (a fault is seen by the
// first of them within interval ÷ regions, and the origin is not probed by
// all of them at once), while a restart of one canary keeps its slots.
func slotKey(key string, cfg *Config) string {
	return key + "\x00" + cfg.Agent.Region + "\x00" + cfg.Agent.Vantage
}

// Reload swaps in a new validated config and its pairs atomically. Pairs
// whose Key() is unchanged keep their state machine, latest verdict,
// counters and schedule (their thresholds follow the new config; a changed
// interval or cron re-plans them). Other pairs start from unknown; removed
// pairs stop (a run in flight finishes but its verdict is not kept).
func (c *Canary) Reload(cfg *Config, pairs []Pair) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.labels.Load(); prev != nil && (prev.Region != cfg.Agent.Region || prev.Vantage != cfg.Agent.Vantage) {
		// Readers know regions only by name: until the old name's last
		// verdicts are stale, a proxy or alerter counts this canary twice.
		c.log.Warn("canary: agent.region or agent.vantage changed: verdicts now carry the new name; the old name's last verdicts still count "+
			"as another region in proxies' and alerts' quorums until they are older than verdicts.max_age, and a dead-man alert for the old "+
			"name fires until alerting.dead_man.forget_after unless silenced",
			"region", cfg.Agent.Region, "was_region", prev.Region, "vantage", cfg.Agent.Vantage, "was_vantage", prev.Vantage)
	}
	c.cfg = cfg
	c.labels.Store(&agentLabels{Region: cfg.Agent.Region, Vantage: cfg.Agent.Vantage})
	if conc := max(cfg.Agent.Concurrency, 1); c.sem == nil || cap(c.sem) != conc {
		c.sem = make(chan struct{}, conc)
	}
	if bc := max(cfg.Agent.Browser.MaxConcurrent, 1); c.browser == nil || cap(c.browser) != bc {
		c.browser = make(chan struct{}, bc)
	}
	old := c.entries
	c.entries = make(map[string]*entry, len(pairs))
	c.byName = make(map[[2]string]*entry, len(pairs))
	for i := range pairs {
		p := pairs[i]
		key := p.Key()
		if _, dup := c.entries[key]; dup {
			continue
		}
		pl := plan{interval: p.Check.Interval, cron: p.Check.Schedule()}
		if p.Check.Jitter != nil {
			pl.jitter = p.Check.Jitter.Fraction()
		}
		e, ok := old[key]
		if ok {
			delete(old, key)
			prev := e.pair.Load()
			e.pair.Store(&p)
			e.mu.Lock()
			e.machine.SetParams(ParamsFor(p.Check))
			e.mu.Unlock()
			if prev.Check.Interval != p.Check.Interval || prev.Check.Cron != p.Check.Cron {
				e.plan = pl
				e.next = e.plan.first(slotKey(key, cfg), now)
				c.queue.fix(e)
			} else {
				e.plan.jitter = pl.jitter
			}
		} else {
			e = &entry{key: key, idx: -1, machine: NewMachine(ParamsFor(p.Check)), plan: pl,
				failed: make([]atomic.Uint64, len(checks.AllCauses))}
			e.pair.Store(&p)
			e.next = e.plan.first(slotKey(key, cfg), now)
			heap.Push(&c.queue, e)
		}
		c.entries[key] = e
		c.byName[[2]string{p.Check.Name, p.Target.Name}] = e
	}
	for _, e := range old {
		e.removed = true
		if e.idx >= 0 {
			heap.Remove(&c.queue, e.idx)
		}
	}
	c.push.sync(cfg, pairs, c.now())
	c.pushNames = c.pushM.sync(pairs, c.pushNames)
	c.signal()
}

// Trigger runs the pair now, out of its schedule, and returns its verdict.
// If the pair is already running it waits for that run and returns its
// verdict instead: a pair never runs twice at once. It is the hook for
// passive signals and the /api/v1/trigger endpoint.
func (c *Canary) Trigger(check, target string) (reporting.Verdict, error) {
	return c.TriggerContext(context.Background(), check, target)
}

// TriggerContext is Trigger with a context bounding the wait.
func (c *Canary) TriggerContext(ctx context.Context, check, target string) (reporting.Verdict, error) {
	c.mu.Lock()
	e := c.byName[[2]string{check, target}]
	sem := c.sem
	c.mu.Unlock()
	if e == nil {
		return reporting.Verdict{}, fmt.Errorf("%w: %s × %s", ErrUnknownPair, check, target)
	}
	e.mu.Lock()
	done := e.done
	if done == nil {
		e.done = make(chan struct{})
	}
	e.mu.Unlock()
	if done == nil {
		return c.run(e, time.Time{}, sem), nil
	}
	select {
	case <-done:
		e.mu.Lock()
		v := e.latest
		e.mu.Unlock()
		return v, nil
	case <-ctx.Done():
		return reporting.Verdict{}, ctx.Err()
	}
}

// Restore seeds pairs that have not run yet with verdicts published before
// a restart (e.g. from the store's Verdicts): a verdict of this canary's
// region and vantage for a configured pair, not yet expired at now, becomes
// the pair's latest verdict and state, so a restart does not turn every
// origin unknown for rise × interval. It returns how many pairs it seeded.
//
// Restore also keeps each pair's runs (interval or cron) across the restart, from
// when the stored verdicts (of any state, expired too) say it last ran:
// its first run stays on its next slot, unless the slot before it did not
// run because of the restart; then that run is made at start (see
// plan.resume for when). So restarts neither skip nor repeat a slot's run.
func (c *Canary) Restore(vs []reporting.Verdict) int {
	now := c.now()
	c.mu.Lock()
	region, vantage := c.cfg.Agent.Region, c.cfg.Agent.Vantage
	byName := c.byName
	c.mu.Unlock()
	n := 0
	started := make(map[*entry]time.Time, len(byName))
	defer func() {
		for _, e := range byName {
			c.resume(e, started[e])
		}
		c.signal()
	}()
	for _, v := range vs {
		if v.Region != region || v.Vantage != vantage {
			continue
		}
		e := byName[[2]string{v.Check, v.Target}]
		if e == nil {
			continue
		}
		// The schedule runs on the real clock: carry the run's start over
		// as an age. Any stored run counts, also one whose verdict is
		// unknown (before rise passes) or expired.
		if s := time.Now().Add(-now.Sub(v.At.Add(-v.Duration))); s.After(started[e]) {
			started[e] = s
		}
		if v.Current(now) == reporting.StateUnknown {
			if v.State == reporting.StateUnhealthy && v.HeldUntil.After(now) {
				// Expired, but its flap hold-down is not over: keep it.
				e.mu.Lock()
				if !e.has && e.done == nil {
					e.machine.SeedHold(v)
				}
				e.mu.Unlock()
			}
			continue
		}
		// Verdicts stored before redaction existed may carry a secret.
		v.Err, v.URL = c.redact(v.Err), c.redactURL(v.URL)
		e.mu.Lock()
		if !e.has && e.done == nil {
			e.machine.Seed(v)
			e.latest, e.has = v, true
			n++
		}
		e.mu.Unlock()
	}
	return n
}

// resume re-plans e's first run after Restore (see plan.resume); started
// is when its restored run started on the real clock, zero for none.
func (c *Canary) resume(e *entry, started time.Time) {
	wall := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.removed || e.idx < 0 {
		return
	}
	e.mu.Lock()
	ran := e.done != nil || !e.lastAt.IsZero() // Run may have fired it since Restore seeded it
	e.mu.Unlock()
	if ran {
		return
	}
	if next, ok := e.plan.resume(started, wall); ok {
		e.next = next
		c.queue.fix(e)
	}
}

// LastRun is the latest run of one pair made by this canary: the full
// result with its assertions (got and want) and script steps, its texts
// redacted as in verdicts.
type LastRun struct {
	Target, Region, Vantage string
	// At is when the run finished.
	At     time.Time
	Result checks.Result
}

// LastRuns returns the latest run of each configured target of check that
// this canary ran since it started (a verdict restored from the store has
// no run details), sorted by target.
func (c *Canary) LastRuns(check string) []LastRun {
	c.mu.Lock()
	agent := c.labels.Load()
	var es []*entry
	for _, e := range c.entries {
		if p := e.pair.Load(); p != nil && p.Check.Name == check {
			es = append(es, e)
		}
	}
	c.mu.Unlock()
	var out []LastRun
	for _, e := range es {
		p := e.pair.Load()
		e.mu.Lock()
		if !e.lastAt.IsZero() {
			out = append(out, LastRun{Target: p.Target.Name, Region: agent.Region, Vantage: agent.Vantage,
				At: e.lastAt, Result: e.lastRes})
		}
		e.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

// Latest returns the latest verdict of every configured pair that has run,
// sorted by check, target. States are as judged; use Verdict.Current for
// the state at a given time (expired verdicts are unknown).
func (c *Canary) Latest() []reporting.Verdict {
	c.mu.Lock()
	es := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		es = append(es, e)
	}
	c.mu.Unlock()
	out := make([]reporting.Verdict, 0, len(es))
	for _, e := range es {
		e.mu.Lock()
		if e.has {
			out = append(out, e.latest)
		}
		e.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Check != out[j].Check {
			return out[i].Check < out[j].Check
		}
		return out[i].Target < out[j].Target
	})
	return out
}

// Verdicts implements reporting.Source over the in-memory latest verdicts:
// those whose At is within maxAge of now (0: all), with the state at now
// (expired verdicts report unknown).
func (c *Canary) Verdicts(_ context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	now := c.now()
	all := c.Latest()
	out := all[:0]
	for _, v := range all {
		if maxAge > 0 && now.Sub(v.At) > maxAge {
			continue
		}
		v.State = v.Current(now)
		out = append(out, v)
	}
	return out, nil
}

var _ reporting.Source = (*Canary)(nil)

// dropRemoved leaves out of vs (in place) the series of this canary's own
// region and vantage whose check × target its current config does not run
// (over every shard; disabled checks do not run): a pair a reload removed,
// whose last verdict a store keeps for its whole retention. Series of
// other regions, and of other vantages of this region (other canaries
// writing to a shared store, such as InfluxDB, with checks of their own),
// are not this config's to judge and are kept: dropping them would hide
// their failures from a proxy reading this API. Region and vantage are
// what tells this canary's series apart in a store (Restore reads its own
// back by them), so this is as narrow as the store lets it be; tracking
// the pairs this process ran would miss a pair removed while it was
// stopped.
func (c *Canary) dropRemoved(vs []reporting.Verdict) []reporting.Verdict {
	c.mu.Lock()
	cfg := c.cfg
	c.mu.Unlock()
	agent := c.labels.Load()
	if cfg == nil || agent == nil {
		return vs
	}
	pairs := cfg.PairNames()
	out := vs[:0]
	for _, v := range vs {
		if v.Region == agent.Region && v.Vantage == agent.Vantage && !slices.Contains(pairs[v.Check], v.Target) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// Skipped returns how many scheduled runs of the pair were skipped because
// its previous run was still in flight.
func (c *Canary) Skipped(check, target string) uint64 {
	c.mu.Lock()
	e := c.byName[[2]string{check, target}]
	c.mu.Unlock()
	if e == nil {
		return 0
	}
	return e.skipped.Load()
}

// SetReloadError records the outcome of the last config reload (nil: it
// succeeded). A non-nil error shows in Health, /healthz and
// vigil_config_last_reload_successful while the old config keeps running.
func (c *Canary) SetReloadError(err error) {
	c.reloadErr.Store(&errBox{err})
	if err == nil {
		c.m.reloadOK.Set(1)
		c.m.reloadTime.SetToCurrentTime()
	} else {
		c.m.reloadOK.Set(0)
	}
}

// ErrReloadFailed marks the reload error in Health's joined error, so a
// caller that reports the reload itself can leave it out.
var ErrReloadFailed = errors.New("config reload failed")

// Health returns nil when the canary is fine, else every reason it is not:
// the last reload failed, verdicts were dropped within HealthWindow, or Run
// has returned.
func (c *Canary) Health() error {
	var errs []error
	if b := c.reloadErr.Load(); b != nil && b.err != nil {
		errs = append(errs, fmt.Errorf("%w (old config still running): %w", ErrReloadFailed, b.err))
	}
	if c.stopped.Load() {
		errs = append(errs, errors.New("scheduler stopped"))
	}
	total := c.m.publishDropped.Load()
	if c.o.Dropped != nil {
		total += c.o.Dropped()
	}
	now := time.Now()
	c.dropMu.Lock()
	if total > c.dropLast {
		c.dropLast, c.dropLastSeen = total, now
	}
	if !c.dropLastSeen.IsZero() && now.Sub(c.dropLastSeen) < c.o.HealthWindow {
		errs = append(errs, fmt.Errorf("verdicts dropped by sinks in the last %s (%d in total)", c.o.HealthWindow, total))
	}
	c.dropMu.Unlock()
	errs = append(errs, c.agentFaults()...)
	return errors.Join(errs...)
}

// agentFaults is one error per cause for the pairs whose latest runs the
// agent could not make (Outcome Agent: no file descriptor, no browser):
// how many of all pairs, since when, and the latest such run's error. The
// canary runs, but checks nothing for them: that is news for whoever runs
// it, as /healthz is.
func (c *Canary) agentFaults() []error {
	type fault struct {
		n     int
		since time.Time
		err   string
		at    time.Time
	}
	c.mu.Lock()
	es := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		es = append(es, e)
	}
	c.mu.Unlock()
	by := map[checks.Cause]*fault{}
	for _, e := range es {
		e.mu.Lock()
		since, res, at := e.agentSince, e.lastRes, e.lastAt
		e.mu.Unlock()
		if since.IsZero() {
			continue
		}
		f := by[res.Cause]
		if f == nil {
			f = &fault{}
			by[res.Cause] = f
		}
		f.n++
		if f.since.IsZero() || since.Before(f.since) {
			f.since = since
		}
		if at.After(f.at) {
			f.at, f.err = at, res.Err
		}
	}
	var out []error
	for _, k := range slices.Sorted(maps.Keys(by)) {
		f := by[k]
		out = append(out, fmt.Errorf("%d of %d pairs cannot run since %s, the agent's own trouble (not counted against the targets): %s: %s",
			f.n, len(es), f.since.UTC().Format(time.RFC3339), k, units.SingleLine(f.err)))
	}
	return out
}

func (c *Canary) pairCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Registry returns the registry the canary's collectors are on.
func (c *Canary) Registry() *prometheus.Registry { return c.reg }
