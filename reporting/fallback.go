package reporting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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

// probeWindow is the maxAge of a probe read: the latest verdicts of the last
// second, a query as cheap as Primary has.
const probeWindow = time.Second

// Fallback is a HistorySource that reads Primary (InfluxDB, which holds
// every region) and, while Primary's reads fail, serves them from Own (this
// agent's own results) instead of failing: a status page and API that stay
// up, with fewer regions, through an outage of the shared store.
//
// A read of Primary that fails because Primary is failing puts the Fallback
// in the degraded state (Notice is non-empty). While degraded, Primary is
// tried again by one read at most every Retry; the reads in between go
// straight to Own, so a Primary that hangs until its timeout slows one read
// per Retry, not every one. The first read of Primary that succeeds ends the
// degraded state.
//
// A read that failed for reasons of its own leaves the state as it is and
// returns its error (it is not answered from Own, which would show fewer
// regions with no banner), so one caller cannot turn the page degraded for
// everyone:
//
//   - the caller's context ended (cancelled, or its deadline passed): the
//     caller's time budget, not Primary, decided;
//   - Primary answered and refused the query: an HTTP 4xx from InfluxDB
//     (influxdb-client-go's *http.Error) other than 401, 403, 404, 408 and
//     429, which say that every read would fail (bad token, missing bucket
//     or org, overload);
//   - the read timed out (Primary's own timeout) while a probe, a read of
//     the last second's verdicts, then succeeded: the query was too heavy,
//     Primary answers. A timeout is the one error that cannot tell a heavy
//     query from a hung store, so the probe decides.
//
// When the caller's deadline passed, a probe runs in the background as well
// (one at a time) and its outcome alone counts: a store that accepts
// connections and never answers still turns the page degraded even where
// the caller's deadline comes before Primary's own timeout. Every other
// error — refused or reset connections, DNS, TLS, a dial timeout, a 5xx,
// the statuses above, an answer that does not parse — counts.
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
	lastTry time.Time  // the last read of Primary while failing
	probing *probeCall // the probe in flight, if any
}

// probeCall is one probe read of Primary that concurrent reads share.
type probeCall struct {
	done chan struct{}
	err  error // nil: Primary answered
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

var errNoOwnHistory = errors.New("this agent keeps no history of its own")

// Notice says why reads come from Own, e.g. "InfluxDB unreachable since
// 2026-11-30T10:20:00Z: showing this canary's own results only"; "" while
// Primary answers (and on a nil Fallback). It names no error: those can
// carry URLs and are for /healthz and the log.
func (f *Fallback) Notice() string {
	if f == nil {
		return ""
	}
	f.mu.Lock()
	since := f.since
	f.mu.Unlock()
	if since.IsZero() {
		return ""
	}
	return fmt.Sprintf("%s unreachable since %s: showing this canary's own results only",
		f.name(), since.UTC().Format(time.RFC3339))
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
// less than Retry ago, then Own if Primary was skipped or failed because it
// is failing (see Fallback for the errors that do not count).
func fallbackRead[T any](f *Fallback, ctx context.Context, primary, own func(context.Context) (T, error)) (T, error) {
	var perr error
	if f.tryPrimary() {
		v, err := primary(ctx)
		if err == nil {
			f.record(nil)
			return v, nil
		}
		switch f.cause(ctx, err) {
		case causeCaller:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// Too slow for this caller: heavy query, or a hung store.
				go f.probeAndRecord(err)
			}
			return v, err
		case causeQuery:
			return v, err
		case causeTimeout:
			if !f.probeAndRecord(err) {
				return v, err
			}
		default:
			f.record(err)
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
			return v, fmt.Errorf("%s unreachable, and reading this canary's own results failed: %w", f.name(), err)
		}
		return v, fmt.Errorf("%s: %w; and reading this canary's own results failed: %w", f.name(), perr, err)
	}
	return v, nil
}

// cause says why a read of Primary with context ctx failed with err.
type cause int

const (
	causeStore   cause = iota // Primary is failing: counts
	causeCaller               // ctx ended: does not count
	causeQuery                // Primary refused this query: does not count
	causeTimeout              // Primary's own timeout: a probe decides
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

// probeAndRecord probes Primary after a read failed with err and records the
// outcome: degraded (reporting true) when the probe fails too, Primary
// answering when it succeeds.
func (f *Fallback) probeAndRecord(err error) (failing bool) {
	perr := f.probe()
	if perr == nil {
		f.record(nil)
		return false
	}
	f.record(fmt.Errorf("%w; a probe read failed too: %w", err, perr))
	return true
}

// probe reads Primary's latest verdicts of the last probeWindow, within
// probeTimeout, and returns nil if Primary answered (a refused query is an
// answer). Concurrent callers share one probe.
func (f *Fallback) probe() error {
	f.mu.Lock()
	if c := f.probing; c != nil {
		f.mu.Unlock()
		<-c.done
		return c.err
	}
	c := &probeCall{done: make(chan struct{})}
	f.probing = c
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.probing = nil
		f.mu.Unlock()
		close(c.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	_, err := f.Primary.Verdicts(ctx, probeWindow)
	if err != nil && f.cause(context.Background(), err) != causeQuery {
		c.err = err
	}
	return c.err
}

// tryPrimary reports whether this read goes to Primary: always while it
// answers, else when Retry passed since the last try (which it claims, so
// concurrent reads send one try, not many).
func (f *Fallback) tryPrimary() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since.IsZero() {
		return true
	}
	now := f.now()
	retry := f.Retry
	if retry <= 0 {
		retry = DefaultFallbackRetry
	}
	if now.Sub(f.lastTry) < retry && !now.Before(f.lastTry) {
		return false
	}
	f.lastTry = now
	return true
}

// record notes a read of Primary; only the transitions are logged.
func (f *Fallback) record(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	switch {
	case err == nil && !f.since.IsZero():
		f.log().Info("store answers reads again; serving from it", "store", f.name(),
			"failed_for", now.Sub(f.since).Round(time.Second).String())
		f.since = time.Time{}
	case err != nil && f.since.IsZero():
		f.since, f.lastTry = now, now
		f.log().Warn("store reads failing; serving this canary's own results until it answers", "store", f.name(), "err", err)
	case err != nil:
		f.lastTry = now
	}
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
