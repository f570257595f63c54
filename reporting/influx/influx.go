// Package influx stores vigil's verdicts and signals in InfluxDB (2.x, or
// 1.8+ with `[http] flux-enabled = true`) and reads them back with Flux.
//
// Writes never go straight to the network: Publish appends line protocol to
// a durable outbox under <data_dir>/outbox/ (fsynced segment files bounded by
// spool_max) and returns; one sender goroutine delivers the outbox in order
// with the client library's blocking write API. 5xx, 429 and network errors
// are retried with exponential backoff (honouring Retry-After) until InfluxDB
// answers; a batch rejected with another 4xx is split in halves until the
// malformed lines are isolated, which are logged with InfluxDB's reason,
// counted and dropped. 401/403/404 (credentials, missing database) are
// retried like outages, loudly, since no point is at fault. The library's
// async WriteAPI is not used: it swallows partial-write errors and drops its
// retry queue on Close (influxdb-client-go#384).
package influx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/influxdata/influxdb-client-go/v2/api"
	http2 "github.com/influxdata/influxdb-client-go/v2/api/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
)

// OutboxDir is the outbox's folder under the data dir.
const OutboxDir = "outbox"

// ErrClosed is returned by Publish and the readers after Close.
var ErrClosed = errClosed

// Options tune Open beyond the config file.
type Options struct {
	// Log receives delivery errors and rejected points. Default slog.Default().
	Log *slog.Logger
	// MinBackoff and MaxBackoff bound the retry delay after a failed write;
	// the delay doubles from MinBackoff (default 500ms), with ±20 % jitter
	// and at least a Retry-After, and is never more than MaxBackoff
	// (default 30s), jitter and Retry-After included.
	MinBackoff, MaxBackoff time.Duration

	// Duplicates receives the canary instances found writing the same
	// series (Verdicts, and this canary's own series: see Writers).
	// Default reporting.Duplicates (the process's).
	Duplicates *reporting.DuplicateWatch

	// jitter returns a number in [0, 1) that places a retry delay within
	// its ±20 %. Default rand.Float64; tests pin it.
	jitter func() float64
}

// Store writes to and reads from one InfluxDB bucket. It implements
// reporting.Sink, HistorySource, SignalSink and SignalSource.
type Store struct {
	cfg    Config
	log    *slog.Logger
	opts   Options
	client influxdb2.Client
	write  api.WriteAPIBlocking
	red    *checks.Redactor // hides cfg's credentials in errors (scrub)
	out    *outbox

	closed  atomic.Bool
	once    sync.Once
	wake    chan struct{} // data appended or a flush requested
	stop    chan struct{}
	done    chan struct{}
	flushes atomic.Int32 // Flush callers waiting: send partial batches at once

	changedMu sync.Mutex
	changed   chan struct{} // closed and replaced whenever pending changes

	written, rejected, spoolDropped, retries atomic.Uint64

	writes, reads reporting.Failing // for Health

	dups *reporting.DuplicateWatch
	own  ownSeries // this process's series, for the duplicate-canary check
	dupc dupCache  // what Verdicts marks

	failMu   sync.Mutex
	failFrom time.Time // start of the failed writes a previous run recorded (failingFile); zero: none
	failFile bool      // failingFile is on disk

	mWritten  prometheus.Counter
	mDropped  *prometheus.CounterVec
	mRetries  prometheus.Counter
	mPending  prometheus.GaugeFunc
	mSpoolLen prometheus.GaugeFunc
}

var (
	_ reporting.Sink          = (*Store)(nil)
	_ reporting.HistorySource = (*Store)(nil)
	_ reporting.Explainer     = (*Store)(nil)
	_ reporting.SignalSink    = (*Store)(nil)
	_ reporting.SignalSource  = (*Store)(nil)
	_ reporting.FailingSincer = (*Store)(nil)
)

// Open opens the outbox under <dataDir>/outbox/ (delivering what a previous
// run left in it) and starts the sender. cfg must have passed
// ValidateAndSetDefaults. Open does not contact InfluxDB.
func Open(cfg Config, dataDir string, o Options) (*Store, error) {
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		return nil, fmt.Errorf("influx: %w", err)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.jitter == nil {
		o.jitter = rand.Float64
	}
	if o.Duplicates == nil {
		o.Duplicates = reporting.Duplicates
	}
	out, err := openOutbox(filepath.Join(dataDir, OutboxDir), int64(cfg.SpoolMax))
	if err != nil {
		return nil, fmt.Errorf("influx: outbox: %w", err)
	}
	opts := influxdb2.DefaultOptions().
		SetHTTPRequestTimeout(uint(max(cfg.Timeout/time.Second, 1))).
		SetPrecision(time.Nanosecond).
		SetLogLevel(0)
	if tc := cfg.TLS.TLSConfig(); tc != nil {
		opts.SetTLSConfig(tc)
	}
	client := influxdb2.NewClientWithOptions(cfg.URL, cfg.Token, opts)
	s := &Store{
		cfg: cfg, log: o.Log, opts: o, client: client, out: out, red: newRedactor(cfg), dups: o.Duplicates,
		write:   client.WriteAPIBlocking(cfg.Org, cfg.Bucket),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		mWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_influx_points_written_total", Help: "Points InfluxDB accepted.",
		}),
		mDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_influx_points_dropped_total",
			Help: "Points lost: reason=rejected (InfluxDB refused them as malformed) or spool_full (oldest dropped from the outbox).",
		}, []string{"reason"}),
		mRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_influx_write_retries_total", Help: "Write attempts that failed and will be retried (outage, 5xx, 429).",
		}),
	}
	s.mDropped.WithLabelValues("rejected")
	s.mDropped.WithLabelValues("spool_full")
	s.mPending = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vigil_influx_outbox_points", Help: "Points in the outbox not yet delivered.",
	}, func() float64 { p, _ := s.out.stats(); return float64(p) })
	s.mSpoolLen = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vigil_influx_outbox_bytes", Help: "Size of the outbox on disk, bytes.",
	}, func() float64 { _, b := s.out.stats(); return float64(b) })
	p, _ := out.stats()
	if p > 0 {
		s.log.Info("influx: delivering points left in the outbox", "points", p)
	}
	s.failFrom = restoreFailing(out.dir, p)
	s.failFile = !s.failFrom.IsZero()
	go s.sendLoop()
	return s, nil
}

// Collectors returns the write metrics: vigil_influx_points_written_total,
// vigil_influx_points_dropped_total{reason}, vigil_influx_write_retries_total,
// vigil_influx_outbox_points and vigil_influx_outbox_bytes; and the
// duplicate-canary gauge vigil_duplicate_canaries{region,vantage} of
// Options.Duplicates (register it once per registry: see
// reporting.DuplicateWatch.Register).
func (s *Store) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s.mWritten, s.mDropped, s.mRetries, s.mPending, s.mSpoolLen, s.dups.Collector()}
}

// Stats is a snapshot of the write path.
type Stats struct {
	Written      uint64 // points InfluxDB accepted
	Rejected     uint64 // points refused as malformed and dropped
	SpoolDropped uint64 // undelivered points dropped because the outbox was full
	Retries      uint64 // failed write attempts that were retried
	Pending      int64  // points in the outbox not yet delivered
	OutboxBytes  int64  // outbox size on disk
}

// Stats returns counters since Open (Pending and OutboxBytes include what
// earlier runs left).
func (s *Store) Stats() Stats {
	p, b := s.out.stats()
	return Stats{Written: s.written.Load(), Rejected: s.rejected.Load(), SpoolDropped: s.spoolDropped.Load(),
		Retries: s.retries.Load(), Pending: p, OutboxBytes: b}
}

// Publish appends the verdicts to the outbox (fsynced) and returns; they are
// sent within flush_interval, or as soon as batch_size points are waiting.
// A verdict with a zero At is stamped with time.Now().
func (s *Store) Publish(_ context.Context, vs []reporting.Verdict) error {
	if len(vs) == 0 {
		return nil
	}
	var l lineBuilder
	lines := make([][]byte, len(vs))
	now := time.Now()
	for i := range vs {
		v := &vs[i]
		if v.At.IsZero() {
			c := *v
			c.At = now
			v = &c
		}
		lines[i] = verdictLine(&l, v)
	}
	if err := s.enqueue(lines); err != nil {
		return err
	}
	s.noteOwn(vs)
	return nil
}

// PublishSignals appends the signals to the outbox, like Publish.
func (s *Store) PublishSignals(_ context.Context, sigs []reporting.Signal) error {
	if len(sigs) == 0 {
		return nil
	}
	var l lineBuilder
	lines := make([][]byte, len(sigs))
	now := time.Now()
	for i := range sigs {
		g := sigs[i]
		if g.At.IsZero() {
			g.At = now
		}
		lines[i] = signalLine(&l, &g)
	}
	return s.enqueue(lines)
}

func (s *Store) enqueue(lines [][]byte) error {
	if s.closed.Load() {
		return ErrClosed
	}
	dropped, err := s.out.append(lines)
	if dropped > 0 {
		s.spoolDropped.Add(uint64(dropped))
		s.mDropped.WithLabelValues("spool_full").Add(float64(dropped))
		s.log.Warn("influx: outbox full, dropped the oldest points", "points", dropped, "spool_max", s.cfg.SpoolMax)
	}
	if err != nil {
		return fmt.Errorf("influx: %w", err)
	}
	s.signal()
	return nil
}

func (s *Store) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Store) notifyChanged() {
	s.changedMu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.changedMu.Unlock()
}

// Flush waits until every point published so far has been delivered (or
// dropped), or until ctx is done.
func (s *Store) Flush(ctx context.Context) error {
	s.flushes.Add(1)
	defer s.flushes.Add(-1)
	for {
		s.changedMu.Lock()
		ch := s.changed
		s.changedMu.Unlock()
		if p, _ := s.out.stats(); p == 0 {
			return nil
		}
		s.signal()
		select {
		case <-ch:
		case <-ctx.Done():
			p, _ := s.out.stats()
			return fmt.Errorf("influx: flush: %d points still undelivered: %w", p, ctx.Err())
		case <-s.done:
			return ErrClosed
		}
	}
}

// Close stops the sender after one last attempt (bounded by timeout) to
// deliver what is pending; whatever is left stays in the outbox for the
// next Open. Later calls return nil.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		<-s.done
		err = s.out.close()
		s.client.Close()
	})
	return err
}

func (s *Store) sendLoop() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-s.stop; cancel() }() // aborts an in-flight write or backoff on Close

	tick := time.NewTicker(s.cfg.FlushInterval)
	defer tick.Stop()
	backoff := s.opts.MinBackoff
	due := false // flush_interval elapsed: send a partial batch
	failures := 0
	var lastLog time.Time
	for {
		pending, _ := s.out.stats()
		if pending == 0 || (pending < int64(s.cfg.BatchSize) && !due && s.flushes.Load() == 0) {
			select {
			case <-s.stop:
				s.finalDrain()
				return
			case <-s.wake:
			case <-tick.C:
				due = true
			}
			continue
		}
		err := s.ExplainError(s.sendOne(ctx))
		if err == nil || ctx.Err() == nil {
			s.writes.Record(err)
			s.noteWrite(err)
		}
		if err == nil {
			if failures > 0 {
				s.log.Info("influx: writes recovered", "failures", failures)
				failures = 0
			}
			backoff = s.opts.MinBackoff
			if p, _ := s.out.stats(); p < int64(s.cfg.BatchSize) {
				due = false
			}
			continue
		}
		if ctx.Err() != nil {
			s.finalDrain()
			return
		}
		s.retries.Add(1)
		s.mRetries.Inc()
		var retryAfter time.Duration
		var he *http2.Error
		if errors.As(err, &he) && he.RetryAfter > 0 {
			retryAfter = time.Duration(he.RetryAfter) * time.Second
		}
		wait := retryWait(backoff, retryAfter, s.opts.MaxBackoff, s.opts.jitter())
		failures++
		if failures == 1 || time.Since(lastLog) >= time.Minute {
			s.log.Warn("influx: write failed, will retry", "err", err, "failures", failures,
				"retry_in", wait.Round(time.Millisecond), "pending", pending)
			lastLog = time.Now()
		}
		backoff = min(backoff*2, s.opts.MaxBackoff)
		select {
		case <-s.stop:
			s.finalDrain()
			return
		case <-time.After(wait):
		}
	}
}

// retryWait is the wait before the next write after a failure: backoff
// within ±20 % (j in [0, 1) places it), at least retryAfter, at most
// maxWait. The cap comes last, so that no wait is longer than documented
// (30 s by default), which the alerter's dead-man rule counts on.
func retryWait(backoff, retryAfter, maxWait time.Duration, j float64) time.Duration {
	wait := time.Duration(float64(backoff) * (0.8 + 0.4*j))
	return min(max(wait, retryAfter), maxWait)
}

// finalDrain tries, within the configured timeout, to deliver what is
// pending at Close; it stops at the first failure.
func (s *Store) finalDrain() {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	for ctx.Err() == nil {
		if p, _ := s.out.stats(); p == 0 {
			return
		}
		if err := s.sendOne(ctx); err != nil {
			return
		}
	}
}

// sendOne delivers the next batch from the outbox. A nil error means the
// batch is done (delivered, or rejected and dropped) and acknowledged.
func (s *Store) sendOne(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("influx: sender panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("influx: sender panicked: %v", r)
		}
	}()
	lines, from, to, err := s.out.next(s.cfg.BatchSize, 8<<20)
	if err != nil || len(lines) == 0 {
		return err
	}
	if err := s.deliver(ctx, lines); err != nil {
		return err
	}
	if err := s.out.ack(from, to, len(lines)); err != nil {
		s.log.Warn("influx: outbox cursor not saved (the batch may be sent again after a restart)", "err", err)
	}
	s.notifyChanged()
	return nil
}

// deliver writes lines; on a malformed-request rejection it splits the batch
// until the bad lines are found and drops only them. It returns an error only
// for retryable failures.
func (s *Store) deliver(ctx context.Context, lines []string) error {
	wctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	err := oneLine(s.scrub(s.write.WriteRecord(wctx, lines...)))
	cancel()
	if err == nil {
		s.written.Add(uint64(len(lines)))
		s.mWritten.Add(float64(len(lines)))
		return nil
	}
	if !rejected(err) {
		return err
	}
	// InfluxDB reports a partial write ("partial write: … dropped=N"): it
	// stored every other point of the batch, so nothing is re-sent.
	if n, ok := partialDropped(err); ok && n <= len(lines) {
		s.written.Add(uint64(len(lines) - n))
		s.mWritten.Add(float64(len(lines) - n))
		s.rejected.Add(uint64(n))
		s.mDropped.WithLabelValues("rejected").Add(float64(n))
		s.log.Error("influx: points rejected, dropped", "points", n, "of", len(lines), "reason", truncate(err.Error(), 1024))
		return nil
	}
	if len(lines) > 1 {
		// InfluxDB 1.x may have written part of the batch (partial write);
		// re-sending those points is harmless.
		if err := s.deliver(ctx, lines[:len(lines)/2]); err != nil {
			return err
		}
		return s.deliver(ctx, lines[len(lines)/2:])
	}
	s.rejected.Add(1)
	s.mDropped.WithLabelValues("rejected").Inc()
	s.log.Error("influx: point rejected, dropped", "reason", err.Error(), "line", truncate(lines[0], 512))
	return nil
}

// rejected reports whether err is InfluxDB refusing the data itself (a 4xx
// other than 401, 403, 404, 408 and 429), which retrying cannot fix.
func rejected(err error) bool {
	var he *http2.Error
	if !errors.As(err, &he) || he.StatusCode < 400 || he.StatusCode >= 500 {
		return false
	}
	switch he.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return true
}

var droppedRE = regexp.MustCompile(`partial write.*dropped=(\d+)`)

// partialDropped parses the dropped-point count of a partial write error.
func partialDropped(err error) (int, bool) {
	m := droppedRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, false
	}
	n, e := strconv.Atoi(m[1])
	return n, e == nil && n > 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// keyError is an error of InfluxDB's that a store.influxdb key is the
// cause of; it names the key and wraps InfluxDB's error.
type keyError struct {
	key, msg string
	err      error
}

func (e *keyError) Error() string { return e.key + ": " + e.msg }
func (e *keyError) Unwrap() error { return e.err }

// ExplainError returns err, or, when InfluxDB's answer points at a
// store.influxdb key, an error naming that key and wrapping err:
//
//	store.influxdb.token: rejected by InfluxDB (401 Unauthorized)
//	store.influxdb.bucket: "vigil/autogen": not found in InfluxDB (500 Internal Server Error: failed to initialize execute state: no database)
//
//	store.influxdb.url: that InfluxDB has Flux off, and vigil reads with Flux: set flux-enabled = true in the [http] section of influxdb.conf, or INFLUXDB_HTTP_FLUX_ENABLED=true, and restart InfluxDB (403 Forbidden: Flux query service disabled. …)
//
// 1.8's 403 "Flux query service disabled" points at InfluxDB's own config
// (reporting.FluxDisabled), other 401s and 403s at the token; 404 (2.x,
// and 1.8's writes) and 1.8's "no database" or "invalid retention policy"
// on Flux reads point at the bucket, or at the org when InfluxDB 2.x says
// the organization is not found. The token is never
// quoted, and where the answer echoes it (a server or gateway quoting the
// request's Authorization header) it shows as "***" (see scrub); the
// bucket is quoted as the config has it.
func (s *Store) ExplainError(err error) error {
	var he *http2.Error
	if err == nil || !errors.As(err, &he) || he.StatusCode == 0 {
		return err
	}
	var ke *keyError
	if errors.As(err, &ke) {
		return err
	}
	status := fmt.Sprintf("%d %s", he.StatusCode, http.StatusText(he.StatusCode))
	said := influxSaid(he)
	switch {
	case reporting.FluxDisabled(err):
		if said != "" {
			status += ": " + said
		}
		return &keyError{key: "store.influxdb.url", msg: "that InfluxDB has Flux off, and vigil reads with Flux: " + reporting.FluxFix + " (" + status + ")", err: err}
	case he.StatusCode == http.StatusUnauthorized || he.StatusCode == http.StatusForbidden:
		if said != "" {
			status += ": " + said
		}
		return &keyError{key: "store.influxdb.token", msg: "rejected by InfluxDB (" + status + ")", err: err}
	case reporting.OrgMissing(err):
		if said != "" {
			status += ": " + said
		}
		return &keyError{key: "store.influxdb.org", msg: fmt.Sprintf("%q: not found in InfluxDB (%s)", s.cfg.Org, status), err: err}
	case reporting.BucketMissing(err):
		if said != "" {
			status += ": " + said
		}
		return &keyError{key: "store.influxdb.bucket", msg: fmt.Sprintf("%q: not found in InfluxDB (%s)", s.cfg.Bucket, status), err: err}
	}
	return err
}

// influxSaid is InfluxDB's own message in he on one line, "" when it gave
// none. (InfluxDB 1.8 answers {"error": …}, which the client library fails
// to decode into he.Err but finds in the X-Influxdb-Error header; a Flux
// error comes as a CSV body "error\n<message>".)
func influxSaid(he *http2.Error) string {
	var lines []string
	for l := range strings.Lines(he.Message) {
		if l = strings.TrimSpace(l); l != "" && (l != "error" || len(lines) > 0) {
			lines = append(lines, l)
		}
	}
	return truncate(strings.Join(lines, "; "), 256)
}

// Health reports failing writes (points wait in the outbox) and failing
// reads (the proxy, alerter and status page see no verdicts from InfluxDB)
// as one error per line, nil when the last write and the last read worked.
// "writes failing since" keeps the start of an outage across restarts
// while points wait in the outbox (see failingFile); "reads failing since"
// starts with the process.
func (s *Store) Health() error {
	var errs []error
	if since, err := s.writesState(); err != nil {
		p, _ := s.out.stats()
		errs = append(errs, fmt.Errorf("writes failing since %s (%d points waiting in the outbox): %w",
			since.UTC().Format(time.RFC3339), p, err))
	}
	if since, err := s.reads.State(); err != nil {
		errs = append(errs, fmt.Errorf("reads failing since %s: %w", since.UTC().Format(time.RFC3339), s.ExplainError(err)))
	}
	return errors.Join(errs...)
}
