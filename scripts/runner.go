package scripts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"
	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// cleanupBudget bounds an `always` step that starts after the run's
// deadline passed.
const cleanupBudget = 5 * time.Second

// failureCaptureBudget bounds the screenshot taken after a failure (also
// when the run has no deadline).
const failureCaptureBudget = 5 * time.Second

// maxCaptureReserve caps the slice of a browser run's timeout kept for the
// failure screenshot: 20 % of the timeout, at most 1s. The steps run in the
// rest, so that a failure at the steps' deadline still gets its screenshot
// and the whole run ends within the check's timeout.
const maxCaptureReserve = time.Second

// maxResponsiveProbe bounds the question "does the page still answer?"
// asked before a failure screenshot. A renderer busy in a script that never
// yields, or held by a JavaScript dialog, does not answer it, and the
// screenshot is skipped rather than waited for.
const maxResponsiveProbe = 250 * time.Millisecond

// maxSlowProbe bounds that question, and the screenshot of a tab whose
// navigation still waits for its server, when the check has time left
// beyond the capture reserve: a step's own timeout ended the step, and a
// slow server or a busy page gets more of the check's time to answer.
const maxSlowProbe = 2 * time.Second

// DefaultSlotWait is how long a browser run waits for a browser slot
// (agent.browser.max_concurrent) when Options.SlotWait is 0.
const DefaultSlotWait = 5 * time.Minute

// Options configure a Runner.
type Options struct {
	// Check and Version name the check (artifact names, User-Agent of HTTP
	// steps through package checks).
	Check, Version string
	// Timeout is the check's timeout for one whole run, failure screenshot
	// included; 0 = only the context's deadline. Step timeouts are capped by
	// it. For a script with browser steps it starts when the run holds a
	// browser slot: the wait for the slot does not count, and a deadline on
	// Run's context (the caller's copy of the same timeout, started before
	// the wait) does not end the run; cancelling the context does. With
	// Timeout 0 the context's deadline bounds the wait and the run.
	//
	// Callers should not put the timeout on Run's context (see
	// EnforcesTimeout): once such a deadline has passed, the context is done
	// for good and a later cancellation of its parent (Ctrl-C, shutdown)
	// can no longer reach a run still waiting for its slot.
	Timeout time.Duration
	// SlotWait bounds the wait for a browser slot before a browser run
	// starts. Default DefaultSlotWait (5m). A run that gets no slot in time
	// does not start: it fails with cause browser_unavailable, naming the
	// contention.
	SlotWait time.Duration
	// DataDir is agent.data_dir. Screenshots are written under
	// DataDir/artifacts and named relative to it in Result.Artifacts;
	// empty = no files are written.
	DataDir string
	// Browser is the agent's shared browser. nil: browser steps fail with
	// cause browser_unavailable.
	Browser *Browser
	// ArtifactMaxAge and ArtifactsPerPair bound the artifacts kept under
	// DataDir/artifacts (see PruneArtifacts). Defaults
	// DefaultArtifactMaxAge (7 days) and DefaultArtifactsPerPair (20); the
	// agent passes store.embedded.retention as ArtifactMaxAge when the
	// embedded store is on.
	ArtifactMaxAge   time.Duration
	ArtifactsPerPair int
}

// Runner is a compiled script. It implements checks.Check and is safe for
// concurrent runs: every run has its own variables, cookie jar and browser
// context.
type Runner struct {
	steps Script
	o     Options
	https []*checks.HTTP // by step index; nil for other kinds
	// credential names the variables sent as credentials (credentialVars).
	credential map[string]bool
}

var _ checks.Check = (*Runner)(nil)

// New validates and compiles a script (see Script.ValidateAndSetDefaults;
// errors carry the key path from `script`, e.g.
// `script[2].browser.click: selector is empty`).
func New(steps Script, o Options) (*Runner, error) {
	if err := steps.ValidateAndSetDefaults(o.Timeout); err != nil {
		return nil, units.Prefix("script", err)
	}
	r := &Runner{steps: steps, o: o, https: make([]*checks.HTTP, len(steps)), credential: steps.credentialVars()}
	var errs []error
	for i := range steps {
		s := &steps[i]
		if s.HTTP == nil {
			continue
		}
		h, err := checks.NewHTTP(*s.HTTP, *s.Expect, checks.Options{Check: o.Check, Version: o.Version, Timeout: s.timeout})
		if err != nil {
			errs = append(errs, units.Prefix(fmt.Sprintf("script[%d]", i), err))
			continue
		}
		r.https[i] = h
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// UsesBrowser reports whether the script has browser steps (the canary
// holds its browser concurrency slot for such checks).
func (rn *Runner) UsesBrowser() bool { return rn.steps.HasBrowser() }

// EnforcesTimeout reports whether Run bounds every run by Options.Timeout
// itself (Timeout > 0), from when the run holds its browser slot. Callers
// then pass Run a context without the check's timeout, so that cancelling
// it still ends a run that is queued for a browser slot after the timeout
// would have passed.
func (rn *Runner) EnforcesTimeout() bool { return rn.o.Timeout > 0 }

// slotWaitStopKey is the context key of WithSlotWaitCancel.
type slotWaitStopKey struct{}

// WithSlotWaitCancel returns a copy of ctx carrying stop. A browser run
// given that context that is still waiting for its browser slot when stop
// is done gives up at once (it did not start: see WaitCanceled); a run that
// holds its slot, or finds one free, is not affected. The canary passes its
// stop context, so a shutdown drops queued browser runs and lets runs in
// flight finish.
func WithSlotWaitCancel(ctx, stop context.Context) context.Context {
	return context.WithValue(ctx, slotWaitStopKey{}, stop)
}

// slotWaitCanceled is the error of a run cancelled while it waited for a
// browser slot.
const slotWaitCanceled = "the run was canceled while waiting for a browser slot"

// WaitCanceled reports whether res is the Result of a browser run that was
// cancelled (its context, or WithSlotWaitCancel's stop) while it waited for
// its browser slot: it did not start, every step is skipped.
func WaitCanceled(res checks.Result) bool {
	return res.Cause == checks.CauseInternal && res.Err == slotWaitCanceled
}

// Steps returns the compiled script (names and defaults filled in).
func (rn *Runner) Steps() Script { return rn.steps }

// run is the state of one run.
type run struct {
	runner *Runner
	target checks.Target
	vars   *runVars
	jar    http.CookieJar
	last   lastResponse

	tab       *tab
	tabErr    error
	tabCause  checks.Cause
	startErr  error           // why the browser did not start before the run's clock started
	closing   <-chan struct{} // done when a tab whose opening was cut short is closed; nil: none
	release   func()          // gives the browser slot back; nil without one
	slotWait  time.Duration   // how long the run waited for its browser slot
	artifacts []string
	start     time.Time
	end       time.Time           // the run's whole budget ends here (screenshot included); zero: no deadline
	pushed    map[string]bool     // cookies copied into the browser
	navFailed string              // Chromium's error of the last navigate, when it failed to load
	limit     string              // the current step's time limit, for messages: "300ms (the step's timeout)"
	pulled    map[string]*url.URL // cookies copied from the browser, by name, domain and path
}

// Run runs the script once against t. It always returns a Result: steps run
// in order; after the first failure only `always` steps run, the others are
// reported as skipped. The first failure decides Result.Cause and Err. A
// step that only missed a speed target (cause ttfb or duration) is not a
// failure that stops the run: the steps after it run, and the run is slow
// (that step's cause, its Err and assertions) unless a later step fails,
// which then decides as the first failure would.
// Result.Phases.TTFB is the TTFB of the first step that is not `always` and
// got a response (http step or navigation); 0 when none did. Its DNS,
// Connect, TLS and Transfer are that step's request's; Total is the run's.
//
// A script with browser steps first waits for a browser slot (at most
// Options.SlotWait) and, when Chromium is not running, for it to start; its
// Timeout starts when it has both (see Options.Timeout). A browser that
// could not start fails the first browser step with that error; one that
// died since is started again for that step within the Timeout. The last min(1s, 20 %) of the timeout is kept for the
// failure screenshot, so the run, screenshot included, ends within the
// timeout; only `always` steps that start after the deadline add their
// own cleanup budget.
func (rn *Runner) Run(ctx context.Context, t checks.Target) checks.Result {
	browser := rn.steps.HasBrowser() && rn.o.Browser != nil
	var release func()
	var slotWait time.Duration
	var startErr error
	if browser {
		rn.sweepArtifacts()
		if rn.o.Timeout > 0 {
			var stop func()
			ctx, stop = withoutDeadline(ctx)
			defer stop()
		}
		queued := time.Now()
		var err error
		var cancelled bool
		if release, cancelled, err = rn.waitSlot(ctx); err != nil {
			return rn.notStarted(queued, err, cancelled)
		}
		// Starting (or restarting) Chromium is the agent's own work, not
		// the origin's: it happens before the run's clock starts, bounded by
		// browserStartTimeout, so a first step with a short timeout does not
		// fail while the browser starts.
		// A browser that cannot start fails the first browser step with
		// that error: a second start within the run's timeout would make
		// the run outlast it.
		_, startErr = rn.o.Browser.running(ctx)
		slotWait = time.Since(queued)
	}
	start := time.Now()
	res := checks.Result{Start: start}
	var end time.Time
	if rn.o.Timeout > 0 {
		end = start.Add(rn.o.Timeout)
	} else if dl, ok := ctx.Deadline(); ok {
		end = dl
	}
	if !end.IsZero() {
		var reserve time.Duration
		if browser {
			reserve = min(maxCaptureReserve, end.Sub(start)/5)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end.Add(-reserve))
		defer cancel()
	}
	jar, _ := cookiejar.New(nil)
	vars := newRunVars()
	vars.credential = rn.credential
	r := &run{runner: rn, target: t, vars: vars, jar: secretJar{jar, vars}, start: start, end: end,
		release: release, slotWait: slotWait, startErr: startErr}
	defer r.close()

	failed := false // a step failed: the others are skipped unless `always`
	slow := false   // a step only missed a speed target; later steps still run
	for i := range rn.steps {
		s := &rn.steps[i]
		sr := checks.StepResult{Name: s.Name}
		if failed && !s.Always {
			sr.Skipped = true
			res.Steps = append(res.Steps, sr)
			continue
		}
		if ctx.Err() != nil && !s.Always {
			sr.Skipped = true
			res.Steps = append(res.Steps, sr)
			if !failed {
				failed = true
				res.Cause = checks.CauseTimeout
				res.Err = fmt.Sprintf("run timed out before step %d %q", i, s.Name)
				res.Assertions = nil // a slow step's, if any: the timeout decides
			}
			continue
		}
		stepStart := time.Now()
		o := r.step(ctx, i, s)
		sr.Duration = time.Since(stepStart)
		sr.OK = o.err == nil
		sr.Cause = o.cause
		sr.StatusCode = o.status
		sr.URL = r.vars.redact(units.RedactURL(o.url))
		sr.TTFB = o.ttfb
		sr.Metrics = o.metrics
		sr.Assertions = r.redactAssertions(o.assertions)
		r.artifacts = append(r.artifacts, o.artifacts...)
		if o.err != nil {
			if sr.Cause == checks.CauseNone {
				sr.Cause = checks.CauseScript
			}
			sr.Err = r.vars.redact(o.err.Error())
		}
		// The run's TTFB is the first main step's that got a response (an
		// http step, or a browser navigation): `always` steps are cleanup,
		// and their latency must not stand in for the transaction's. Its
		// DNS, connect, TLS and transfer times are that same request's, so
		// that TTFB − DNS − connect − TLS is its server wait.
		if res.Phases.TTFB == 0 && o.ttfb > 0 && !s.Always {
			res.Phases.TTFB = o.ttfb
			res.Phases.DNS, res.Phases.Connect = o.phases.DNS, o.phases.Connect
			res.Phases.TLS, res.Phases.Transfer = o.phases.TLS, o.phases.Transfer
		}
		// A slow run's status is its deciding slow step's (set below),
		// not a later passing step's; an `always` step's (cleanup) is
		// not the transaction's either, unless it decides the run.
		if o.status != 0 && !failed && !slow && !s.Always {
			res.StatusCode = o.status
		}
		// A step that only missed a speed target (ttfb, duration) makes the
		// run slow, not failed: the steps after it run, so that a later
		// hard failure is seen and decides the run (a hard failure is
		// never reported as merely slow). The first slow step decides a
		// run that has no hard failure.
		isSlow := o.err != nil && sr.Cause.SLO()
		if o.err != nil && s.Browser != nil && sr.Cause != checks.CauseBrowserUnavailable && r.browserGone(sr.Cause) {
			// Whatever the step saw (an aborted navigation, a closed
			// tab), the browser process died under it: the agent's own
			// trouble, not counted against the target.
			sr.Cause = checks.CauseBrowserUnavailable
			sr.Err = "the browser process died during the run (the agent's own trouble, not the page's): " + sr.Err
			isSlow = false
		}
		if o.err != nil && !failed && (!isSlow || !slow) {
			path, why := r.captureFailure(i, s, &sr)
			if path != "" {
				r.artifacts = append(r.artifacts, path)
			}
			if why != "" {
				sr.Err += "; no failure screenshot: " + r.vars.redact(why)
			}
			res.Cause = topCause(sr.Cause)
			if s.unnamed {
				// The default name is the index and the kind again.
				res.Err = fmt.Sprintf("step %d (%s): %s", i, s.kind, sr.Err)
			} else {
				res.Err = fmt.Sprintf("step %d %q (%s): %s", i, s.Name, s.kind, sr.Err)
			}
			res.Assertions = sr.Assertions
			if o.status != 0 {
				res.StatusCode = o.status
			}
			if isSlow {
				slow = true
			} else {
				failed = true
			}
		}
		res.Steps = append(res.Steps, sr)
	}
	res.OK = !failed && !slow
	res.Artifacts = r.artifacts
	res.Phases.Total = time.Since(start)
	return res
}

// browserGoneWait bounds how long a failed browser step waits to learn
// whether the browser process died: the step may see its error (an
// aborted navigation) a moment before the browser's context ends.
const browserGoneWait = 200 * time.Millisecond

// browserGone reports whether the browser process behind the run's tab
// died. After a failure that could come from it (one that could not run,
// not an assertion of the page's), it waits up to browserGoneWait for the
// browser's context to end.
func (r *run) browserGone(cause checks.Cause) bool {
	if r.tab == nil || r.tab.root == nil {
		return false
	}
	if r.tab.browserDead() {
		return true
	}
	if !(checks.Result{Cause: cause}).CouldNotRun() {
		return false
	}
	t := time.NewTimer(browserGoneWait)
	defer t.Stop()
	select {
	case <-r.tab.root.Done():
		return true
	case <-t.C:
		return false
	}
}

// withoutDeadline returns a context with ctx's values that ends when ctx is
// cancelled (Ctrl-C, shutdown) but not when ctx's deadline passes, and a
// function that releases it. A cancellation of ctx's parent after ctx's
// deadline passed cannot be seen through ctx: callers that cancel runs pass
// a context without the timeout (EnforcesTimeout).
func withoutDeadline(ctx context.Context) (context.Context, func()) {
	d, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel(context.Cause(ctx))
		}
	})
	return d, func() { stop(); cancel(nil) }
}

// waitSlot waits, at most Options.SlotWait, for a slot of the browser.
// cancelled reports that ctx, or the stop of WithSlotWaitCancel, ended the
// wait.
func (rn *Runner) waitSlot(ctx context.Context) (release func(), cancelled bool, err error) {
	wait := rn.o.SlotWait
	if wait <= 0 {
		wait = DefaultSlotWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, true, err
	}
	// A free slot is taken without waiting, also once stop is done.
	select {
	case rn.o.Browser.sem <- struct{}{}:
		return rn.o.Browser.releaseSlot, false, nil
	default:
	}
	stop, _ := ctx.Value(slotWaitStopKey{}).(context.Context)
	if stop != nil {
		defer context.AfterFunc(stop, cancel)()
	}
	release, err = rn.o.Browser.acquire(wctx)
	if err == nil {
		return release, false, nil
	}
	if ctx.Err() != nil || (stop != nil && stop.Err() != nil) {
		return nil, true, err
	}
	n := cap(rn.o.Browser.sem)
	return nil, false, fmt.Errorf("no browser slot came free within %s: all %d (agent.browser.max_concurrent) were held by other runs", wait, n)
}

// notStarted is the Result of a run that got no browser slot: every step
// is skipped. Contention inside the agent is not the origin's failure, so
// the cause is browser_unavailable ("could not run"), or internal when the
// run was cancelled while it waited.
func (rn *Runner) notStarted(queued time.Time, err error, cancelled bool) checks.Result {
	res := checks.Result{Start: queued, Cause: checks.CauseBrowserUnavailable,
		Err: "the run did not start: " + err.Error()}
	if cancelled {
		res.Cause, res.Err = checks.CauseInternal, slotWaitCanceled
	}
	for i := range rn.steps {
		res.Steps = append(res.Steps, checks.StepResult{Name: rn.steps[i].Name, Skipped: true})
	}
	return res
}

// topCause is the Result's cause for a failed step's cause: a step that
// could not run (network, TLS, timeout, browser, internal) or failed an SLO
// assertion (ttfb, duration) passes its cause on; any other assertion of
// the script fails it as CauseScript.
func topCause(c checks.Cause) checks.Cause {
	if c.SLO() || (checks.Result{Cause: c}).CouldNotRun() {
		return c
	}
	return checks.CauseScript
}

// tabOpenMin is the least time a run's tab gets to open (a new browser
// context and target: 0.1-0.5 s), whatever the first step's timeout.
const tabOpenMin = 5 * time.Second

// step runs one step with its own deadline. A panic in a step (a bug, or a
// library's) fails the step with CauseInternal instead of the agent.
func (r *run) step(runCtx context.Context, i int, s *Step) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("script step panicked", "check", r.runner.o.Check, "step", i, "panic", p, "stack", string(debug.Stack()))
			o = outcome{cause: checks.CauseInternal, err: fmt.Errorf("internal error: %v", p)}
		}
	}()
	timeout := s.timeout
	if timeout <= 0 {
		timeout = DefaultStepTimeout
	}
	late := runCtx.Err() != nil // an always step after the run's deadline
	capped := false             // the run's deadline, not the step's timeout, bounds the step
	if late {
		timeout = min(timeout, cleanupBudget)
	} else if dl, ok := runCtx.Deadline(); ok && time.Until(dl) < timeout {
		timeout, capped = time.Until(dl).Round(time.Millisecond), true
	}
	base := runCtx
	if late {
		base = context.WithoutCancel(runCtx)
	}
	// A ${env:NAME} the agent's environment does not set is the agent's
	// own configuration: the step fails with cause agent before it sends
	// a request or opens a tab (not counted against the target).
	for _, rf := range s.refs {
		if _, ok := r.vars.lookup(rf); rf.env && !ok {
			return outcome{cause: checks.CauseAgent, err: &EnvUnsetError{Name: rf.name}}
		}
	}
	defer func() {
		// One read again mid-step (the environment changed since).
		var ee *EnvUnsetError
		if o.err != nil && errors.As(o.err, &ee) {
			o.cause = checks.CauseAgent
		}
	}()
	switch {
	case s.HTTP != nil:
		ctx, cancel := context.WithTimeout(base, timeout)
		r.pullCookies(ctx)
		o = r.runHTTP(ctx, i, s)
		cut := ctx.Err() != nil
		cancel()
		if capped && cut && o.err != nil {
			// What the check's timeout left the step, not the step's own
			// timeout, ran out: say so after the time the message gives
			// ("timeout: no response within 486ms (what was left of the
			// check's 3s timeout)").
			o.err = r.checkTimeoutLeft(o.err)
		}
	case s.program != nil:
		o = r.runExpr(s)
	case s.Browser != nil:
		// The first browser step opens the run's tab (the run already holds
		// its browser slot and Chromium runs). That is the agent's work, not
		// the page's: it gets the step's timeout but at least tabOpenMin,
		// within the run's deadline, and does not eat into the step's own.
		// A browser that died since the run started is started again
		// within the same limit.
		octx, ocancel := context.WithTimeout(base, max(timeout, tabOpenMin))
		opened := r.tab == nil
		err := r.openTab(octx, func() string {
			switch {
			case late:
				return fmt.Sprintf("the %s an always step gets once the check's timeout has passed were used up", roundForText(max(timeout, tabOpenMin)))
			case runCtx.Err() != nil && r.runner.o.Timeout > 0:
				return fmt.Sprintf("the check's %s timeout ran out", roundForText(r.runner.o.Timeout))
			case runCtx.Err() != nil:
				return "the check's timeout ran out"
			}
			return fmt.Sprintf("the %s it gets for that ran out (the step's timeout, at least %s)", roundForText(max(timeout, tabOpenMin)), tabOpenMin)
		})
		ocancel()
		if err != nil {
			if !errors.Is(err, ErrBrowserUnavailable) {
				// The browser runs but gave the step no tab: the step
				// never reached its page; say which it was.
				err = fmt.Errorf("%s: %w", r.browserWhat(s), err)
			}
			return outcome{cause: r.tabCause, err: err}
		}
		r.limit = fmt.Sprintf("%s (the step's timeout)", roundForText(timeout))
		if capped {
			r.limit = fmt.Sprintf("%s (what was left of the check's %s timeout)", roundForText(timeout), roundForText(r.runner.o.Timeout))
		}
		// Browser actions run in the tab's chromedp context, bounded by the
		// step's timeout and, unless late, by the run's context.
		ctx, cancel := context.WithTimeout(r.tab.ctx, timeout)
		stop := func() bool { return false }
		if !late {
			stop = context.AfterFunc(runCtx, cancel)
		}
		r.syncCookies(ctx)
		o = r.runBrowser(ctx, s, timeout)
		stop()
		cancel()
		// The cookies the browser holds now (a login page's HttpOnly
		// session) are secrets before this step's messages and
		// screenshot are made, as the jar's are.
		r.browserCookieSecrets()
		// What the page reported so far, on every browser step.
		console, failedReqs := r.tab.events.snapshot()
		if o.metrics == nil {
			o.metrics = map[string]float64{}
		}
		o.metrics["console_errors"] = float64(len(console))
		o.metrics["failed_requests"] = float64(len(failedReqs))
		if opened {
			// Not part of the step's duration nor the run's timeout.
			o.metrics["browser_slot_wait_ms"] = float64(r.slotWait) / float64(time.Millisecond)
		}
	default:
		o = outcome{cause: checks.CauseInternal, err: errors.New("step has no kind")}
	}
	// A wait ran out of time. An element that never appeared stays a
	// script failure: the page answered, without the element. A
	// navigation without its load event within the step's timeout is
	// cause timeout, as an http step that runs out of its timeout is: the
	// origin did not deliver the page in time. When the run's deadline,
	// not the step's own timeout, ended the wait, a navigation (or an
	// evaluation, a sleep) that did not finish is the run's timeout.
	if o.err != nil && o.cause == checks.CauseScript {
		var we *waitErr
		if errors.As(o.err, &we) && !we.element {
			switch {
			case !late && (capped || runCtx.Err() != nil):
				o.cause = checks.CauseTimeout
				o.err = fmt.Errorf("run timed out: %w", o.err)
			case we.load:
				o.cause = checks.CauseTimeout
			}
		}
	}
	return o
}

// withinTime finds the time limit an http step's deadline message quotes
// ("no response within 486ms", "no connection within 1.2s").
var withinTime = regexp.MustCompile(`\bwithin [0-9][0-9.]*[a-zµ]+`)

// checkTimeoutLeft returns err, the error of an http step that what was
// left of the check's timeout ended, with the time it quotes said to be
// that; err as it is when it quotes none.
func (r *run) checkTimeoutLeft(err error) error {
	msg := err.Error()
	loc := withinTime.FindStringIndex(msg)
	if loc == nil {
		return err
	}
	what := "(what was left of the check's timeout)"
	if t := r.runner.o.Timeout; t > 0 {
		what = fmt.Sprintf("(what was left of the check's %s timeout)", roundForText(t))
	}
	return errors.New(msg[:loc[1]] + " " + what + msg[loc[1]:])
}

// runExpr evaluates an expression step.
func (r *run) runExpr(s *Step) outcome {
	vars := make(map[string]string, len(r.vars.vars))
	for k, v := range r.vars.vars {
		vars[k] = v
	}
	// A variable that is not set (its extracting step failed, or did not
	// run) fails the step naming it: it does not read as "".
	for _, name := range exprVars(s.Expr) {
		if _, ok := vars[name]; !ok {
			return failf("expr %s: %w", s.Expr, &unsetVarError{name: name})
		}
	}
	env := newExprEnv(vars, r.last)
	ok, err := runExpr(s.program, env)
	if err != nil {
		var unset *unsetVarError
		if errors.As(err, &unset) { // vars[...] with a computed name
			return failf("expr %s: %w", s.Expr, unset)
		}
		return failf("expr %s: %w", s.Expr, err)
	}
	a := checks.AssertionResult{Name: "expr", OK: ok, Got: fmt.Sprint(ok), Want: s.Expr}
	if !ok {
		// What the comparisons compared (secrets among them are hidden
		// with the rest of the message).
		why := fmt.Sprintf("last.status_code=%d", r.last.StatusCode)
		if values := explainExpr(s.Expr, env, r.vars.secretVar); values != "" {
			why = values + "; " + why
		}
		return outcome{cause: checks.CauseScript, err: fmt.Errorf("expr %s: false (%s)", s.Expr, why), assertions: []checks.AssertionResult{a}}
	}
	return outcome{assertions: []checks.AssertionResult{a}}
}

// openTab opens the run's browser tab on the first browser step. The run
// already holds its browser slot (Run). limit says, once ctx ended, which
// limit ended it ("the check's 3s timeout ran out").
func (r *run) openTab(ctx context.Context, limit func() string) error {
	if r.tab != nil {
		return nil
	}
	if r.tabErr != nil {
		return r.tabErr
	}
	b := r.runner.o.Browser
	if b == nil {
		r.tabCause, r.tabErr = checks.CauseBrowserUnavailable, fmt.Errorf("%w: no browser configured", ErrBrowserUnavailable)
		return r.tabErr
	}
	opening := time.Now()
	var t *tab
	err := r.startErr
	if err == nil {
		t, err = b.openTab(ctx)
	}
	if err != nil {
		var cut *cutError
		switch {
		case errors.Is(err, ErrBrowserUnavailable):
			r.tabCause = checks.CauseBrowserUnavailable
		case errors.As(err, &cut) || ctx.Err() != nil:
			// Opening the tab (or starting the browser again for it)
			// is the agent's work, not the page's: its time ran out
			// before the page was even asked for. Not counted against
			// the target (checks.Cause.AgentFault).
			r.tabCause = checks.CauseBrowserUnavailable
			what := fmt.Sprintf("the browser did not open the run's tab within %s", roundForText(time.Since(opening)))
			switch {
			case r.startErr != nil:
				// Run's own start, bounded only by its context's deadline
				// when the check has no Timeout.
				what = "the browser did not start"
			case cut != nil && cut.start:
				what = fmt.Sprintf("the browser was not running (it had died) and did not start again within %s", roundForText(time.Since(opening)))
			}
			if cut != nil {
				r.closing = cut.closed
			}
			err = fmt.Errorf("%s, and %s (vigil's own work, before the page was asked for; the machine or the browser is overloaded)", what, limit())
		default:
			// The browser died while opening the tab: the agent's own
			// trouble too.
			r.tabCause = checks.CauseBrowserUnavailable
		}
		r.tabErr = err
		return err
	}
	r.tab = t
	return nil
}

// browserWhat names a browser step for a message about its tab: its
// action, and for a navigate step the URL (query values as "…").
func (r *run) browserWhat(s *Step) string {
	if s.Browser != nil && s.Browser.nav != nil {
		if u, err := r.vars.expand(s.Browser.nav.URL); err == nil {
			return "navigate " + units.RedactURL(resolveURL(r.target.URL, u))
		}
		return "navigate"
	}
	return s.kind
}

// close closes the run's browser tab (its target and browser context) and
// gives the browser slot back once the tab is gone, and a tab whose
// opening was cut short (closing) too. It waits for that
// until the run's budget ends; a tab that takes longer to close (a hung
// renderer) is closed in the background, and keeps the slot until it is
// gone, so hung pages never pile up beyond agent.browser.max_concurrent.
func (r *run) close() {
	t, release, closing := r.tab, r.release, r.closing
	r.tab, r.release, r.closing = nil, nil, nil
	if t == nil && release == nil && closing == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if t != nil {
			t.close()
		}
		if closing != nil {
			<-closing // a tab whose opening was cut short
		}
		if release != nil {
			release()
		}
	}()
	if r.end.IsZero() {
		<-done
		return
	}
	wait := time.NewTimer(max(time.Until(r.end), 0))
	defer wait.Stop()
	select {
	case <-done:
	case <-wait.C:
	}
}

// captureFailure saves a screenshot of the tab after step i failed and puts
// the page URL into the step result, within what is left of the run's
// budget (the reserve Run kept). It returns the PNG's reference, or "" and
// why no screenshot was taken ("" when there is nothing to say: no tab,
// a dead browser, no data dir).
func (r *run) captureFailure(i int, s *Step, sr *checks.StepResult) (path, why string) {
	if r.tab == nil || r.tab.browserDead() {
		return "", ""
	}
	budget := failureCaptureBudget
	if !r.end.IsZero() {
		budget = min(budget, time.Until(r.end))
	}
	if budget <= 0 {
		return "", "no time left in the check's timeout"
	}
	ctx, cancel := context.WithTimeout(r.tab.ctx, budget)
	defer cancel()
	// A hung page would hold the screenshot (and Location) for the whole
	// budget: ask it for a trivial value first. When the check has time
	// left beyond the reserve (a step's own timeout ended the step), the
	// page gets up to maxSlowProbe of it.
	probe := min(maxResponsiveProbe, budget/3)
	if budget > maxCaptureReserve {
		probe = min(maxSlowProbe, budget/2)
	}
	probeText := roundForText(probe).String()
	var main cdp.FrameID
	if c := chromedp.FromContext(r.tab.ctx); c != nil && c.Target != nil {
		main = cdp.FrameID(c.Target.TargetID) // a tab's main frame has its target's id
	}
	st := r.tab.events.state(main)
	if r.navFailed != "" {
		// The navigation failed at once (refused, a certificate error):
		// the tab shows Chromium's error page a moment later, and until
		// then has no page to capture. Wait for it as long as a probe.
		err := r.waitPage(ctx, probe)
		if err != nil {
			if r.tab.browserDead() {
				return "", ""
			}
			if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
				return "", fmt.Sprintf("the navigation failed (%s), and the tab showed no page within %s", r.navFailed, probeText)
			}
			return "", fmt.Sprintf("the navigation failed (%s), and the tab showed no page: %s", r.navFailed, firstLine(err.Error()))
		}
		st = pageState{} // the error page is there: capture it as any page
	}
	if st.awaiting {
		// A navigation waits for its server: no script runs until the
		// document arrives, but the tab still shows what it showed before
		// and can be captured (the step's url is the one asked for).
		if r.runner.o.DataDir == "" {
			return "", ""
		}
		if len(r.secretValues()) > 0 {
			return "", "the page was still waiting for its server, and the run's secrets could not be hidden in what the tab showed"
		}
		sctx, scancel := context.WithTimeout(ctx, probe)
		png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
		timedOut := sctx.Err() != nil
		scancel()
		if err != nil {
			if r.tab.browserDead() {
				return "", ""
			}
			if !timedOut {
				// Said as it is, not as a wait that did not happen.
				return "", "the page was still waiting for its server, and the tab could not be captured: " + firstLine(err.Error())
			}
			return "", fmt.Sprintf("the page was still waiting for its server, and the tab did not answer within %s", probeText)
		}
		return r.saveFailure(i, s, sr, png)
	}
	pctx, pcancel := context.WithTimeout(ctx, probe)
	_, err := chromedp.Run(pctx, chromedp.Evaluate[int]("1"))
	timedOut := pctx.Err() != nil
	pcancel()
	if err != nil && !timedOut && !r.tab.browserDead() {
		return "", "the page could not be asked whether it answers: " + firstLine(err.Error())
	}
	if err != nil {
		if r.tab.browserDead() {
			return "", ""
		}
		st = r.tab.events.state(main)
		switch {
		case st.dialog:
			return "", fmt.Sprintf("the page did not answer within %s: a JavaScript dialog is open", probeText)
		}
		return "", fmt.Sprintf("the page did not answer within %s%s", probeText, r.unanswered())
	}
	if sr.URL == "" {
		if loc, err := chromedp.Run(ctx, chromedp.Location()); err == nil {
			sr.URL = r.vars.redact(units.RedactURL(loc))
		}
	}
	if r.runner.o.DataDir == "" {
		return "", ""
	}
	png, err := r.screenshot(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Sprintf("the screenshot did not finish within %s", budget.Round(time.Millisecond))
		}
		return "", "screenshot: " + firstLine(err.Error())
	}
	return r.saveFailure(i, s, sr, png)
}

// waitPage asks the tab, every pollInterval for at most d, for a trivial
// value until it answers: after a failed navigation Chromium swaps in its
// error page, and the tab answers nothing until it is there. It returns
// the last error.
func (r *run) waitPage(ctx context.Context, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		_, err := chromedp.Run(wctx, chromedp.Evaluate[int]("1"))
		if err == nil || r.tab.browserDead() {
			return err
		}
		select {
		case <-wctx.Done():
			return err
		case <-time.After(pollInterval):
		}
	}
}

// saveFailure saves the failure screenshot of step i and its note.
func (r *run) saveFailure(i int, s *Step, sr *checks.StepResult, png []byte) (path, why string) {
	path, err := r.saveArtifact(png, "")
	if err != nil {
		return "", "saving the screenshot: " + err.Error()
	}
	if path == "" {
		return "", ""
	}
	console, failedReqs := r.tab.events.snapshot()
	for i := range console {
		console[i] = r.vars.redact(console[i])
	}
	for i := range failedReqs {
		failedReqs[i] = r.vars.redact(failedReqs[i])
	}
	_ = r.saveSidecar(path, failureInfo{
		Check: r.runner.o.Check, Target: r.target.Name, Step: i, StepName: s.Name,
		Kind: s.kind, Cause: string(sr.Cause), Error: sr.Err, URL: sr.URL, At: time.Now().UTC(),
		ConsoleErrors: console, FailedRequests: failedReqs,
	})
	return path, ""
}

func (r *run) redactAssertions(as []checks.AssertionResult) []checks.AssertionResult {
	if len(r.vars.secrets) == 0 || len(as) == 0 {
		return as
	}
	out := make([]checks.AssertionResult, len(as))
	for i, a := range as {
		a.Got, a.Want = r.vars.redact(a.Got), r.vars.redact(a.Want)
		out[i] = a
	}
	return out
}

// pullCookies copies the cookies of the run's browser context (all of
// them, HttpOnly ones too: what the pages and their responses set) into
// the run's jar before an http step, so that an http step after a login
// through the page sends the session, as Playwright's page.request does.
// A cookie the browser holds replaces the jar's of the same name, domain
// and path, and one copied before that the browser deleted since is
// deleted from the jar. ctx bounds the question; without a tab, or when the browser
// does not answer, the jar stays as it is.
func (r *run) pullCookies(ctx context.Context) {
	if r.tab == nil || r.jar == nil || r.tab.browserDead() {
		return
	}
	c := chromedp.FromContext(r.tab.ctx)
	if c == nil {
		return
	}
	qctx, cancel := context.WithTimeout(r.tab.ctx, cookiePullBudget)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	res, err := chromedp.CallBrowser(qctx, storage.GetCookies, storage.GetCookiesParams{BrowserContextID: c.BrowserContextID})
	if err != nil {
		return
	}
	seen := map[string]*url.URL{}
	for _, bc := range res.Cookies {
		if bc == nil || bc.Domain == "" {
			continue
		}
		host := strings.TrimPrefix(bc.Domain, ".")
		scheme := "http"
		if bc.Secure {
			scheme = "https"
		}
		hc := &http.Cookie{Name: bc.Name, Value: bc.Value, Path: bc.Path, Secure: bc.Secure, HttpOnly: bc.HTTPOnly}
		if strings.HasPrefix(bc.Domain, ".") {
			hc.Domain = host // a domain cookie; else host-only
		}
		if !bc.Session && bc.Expires > 0 {
			hc.Expires = time.Unix(int64(bc.Expires), 0)
		}
		u := &url.URL{Scheme: scheme, Host: host, Path: bc.Path}
		r.jar.SetCookies(u, []*http.Cookie{hc})
		seen[bc.Name+"\x00"+bc.Domain+"\x00"+bc.Path] = u
		// The browser has it: the next browser step need not copy it back.
		if r.pushed == nil {
			r.pushed = map[string]bool{}
		}
		r.pushed[bc.Name+"="+bc.Value] = true
	}
	// A cookie copied before that the browser no longer has (a logout
	// through the page deleted it) goes from the jar too.
	for k, u := range r.pulled {
		if _, ok := seen[k]; !ok {
			name, rest, _ := strings.Cut(k, "\x00")
			domain, path, _ := strings.Cut(rest, "\x00")
			gone := &http.Cookie{Name: name, Path: path, MaxAge: -1}
			if strings.HasPrefix(domain, ".") {
				gone.Domain = u.Host
			}
			r.jar.SetCookies(u, []*http.Cookie{gone})
		}
	}
	r.pulled = seen
}

// cookiePullBudget bounds pullCookies.
const cookiePullBudget = 2 * time.Second

// cookieSecretBudget bounds browserCookieSecrets, within the run's
// budget.
const cookieSecretBudget = 500 * time.Millisecond

// browserCookieSecrets makes the value of every cookie of the run's
// browser context (HttpOnly ones too) of minJarSecret bytes or more a
// secret of the run, as the jar does with the cookies it receives: in a
// flow of browser steps only, the session the login page set never goes
// through the jar. Without a tab, a live browser or time left in the
// run's budget, or when the browser does not answer within
// cookieSecretBudget, it does nothing.
func (r *run) browserCookieSecrets() {
	if r.tab == nil || r.tab.browserDead() {
		return
	}
	c := chromedp.FromContext(r.tab.ctx)
	if c == nil {
		return
	}
	budget := cookieSecretBudget
	if !r.end.IsZero() {
		// Most of what is left stays for the failure screenshot.
		budget = min(budget, time.Until(r.end)/4)
	}
	if budget <= 0 {
		return
	}
	qctx, cancel := context.WithTimeout(r.tab.ctx, budget)
	defer cancel()
	res, err := chromedp.CallBrowser(qctx, storage.GetCookies, storage.GetCookiesParams{BrowserContextID: c.BrowserContextID})
	if err != nil {
		return
	}
	for _, bc := range res.Cookies {
		if bc != nil {
			r.vars.addCookieSecret(bc.Value)
		}
	}
}

// syncCookies copies the run's HTTP cookies for the target URL into the
// browser tab (once per name and value), so that a browser flow continues a
// session an http step started (e.g. a login through the API).
func (r *run) syncCookies(ctx context.Context) {
	u, err := url.Parse(r.target.URL)
	if err != nil || r.jar == nil {
		return
	}
	var params []*network.CookieParam
	for _, c := range r.jar.Cookies(u) {
		key := c.Name + "=" + c.Value
		if r.pushed[key] {
			continue
		}
		if r.pushed == nil {
			r.pushed = map[string]bool{}
		}
		r.pushed[key] = true
		params = append(params, &network.CookieParam{Name: c.Name, Value: c.Value, URL: r.target.URL})
	}
	if len(params) > 0 {
		_, _ = chromedp.Call(ctx, network.SetCookies, network.SetCookiesParams{Cookies: params})
	}
}
