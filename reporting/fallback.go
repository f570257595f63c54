package reporting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	influxhttp "github.com/influxdata/influxdb-client-go/v2/api/http"
)

// DefaultFallbackRetry is how often a Fallback tries its Primary again while
// Primary's reads fail, when Fallback.Retry is 0.
const DefaultFallbackRetry = 5 * time.Second

// DegradedHeader is the response header Fallback.Mark sets while reads are
// served from Fallback.Own; its value is Fallback.Notice.
const DegradedHeader = "Vigil-Degraded"

// ownReadTimeout bounds a read of Own when the caller's deadline was spent
// waiting for Primary (Own is local: the embedded store or memory).
const ownReadTimeout = 5 * time.Second

// probeTimeout bounds a probe read of Primary (see Fallback); Primary's own
// timeout, if shorter, applies too.
const probeTimeout = 5 * time.Second

// readReserve is what a read keeps back from Primary, of its caller's
// remaining time, for each of the two steps that may follow a read of
// Primary that does not answer: the probe that tells a hung Primary from a
// heavy query, and the read of Own. Of a deadline under 5×readReserve away
// it keeps a fifth for each. So Primary gets at most the caller's time less
// 2 s, and a caller whose deadline equals Primary's own timeout (10 s for
// both by default) is still answered, from Own, when Primary hangs.
const readReserve = time.Second

// probeWindow is the maxAge of a probe read: the latest verdicts of the last
// second, a query as cheap as Primary has.
const probeWindow = time.Second

// Fallback is a HistorySource that reads Primary (InfluxDB, which holds
// every region) and, while Primary's reads fail, serves them from Own (this
// agent's own results) instead of failing: a status page and API that stay
// up, with fewer regions, through an outage of the shared store.
//
// A read of Primary that fails because Primary is failing puts the Fallback
// in the degraded state (Notice is non-empty) and is answered from Own.
// While degraded, Primary is tried again by one read at a time, at most
// every Retry (counted from the end of the last try); the reads in between,
// and those that come while a try is under way, go straight to Own, so a
// Primary that hangs until its timeout slows one read per Retry, not every
// one. The first read of Primary that succeeds ends the degraded state.
//
// While degraded, the Fallback also probes Primary itself, every Retry (at
// least recoveryWatchMin, of real time) when no read is trying it, until
// it answers (the recovery watch): the degraded state, and the start of
// the outage with it, ends when the store works again, not at the next page
// load, so a later outage is dated from its own start and the recovery
// line's failed_for is the outage's length. For a Primary that is a
// FailingSincer, a failure run of Primary's that began after the
// degraded state's start, or none at all, also says the store worked
// since: the degraded state is dated from the current run, or the next
// failed read starts a new one. The watch stops when Primary answers;
// it costs one probe read (the latest verdicts of the last second) per
// Retry during an outage.
//
// A read gives Primary a share of its caller's time, not all of it: the
// caller's deadline less up to 2×readReserve (2 s), so that when Primary
// does not answer in its share there is still time for a probe and for Own.
// Primary's own timeout, if shorter, applies too. A read of Primary cut
// short by that share is a timeout like Primary's own.
//
// A read that failed for reasons of its own leaves the state as it is and
// returns its error (it is not answered from Own, which would show fewer
// regions with no banner), so one caller cannot turn the page degraded for
// everyone:
//
//   - the caller's context ended (cancelled, or its deadline passed
//     although Primary had only its share of it): the caller, not Primary,
//     decided;
//   - Primary answered and refused the query: an HTTP 4xx from InfluxDB
//     (influxdb-client-go's *http.Error) other than 401, 403, 404, 408 and
//     429, which say that every read would fail (bad token, missing bucket
//     or org, overload);
//   - the read timed out (Primary's own timeout, or the end of its share of
//     the caller's time) while a probe, a read of the last second's
//     verdicts, then succeeded: the query was too heavy, Primary answers. A
//     timeout is the one error that cannot tell a heavy query from a hung
//     store, so the probe decides; a probe that has not answered when the
//     read's reserve for it is spent counts as failed (it goes on in the
//     background, and its answer, when it comes, ends the degraded state).
//
// When the caller's deadline passed, a probe runs in the background as well
// (one at a time) and its outcome alone counts. Every other error — refused
// or reset connections, DNS, TLS, a dial timeout, a 5xx, the statuses
// above, an answer that does not parse — counts.
//
// A Primary that is an Explainer names the setting at fault in its errors
// (a rejected token, a missing bucket); the errors the Fallback returns and
// logs carry that.
//
// Fallback only reads; writes to Primary are the Sink's business (the
// InfluxDB outbox keeps them through the outage). The zero value is not
// usable: Primary and Own are required. Safe for concurrent use.
type Fallback struct {
	// Primary is read first. Required.
	Primary HistorySource
	// Own serves reads while Primary fails. Required. When it is not a
	// HistorySource (a canary's in-memory latest verdicts), History and
	// Rollups fail while degraded.
	Own Source
	// Name names Primary in Notice and logs. Default "the primary store".
	Name string
	// Retry is the least time between two tries of a failing Primary.
	// Default DefaultFallbackRetry.
	Retry time.Duration
	// Log receives one line when the degraded state begins and one when it
	// ends. Default slog.Default().
	Log *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time

	mu      sync.Mutex
	since   time.Time  // when Primary's reads began failing; zero: they work
	why     string     // what is wrong with Primary, for Notice (see outage)
	lastTry time.Time  // the end of the last read of Primary while failing
	trying  bool       // a read is trying Primary while failing
	probing *probeCall // the probe in flight, if any
	// over: while failing, Primary (a FailingSincer) reported failures
	// (sawFailing) and then none at all: the outage that began at since
	// is over, and the next failed read starts a new one.
	over, sawFailing bool
	watching         bool // the recovery watch runs (see watch)
}

// Explainer is a HistorySource that can say which of its settings an error
// of one of its reads points at: a Primary that implements it has its
// errors explained before the Fallback returns or logs them.
type Explainer interface {
	HistorySource
	// ExplainError returns err, or an error that wraps it and names the
	// setting to fix (e.g. "store.influxdb.token: rejected by InfluxDB
	// (401 Unauthorized)").
	ExplainError(err error) error
}

// FailingSincer is a Primary that knows when its current outage began: the
// first of its failed operations (reads, and writes such as an outbox's
// delivery) in the failures going on; zero when none fails. Notice dates
// the degraded state from it when that is earlier than the first read of
// Primary that failed through the Fallback, so that the banner agrees with
// /healthz.
type FailingSincer interface {
	FailingSince() time.Time
}

// probeCall is one probe read of Primary that concurrent reads share.
type probeCall struct {
	done chan struct{}
	err  error // nil: Primary answered; set before done is closed
}

var _ HistorySource = (*Fallback)(nil)

// Verdicts reads Primary's latest verdicts, or Own's while Primary fails.
func (f *Fallback) Verdicts(ctx context.Context, maxAge time.Duration) ([]Verdict, error) {
	return fallbackRead(f, ctx,
		func(ctx context.Context) ([]Verdict, error) { return f.Primary.Verdicts(ctx, maxAge) },
		func(ctx context.Context) ([]Verdict, error) { return f.Own.Verdicts(ctx, maxAge) })
}

// History reads Primary's history, or Own's while Primary fails.
func (f *Fallback) History(ctx context.Context, q HistoryQuery) ([]Verdict, error) {
	return fallbackRead(f, ctx,
		func(ctx context.Context) ([]Verdict, error) { return f.Primary.History(ctx, q) },
		func(ctx context.Context) ([]Verdict, error) {
			h, ok := f.Own.(HistorySource)
			if !ok {
				return nil, errNoOwnHistory
			}
			return h.History(ctx, q)
		})
}

// Rollups reads Primary's rollups, or Own's while Primary fails.
func (f *Fallback) Rollups(ctx context.Context, q HistoryQuery) ([]Rollup, error) {
	return fallbackRead(f, ctx,
		func(ctx context.Context) ([]Rollup, error) { return f.Primary.Rollups(ctx, q) },
		func(ctx context.Context) ([]Rollup, error) {
			h, ok := f.Own.(HistorySource)
			if !ok {
				return nil, errNoOwnHistory
			}
			return h.Rollups(ctx, q)
		})
}

// RollupCounts reads Primary's rollup sums, or Own's while Primary fails.
func (f *Fallback) RollupCounts(ctx context.Context, q HistoryQuery, step time.Duration) ([]RollupCount, error) {
	return fallbackRead(f, ctx,
		func(ctx context.Context) ([]RollupCount, error) { return CountRollups(ctx, f.Primary, q, step) },
		func(ctx context.Context) ([]RollupCount, error) {
			h, ok := f.Own.(HistorySource)
			if !ok {
				return nil, errNoOwnHistory
			}
			return CountRollups(ctx, h, q, step)
		})
}

// CountsRollups is Primary's.
func (f *Fallback) CountsRollups() bool { return CountsRollups(f.Primary) }

var errNoOwnHistory = errors.New("this agent keeps no history of its own")

// Notice says why reads come from Own, e.g. "InfluxDB unreachable since
// 2026-11-30T10:20:00Z: showing this canary's own results only"; "" while
// Primary answers (and on a nil Fallback). Since is when the first read
// of the current outage failed (see the recovery watch in Fallback), or, for a Primary that is a FailingSincer, the first failed
// operation of Primary's if earlier (an InfluxDB store's writes usually
// fail first). What is wrong is the last
// failure's: "unreachable" (connections refused or reset, DNS, dial
// timeouts), "not answering" (reads and probes time out), "unavailable
// (Flux off: set flux-enabled = true …)" (see FluxFix),
// "unavailable (credentials rejected: 401 Unauthorized)", "unavailable (bucket not
// found)", "unavailable (organization not found)", "unavailable (HTTP 503
// Service Unavailable)" or "unavailable".
// It names no error: those can carry URLs and are for /healthz and the log.
func (f *Fallback) Notice() string {
	if f == nil {
		return ""
	}
	f.mu.Lock()
	f.forgetEndedLocked()
	since, why := f.since, f.why
	f.mu.Unlock()
	if since.IsZero() {
		return ""
	}
	if p, ok := f.Primary.(FailingSincer); ok {
		if t := p.FailingSince(); !t.IsZero() && t.Before(since) {
			since = t
		}
	}
	return fmt.Sprintf("%s %s since %s: showing this canary's own results only",
		f.name(), why, since.UTC().Format(time.RFC3339))
}

// Mark wraps h so that its responses carry DegradedHeader (the Notice)
// while reads come from Own. A nil Fallback returns h unchanged.
func (f *Fallback) Mark(h http.Handler) http.Handler {
	if f == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&markWriter{ResponseWriter: w, f: f}, r)
	})
}

// markWriter sets DegradedHeader just before the header is written, after
// the handler's reads decided whether Primary answered.
type markWriter struct {
	http.ResponseWriter
	f    *Fallback
	done bool
}

func (m *markWriter) mark() {
	if m.done {
		return
	}
	m.done = true
	if n := m.f.Notice(); n != "" {
		m.Header().Set(DegradedHeader, n)
	}
}

func (m *markWriter) WriteHeader(code int) {
	m.mark()
	m.ResponseWriter.WriteHeader(code)
}

func (m *markWriter) Write(b []byte) (int, error) {
	m.mark()
	return m.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (m *markWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }

// fallbackRead runs one read: Primary unless it is failing and was tried
// less than Retry ago or is being tried, then Own if Primary was skipped or
// failed because it is failing (see Fallback for the errors that do not
// count).
func fallbackRead[T any](f *Fallback, ctx context.Context, primary, own func(context.Context) (T, error)) (T, error) {
	var perr error
	try, claimed := f.tryPrimary()
	if claimed {
		defer f.endTry()
	}
	if try {
		pctx, reserve, cancel := readBudget(ctx)
		v, err := primary(pctx)
		cancel()
		if err == nil {
			f.record(nil, nil)
			return v, nil
		}
		err = f.explain(err)
		switch f.cause(ctx, err) {
		case causeCaller:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// Too slow for this caller: heavy query, or a hung store.
				f.probe(err)
			}
			return v, err
		case causeQuery:
			return v, err
		case causeTimeout:
			if !f.probeAndRecord(err, reserve) {
				return v, err
			}
		default:
			f.record(err, err)
		}
		perr = err
	}
	octx := ctx
	if ctx.Err() != nil {
		// Primary (and the probe) spent the caller's deadline; Own is
		// local and quick.
		var cancel context.CancelFunc
		octx, cancel = context.WithTimeout(context.WithoutCancel(ctx), ownReadTimeout)
		defer cancel()
	}
	v, err := own(octx)
	if err != nil {
		if perr == nil {
			return v, fmt.Errorf("%s %s, and reading this canary's own results failed: %w", f.name(), f.wrong(), err)
		}
		return v, fmt.Errorf("%s: %w; and reading this canary's own results failed: %w", f.name(), perr, err)
	}
	return v, nil
}

// readBudget returns the context a read of Primary runs with, its caller's
// ctx shortened by twice the reserve, and the reserve: what is kept back
// for a probe and for Own (see readReserve). Without a caller deadline the
// context is ctx (Primary's own timeout bounds the read) and the reserve is
// probeTimeout.
func readBudget(ctx context.Context) (context.Context, time.Duration, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return ctx, probeTimeout, func() {}
	}
	reserve := min(readReserve, time.Until(dl)/5)
	if reserve <= 0 {
		return ctx, 0, func() {} // already past: the read fails as the caller's
	}
	pctx, cancel := context.WithDeadline(ctx, dl.Add(-2*reserve))
	return pctx, reserve, cancel
}

// cause says why a read of Primary failed with err; ctx is its caller's.
type cause int

const (
	causeStore   cause = iota // Primary is failing: counts
	causeCaller               // ctx ended: does not count
	causeQuery                // Primary refused this query: does not count
	causeTimeout              // a timeout: a probe decides
)

func (f *Fallback) cause(ctx context.Context, err error) cause {
	if ctx.Err() != nil {
		return causeCaller
	}
	if he, ok := errors.AsType[*influxhttp.Error](err); ok && he.StatusCode >= 400 && he.StatusCode < 500 {
		switch he.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
			http.StatusRequestTimeout, http.StatusTooManyRequests:
			return causeStore
		}
		return causeQuery
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return causeStore // a dial timeout is a store that cannot be reached
	}
	if ne, ok := errors.AsType[net.Error](err); (ok && ne.Timeout()) || errors.Is(err, context.DeadlineExceeded) {
		return causeTimeout
	}
	return causeStore
}

// probeAndRecord probes Primary after a read timed out with err, waiting at
// most wait for the probe, and reports whether Primary is failing: the
// probe failed, or did not answer within wait (it goes on, and records its
// outcome when it ends). Either way the outcome is recorded.
func (f *Fallback) probeAndRecord(err error, wait time.Duration) (failing bool) {
	c := f.probe(err)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.done:
		return c.err != nil
	case <-t.C:
		perr := fmt.Errorf("%w (no answer within %s)", context.DeadlineExceeded, wait)
		f.record(fmt.Errorf("%w; a probe read did not answer either: %w", err, perr), perr)
		return true
	}
}

// probe starts a probe read of Primary's latest verdicts of the last
// probeWindow, within probeTimeout, or joins the one in flight, after a read
// failed with err. The probe records its outcome when it ends: Primary
// answered (a refused query is an answer), or failing.
func (f *Fallback) probe(err error) *probeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.probing; c != nil {
		return c
	}
	c := &probeCall{done: make(chan struct{})}
	f.probing = c
	go func() {
		defer func() {
			if r := recover(); r != nil {
				f.log().Error("store probe panicked", "store", f.name(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				c.err = fmt.Errorf("probe panicked: %v", r)
			}
			f.mu.Lock()
			f.probing = nil
			f.mu.Unlock()
			close(c.done)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		_, perr := f.Primary.Verdicts(ctx, probeWindow)
		if perr != nil && f.cause(context.Background(), perr) != causeQuery {
			c.err = f.explain(perr)
			f.record(fmt.Errorf("%w; a probe read failed too: %w", err, c.err), c.err)
			return
		}
		f.record(nil, nil)
	}()
	return c
}

// tryPrimary reports whether this read goes to Primary: always while it
// answers; while it fails, when Retry passed since the last try ended and
// no other read is trying it. Such a read is claimed (the try while
// failing): the caller must call endTry when it is done with Primary.
func (f *Fallback) tryPrimary() (try, claimed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since.IsZero() {
		return true, false
	}
	if f.trying {
		return false, false
	}
	now := f.now()
	// Primary reported no failure (over): try it now rather than Retry
	// later.
	if f.forgetEndedLocked(); !f.over && now.Sub(f.lastTry) < f.retry() && !now.Before(f.lastTry) {
		return false, false
	}
	f.trying, f.lastTry = true, now
	return true, true
}

// endTry ends a try claimed by tryPrimary; the next one is due Retry later.
func (f *Fallback) endTry() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trying = false
	if !f.since.IsZero() {
		f.lastTry = f.now()
	}
}

// record notes a read of Primary: err nil when it answered; why the error
// that says what is wrong with it (for Notice). Only the transitions are
// logged.
func (f *Fallback) record(err, why error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	f.forgetEndedLocked()
	if err != nil && f.over {
		// The store worked since the outage at f.since: this failure
		// starts a new one.
		f.log().Info("store answered again since its last failed read; a new outage began", "store", f.name(),
			"previous_since", f.since.UTC().Format(time.RFC3339))
		f.since, f.over, f.sawFailing = time.Time{}, false, false
	}
	switch {
	case err == nil && !f.since.IsZero():
		f.log().Info("store answers reads again; serving from it", "store", f.name(),
			"failed_for", now.Sub(f.since).Round(time.Second).String())
		f.since, f.why, f.over, f.sawFailing = time.Time{}, "", false, false
	case err != nil && f.since.IsZero():
		f.since, f.lastTry, f.why = now, now, outage(why)
		f.log().Warn("store reads failing; serving this canary's own results until it answers", "store", f.name(), "err", err)
		if !f.watching {
			f.watching = true
			go f.watch(max(f.retry(), recoveryWatchMin))
		}
	case err != nil:
		f.lastTry, f.why = now, outage(why)
	}
}

// recoveryWatchMin is the least time between two probes of the recovery
// watch (see Fallback).
const recoveryWatchMin = time.Second

// errRecoveryWatch is what the recovery watch's probe reads follow (the
// log's "a probe read failed too").
var errRecoveryWatch = errors.New("recovery watch")

// watch is the recovery watch (see Fallback): every wait of real time,
// while the Fallback is degraded and no read or probe is trying Primary, a
// probe read of Primary, whose answer ends the degraded state. It returns
// once that state ended.
func (f *Fallback) watch(wait time.Duration) {
	defer func() {
		if r := recover(); r != nil {
			f.log().Error("store recovery watch panicked", "store", f.name(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			f.mu.Lock()
			f.watching = false
			f.mu.Unlock()
		}
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		<-t.C
		f.mu.Lock()
		if f.since.IsZero() {
			f.watching = false
			f.mu.Unlock()
			return
		}
		busy := f.trying || f.probing != nil
		f.mu.Unlock()
		if !busy {
			<-f.probe(errRecoveryWatch).done
		}
		t.Reset(wait)
	}
}

// forgetEndedLocked (f.mu held) notices, for a Primary that is a
// FailingSincer, that the outage the degraded state dates from is over:
// Primary's current failures began after since (the store worked in
// between: since moves to their start), or there are none after there were
// (over: the next failed read starts a new outage).
func (f *Fallback) forgetEndedLocked() {
	if f.since.IsZero() || f.over {
		return
	}
	p, ok := f.Primary.(FailingSincer)
	if !ok {
		return
	}
	switch t := p.FailingSince(); {
	case t.IsZero():
		// Before Primary has counted a failure of this outage, zero says
		// nothing (a read still waiting on it, say).
		f.over = f.sawFailing
	case t.After(f.since):
		f.sawFailing = true
		f.log().Info("store answered again since its last failed read; a new outage began", "store", f.name(),
			"previous_since", f.since.UTC().Format(time.RFC3339), "since", t.UTC().Format(time.RFC3339))
		f.since = t
	default:
		f.sawFailing = true
	}
}

// retry is Retry or its default.
func (f *Fallback) retry() time.Duration {
	if f.Retry <= 0 {
		return DefaultFallbackRetry
	}
	return f.Retry
}

// wrong is the degraded state's what-is-wrong, as in Notice; "unreachable"
// while Primary answers.
func (f *Fallback) wrong() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.why == "" {
		return "unreachable"
	}
	return f.why
}

// outage says in a few words what err, a failure of Primary, means to a
// reader of the status page (see Notice).
func outage(err error) string {
	if he, ok := errors.AsType[*influxhttp.Error](err); ok && he.StatusCode != 0 {
		status := fmt.Sprintf("%d %s", he.StatusCode, http.StatusText(he.StatusCode))
		switch {
		case FluxDisabled(err):
			return "unavailable (Flux off: " + FluxFix + ")"
		case he.StatusCode == http.StatusUnauthorized || he.StatusCode == http.StatusForbidden:
			return "unavailable (credentials rejected: " + status + ")"
		case OrgMissing(err):
			return "unavailable (organization not found)"
		case BucketMissing(err):
			return "unavailable (bucket not found)"
		}
		return "unavailable (HTTP " + status + ")"
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return "unreachable"
	}
	if ne, ok := errors.AsType[net.Error](err); (ok && ne.Timeout()) || errors.Is(err, context.DeadlineExceeded) {
		return "not answering"
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return "unreachable"
	}
	return "unavailable"
}

// BucketMissing reports whether err is InfluxDB saying that the bucket (the
// database or retention policy on 1.8) does not exist: a 404 on 2.x and on
// 1.8's writes (other than OrgMissing's), a 500 "no database" on 1.8's Flux
// reads ("no database", or "invalid retention policy" when the database
// exists but not the retention policy).
func BucketMissing(err error) bool {
	m, status := influxMessage(err)
	switch {
	case status == 0:
		return false
	case status == http.StatusNotFound:
		return !OrgMissing(err)
	}
	return strings.Contains(m, "no database") || strings.Contains(m, "database not found") ||
		strings.Contains(m, "bucket not found") || strings.Contains(m, "retention policy not found") ||
		strings.Contains(m, "invalid retention policy")
}

// FluxFix says what to change when InfluxDB 1.8 runs with Flux off (its
// default): vigil reads with Flux.
const FluxFix = "set flux-enabled = true in the [http] section of influxdb.conf, or INFLUXDB_HTTP_FLUX_ENABLED=true, and restart InfluxDB"

// FluxDisabled reports whether err is InfluxDB 1.8 refusing a Flux query
// because its Flux service is off ("403 Forbidden: Flux query service
// disabled"); writes still work. It is not a rejected token.
func FluxDisabled(err error) bool {
	m, status := influxMessage(err)
	return status == http.StatusForbidden && strings.Contains(m, "flux query service disabled")
}

// OrgMissing reports whether err is InfluxDB 2.x answering 404 because the
// organization does not exist.
func OrgMissing(err error) bool {
	m, status := influxMessage(err)
	return status == http.StatusNotFound && strings.Contains(m, "organization")
}

// influxMessage is InfluxDB's error text in err, lower-cased, and its HTTP
// status; 0 when err carries no answer of InfluxDB's.
func influxMessage(err error) (string, int) {
	he, ok := errors.AsType[*influxhttp.Error](err)
	if !ok || he.StatusCode == 0 {
		return "", 0
	}
	m := he.Code + " " + he.Message
	if he.Err != nil {
		m += " " + he.Err.Error()
	}
	return strings.ToLower(m), he.StatusCode
}

// explain has Primary name the setting at fault in err, if it can.
func (f *Fallback) explain(err error) error {
	if e, ok := f.Primary.(Explainer); ok {
		return e.ExplainError(err)
	}
	return err
}

func (f *Fallback) name() string {
	if f.Name == "" {
		return "the primary store"
	}
	return f.Name
}

func (f *Fallback) now() time.Time {
	if f.Now == nil {
		return time.Now()
	}
	return f.Now()
}

func (f *Fallback) log() *slog.Logger {
	if f.Log == nil {
		return slog.Default()
	}
	return f.Log
}
