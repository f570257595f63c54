package reporting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultFanoutQueue is the per-sink queue length (in batches) NewFanout uses
// when given queue <= 0.
const DefaultFanoutQueue = 1024

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
// Fanout does not own its sinks: Close drains the queues but does not close
// the sinks; close them after the Fanout.
type Fanout struct {
	log   *slog.Logger
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
}

// NewFanout starts one goroutine per sink. queue is the per-sink queue length
// in batches (default DefaultFanoutQueue, 1024). log may be nil (slog.Default).
// Sink names should be unique; they label the metrics.
func NewFanout(log *slog.Logger, queue int, sinks ...NamedSink) *Fanout {
	if log == nil {
		log = slog.Default()
	}
	if queue <= 0 {
		queue = DefaultFanoutQueue
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fanout{
		log:  log,
		ctx:  ctx,
		stop: cancel,
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_sink_dropped_total",
			Help: "Verdicts and signals dropped because a sink's queue was full.",
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
	for it := range s.queue {
		f.deliver(s, it)
	}
}

// deliver hands one batch to a sink, recovering a panic so one bad batch does
// not end the sink's goroutine.
func (f *Fanout) deliver(s *fanoutSink, it fanoutItem) {
	defer func() {
		if r := recover(); r != nil {
			s.errC.Inc()
			f.log.Error("sink panicked", "sink", s.name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	var err error
	if it.signals != nil {
		err = s.signals.PublishSignals(f.ctx, it.signals)
	} else {
		err = s.sink.Publish(f.ctx, it.verdicts)
	}
	if err != nil {
		s.errC.Inc()
		f.log.Warn("sink publish failed", "sink", s.name, "verdicts", len(it.verdicts), "signals", len(it.signals), "err", err)
	}
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
