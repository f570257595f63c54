package reporting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
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

// Fallback is a HistorySource that reads Primary (InfluxDB, which holds
// every region) and, while Primary's reads fail, serves them from Own (this
// agent's own results) instead of failing: a status page and API that stay
// up, with fewer regions, through an outage of the shared store.
//
// A failed read of Primary puts the Fallback in the degraded state (Notice
// is non-empty). While degraded, Primary is tried again by one read at most
// every Retry; the reads in between go straight to Own, so a Primary that
// hangs until its timeout slows one read per Retry, not every one. The first
// read of Primary that succeeds ends the degraded state.
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
	since   time.Time // when Primary's reads began failing; zero: they work
	lastTry time.Time // the last read of Primary while failing
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
// less than Retry ago, then Own if Primary was skipped or failed.
func fallbackRead[T any](f *Fallback, ctx context.Context, primary, own func(context.Context) (T, error)) (T, error) {
	var perr error
	if f.tryPrimary() {
		v, err := primary(ctx)
		if err == nil {
			f.record(nil)
			return v, nil
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			// The caller went away: that says nothing about Primary.
			return v, err
		}
		f.record(err)
		perr = err
	}
	octx := ctx
	if ctx.Err() != nil {
		// Primary spent the caller's deadline; Own is local and quick.
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
