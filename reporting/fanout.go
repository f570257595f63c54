package reporting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultFanoutQueue is the per-sink queue length (in batches) NewFanout uses
// when given queue <= 0.
const DefaultFanoutQueue = 1024

// Retry defaults for NewFanout (see FanoutOptions).
const (
	// DefaultFanoutRetryBatches is how many failed batches a sink keeps for
	// retry; past it the oldest are dropped and counted.
	DefaultFanoutRetryBatches = 1024
	// DefaultFanoutRetryMerge is how many verdicts (or signals) a kept
	// batch grows to: batches that arrive while others wait are merged
	// into the newest kept one up to it, so that the RetryBatches bound
	// lasts hours of a busy canary (one batch every 250 ms) rather than
	// minutes, at about 256 × 1024 verdicts of memory at most.
	DefaultFanoutRetryMerge = 256
	// DefaultFanoutRetryMin and DefaultFanoutRetryMax bound the wait before
	// a failed batch is tried again: it starts at the first and doubles up
	// to the second while the sink keeps failing.
	DefaultFanoutRetryMin = time.Second
	DefaultFanoutRetryMax = 30 * time.Second
	// DefaultFanoutLogEvery is how often at most a sink that keeps failing
	// is logged again (the line says how many were suppressed).
	DefaultFanoutLogEvery = time.Minute
)

// FanoutOptions tunes NewFanoutWith. Every zero field has the default named.
type FanoutOptions struct {
	Log   *slog.Logger // nil: slog.Default()
	Queue int          // per-sink queue length in batches; 0: DefaultFanoutQueue
	// RetryBatches bounds the failed batches a sink keeps in memory for
	// retry; 0: DefaultFanoutRetryBatches. When it overflows the oldest
	// batch is dropped and its verdicts counted in Dropped.
	RetryBatches int
	// RetryMerge is how many verdicts or signals a kept batch may hold
	// once batches that arrive while it waits are merged into it;
	// 0: DefaultFanoutRetryMerge, 1: no merging.
	RetryMerge int
	// RetryMin and RetryMax bound the retry backoff; 0: DefaultFanoutRetryMin,
	// DefaultFanoutRetryMax.
	RetryMin, RetryMax time.Duration
	// LogEvery is the least time between two "sink publish failed" lines of
	// one sink; 0: DefaultFanoutLogEvery.
	LogEvery time.Duration
}

// ErrFanoutClosed is returned by Publish and PublishSignals after Close.
var ErrFanoutClosed = errors.New("reporting: fanout closed")

// NamedSink is a Sink with the name used in logs and in the
// vigil_sink_dropped_total{sink} label. A Sink that also implements
// SignalSink receives signals as well.
type NamedSink struct {
	Name string
	Sink Sink
}

// Fanout delivers every published batch to several sinks without ever
// blocking the publisher: each sink has its own bounded queue and goroutine.
// When a sink's queue is full the batch is dropped for that sink only and its
// verdicts (or signals) are counted in Dropped and vigil_sink_dropped_total.
//
// A batch the sink refuses (an error, e.g. a full disk) is kept and tried
// again with backoff, in order, ahead of the batches that arrive meanwhile,
// which wait with it; at most RetryBatches are kept (the oldest overflow is
// dropped and counted). While a sink fails, Health names it and the error;
// the failure is logged once, then at most once per LogEvery with the count
// of suppressed lines, and the recovery is logged. A panicking sink's batch
// is not retried.
//
// Fanout does not own its sinks: Close drains the queues but does not close
// the sinks; close them after the Fanout.
type Fanout struct {
	log   *slog.Logger
	o     FanoutOptions
	sinks []*fanoutSink

	mu     sync.RWMutex // guards closed against the queue channels being closed
	closed bool
	once   sync.Once
	stop   context.CancelFunc
	ctx    context.Context // passed to the sinks; cancelled when Close's ctx expires
	err    error

	dropped *prometheus.CounterVec
	errs    *prometheus.CounterVec
}

var (
	_ Sink       = (*Fanout)(nil)
	_ SignalSink = (*Fanout)(nil)
)

type fanoutItem struct {
	verdicts []Verdict
	signals  []Signal
}

type fanoutSink struct {
	name    string
	sink    Sink
	signals SignalSink // nil when the sink does not take signals
	queue   chan fanoutItem
	done    chan struct{}
	dropped atomic.Uint64
	dropC   prometheus.Counter
	errC    prometheus.Counter

	failing Failing      // since when Publish fails, for Health
	waiting atomic.Int64 // batches kept for retry
	// pending are the refused batches, oldest first. Only the run
	// goroutine changes it, under pmu; Waiting reads it under pmu.
	pmu     sync.Mutex
	pending []fanoutItem
	waitN   atomic.Int64 // verdicts and signals in them
	logLast time.Time    // last "sink publish failed" line (run goroutine only)
	logSupp int          // lines left out since then
}

// NewFanout starts one goroutine per sink. queue is the per-sink queue length
// in batches (default DefaultFanoutQueue, 1024). log may be nil (slog.Default).
// Sink names should be unique; they label the metrics.
func NewFanout(log *slog.Logger, queue int, sinks ...NamedSink) *Fanout {
	return NewFanoutWith(FanoutOptions{Log: log, Queue: queue}, sinks...)
}

// NewFanoutWith is NewFanout with every option.
func NewFanoutWith(o FanoutOptions, sinks ...NamedSink) *Fanout {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Queue <= 0 {
		o.Queue = DefaultFanoutQueue
	}
	if o.RetryBatches <= 0 {
		o.RetryBatches = DefaultFanoutRetryBatches
	}
	if o.RetryMerge <= 0 {
		o.RetryMerge = DefaultFanoutRetryMerge
	}
	if o.RetryMin <= 0 {
		o.RetryMin = DefaultFanoutRetryMin
	}
	if o.RetryMax <= 0 {
		o.RetryMax = DefaultFanoutRetryMax
	}
	o.RetryMax = max(o.RetryMax, o.RetryMin)
	if o.LogEvery <= 0 {
		o.LogEvery = DefaultFanoutLogEvery
	}
	log, queue := o.Log, o.Queue
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fanout{
		log:  log,
		o:    o,
		ctx:  ctx,
		stop: cancel,
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_sink_dropped_total",
			Help: "Verdicts and signals dropped because a sink's queue or its retry queue was full.",
		}, []string{"sink"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_sink_errors_total",
			Help: "Batches a sink failed to accept (error or panic).",
		}, []string{"sink"}),
	}
	for _, ns := range sinks {
		s := &fanoutSink{
			name:  ns.Name,
			sink:  ns.Sink,
			queue: make(chan fanoutItem, queue),
			done:  make(chan struct{}),
			dropC: f.dropped.WithLabelValues(ns.Name), // pre-created at 0
			errC:  f.errs.WithLabelValues(ns.Name),
		}
		s.signals, _ = ns.Sink.(SignalSink)
		f.sinks = append(f.sinks, s)
		go f.run(s)
	}
	return f
}

// Collectors returns vigil_sink_dropped_total{sink} and
// vigil_sink_errors_total{sink}, with a zero series per sink from the start.
func (f *Fanout) Collectors() []prometheus.Collector {
	return []prometheus.Collector{f.dropped, f.errs}
}

// Dropped returns how many verdicts and signals were dropped for the sink
// named name because its queue was full (0 for an unknown name).
func (f *Fanout) Dropped(name string) uint64 {
	var n uint64
	for _, s := range f.sinks {
		if s.name == name {
			n += s.dropped.Load()
		}
	}
	return n
}

// Publish queues a copy of v for every sink and returns at once. It returns
// ErrFanoutClosed after Close and nil otherwise; a full queue is not an error
// (the drop is counted).
func (f *Fanout) Publish(_ context.Context, v []Verdict) error {
	if len(v) == 0 {
		return nil
	}
	cp := append([]Verdict(nil), v...)
	return f.enqueue(fanoutItem{verdicts: cp}, len(cp), false)
}

// PublishSignals queues a copy of s for every sink that implements
// SignalSink and returns at once, like Publish.
func (f *Fanout) PublishSignals(_ context.Context, s []Signal) error {
	if len(s) == 0 {
		return nil
	}
	cp := append([]Signal(nil), s...)
	return f.enqueue(fanoutItem{signals: cp}, len(cp), true)
}

func (f *Fanout) enqueue(it fanoutItem, n int, signals bool) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ErrFanoutClosed
	}
	for _, s := range f.sinks {
		if signals && s.signals == nil {
			continue
		}
		select {
		case s.queue <- it:
		default:
			s.dropped.Add(uint64(n))
			s.dropC.Add(float64(n))
		}
	}
	return nil
}

func (f *Fanout) run(s *fanoutSink) {
	defer close(s.done)
	var (
		timer   *time.Timer
		retryC  <-chan time.Time
		backoff = f.o.RetryMin
	)
	arm := func() {
		if timer == nil {
			timer = time.NewTimer(backoff)
		} else {
			timer.Reset(backoff)
		}
		retryC = timer.C
	}
	// pop removes the oldest kept batch and returns its size.
	pop := func() int {
		s.pmu.Lock()
		n := s.pending[0].size()
		s.pending[0] = fanoutItem{} // let it be collected
		s.pending = s.pending[1:]
		s.pmu.Unlock()
		s.waiting.Add(-1)
		s.waitN.Add(-int64(n))
		return n
	}
	hold := func(it fanoutItem) {
		// A batch that arrives while others wait joins the newest
		// kept one when it is of the same kind and both fit in
		// RetryMerge: order is kept, and the bound lasts longer.
		if n := len(s.pending); n > 0 {
			last := &s.pending[n-1]
			if (it.signals != nil) == (last.signals != nil) && last.size()+it.size() <= f.o.RetryMerge {
				s.pmu.Lock()
				// Clipped: never append into a slice a publisher
				// handed over.
				last.verdicts = append(slices.Clip(last.verdicts), it.verdicts...)
				if it.signals != nil {
					last.signals = append(slices.Clip(last.signals), it.signals...)
				}
				s.pmu.Unlock()
				s.waitN.Add(int64(it.size()))
				return
			}
		}
		if len(s.pending) >= f.o.RetryBatches {
			n := pop()
			s.dropped.Add(uint64(n))
			s.dropC.Add(float64(n))
		}
		s.pmu.Lock()
		s.pending = append(s.pending, it)
		s.pmu.Unlock()
		s.waiting.Add(1)
		s.waitN.Add(int64(it.size()))
	}
	// flush tries the kept batches in order and stops at the first refusal.
	flush := func() bool {
		for len(s.pending) > 0 {
			if ok, retry := f.deliver(s, s.pending[0], len(s.pending) == 1); !ok && retry {
				return false
			}
			pop()
		}
		return true
	}
	for {
		select {
		case it, ok := <-s.queue:
			if !ok {
				// Closing: one last try of what is kept; the rest is lost.
				if len(s.pending) > 0 && (f.ctx.Err() != nil || !flush()) {
					n := s.waitN.Load()
					s.dropped.Add(uint64(n))
					s.dropC.Add(float64(n))
					f.log.Error("sink publish failed at shutdown: kept batches dropped", "sink", s.name,
						"batches", len(s.pending), "dropped", n)
				}
				if timer != nil {
					timer.Stop()
				}
				return
			}
			if len(s.pending) > 0 { // keep the order: wait behind the refused ones
				hold(it)
				continue
			}
			if ok, retry := f.deliver(s, it, true); !ok && retry {
				hold(it)
				backoff = f.o.RetryMin
				arm()
			}
		case <-retryC:
			retryC = nil
			if flush() {
				backoff = f.o.RetryMin
				continue
			}
			backoff = min(2*backoff, f.o.RetryMax)
			arm()
		}
	}
}

func (it fanoutItem) size() int { return len(it.verdicts) + len(it.signals) }

// deliver hands one batch to a sink and reports whether the sink took it
// and, if not, whether to try it again: a panic is recovered (so one bad
// batch does not end the sink's goroutine) and its batch is not retried.
// A failing sink has recovered once it took the last batch it kept (last):
// one kept batch taken while others still wait is no recovery (a disk
// hovering near full takes one and refuses the next), so "failing since"
// and the log keep the outage whole.
func (f *Fanout) deliver(s *fanoutSink, it fanoutItem, last bool) (ok, retry bool) {
	defer func() {
		if r := recover(); r != nil {
			s.errC.Inc()
			f.log.Error("sink panicked", "sink", s.name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			ok, retry = false, false
		}
	}()
	var err error
	if it.signals != nil {
		err = s.signals.PublishSignals(f.ctx, it.signals)
	} else {
		err = s.sink.Publish(f.ctx, it.verdicts)
	}
	if err == nil {
		if !last {
			return true, false
		}
		if since, failing := s.failing.State(); failing != nil {
			f.log.Info("sink publish recovered", "sink", s.name, "failing_for", time.Since(since).Round(time.Second).String(),
				"suppressed", s.logSupp)
			s.logLast, s.logSupp = time.Time{}, 0
		}
		s.failing.Record(nil)
		return true, false
	}
	s.errC.Inc()
	s.failing.Record(err)
	now := time.Now()
	if !s.logLast.IsZero() && now.Sub(s.logLast) < f.o.LogEvery {
		s.logSupp++
		return false, true
	}
	f.log.Warn("sink publish failed", "sink", s.name, "verdicts", len(it.verdicts), "signals", len(it.signals),
		"waiting_batches", s.waiting.Load(), "suppressed", s.logSupp, "err", err)
	s.logLast, s.logSupp = now, 0
	return false, true
}

// Health returns nil while every sink takes its batches, else one line per
// failing sink: since when, how much waits for retry, and the last error.
func (f *Fanout) Health() error {
	var errs []error
	for _, s := range f.sinks {
		since, err := s.failing.State()
		if err == nil {
			continue
		}
		errs = append(errs, fmt.Errorf("sink %s: writes failing since %s (%d batches, %d verdicts or signals waiting for retry, at most %d batches kept): %w",
			s.name, since.UTC().Format(time.RFC3339), s.waiting.Load(), s.waitN.Load(), f.o.RetryBatches, err))
	}
	return errors.Join(errs...)
}

// Close stops accepting batches and waits until every sink has drained its
// queue, or until ctx is done — then the context given to the sinks is
// cancelled and Close returns ctx's error without waiting further. Only the
// first call does the work; later calls return the first call's result.
func (f *Fanout) Close(ctx context.Context) error {
	f.once.Do(func() {
		f.mu.Lock()
		f.closed = true
		for _, s := range f.sinks {
			close(s.queue)
		}
		f.mu.Unlock()
		for _, s := range f.sinks {
			select {
			case <-s.done:
			case <-ctx.Done():
				f.stop()
				f.err = fmt.Errorf("reporting: fanout close: sink %q still draining: %w", s.name, ctx.Err())
				return
			}
		}
		f.stop()
	})
	return f.err
}

// kept returns the batches the sink named name holds for retry, oldest
// first, with since when and why it refuses writes (zero and nil while it
// takes them). The batches are shared: read them, never change them.
func (f *Fanout) kept(name string) (items []fanoutItem, since time.Time, err error) {
	for _, s := range f.sinks {
		if s.name != name {
			continue
		}
		s.pmu.Lock()
		items = append(items, s.pending...)
		s.pmu.Unlock()
		since, err = s.failing.State()
		return items, since, err
	}
	return nil, time.Time{}, nil
}
