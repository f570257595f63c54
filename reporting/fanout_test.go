package reporting_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// recordSink records what it receives; gate, when non-nil, blocks each
// Publish until a value arrives or the context ends.
type recordSink struct {
	mu       sync.Mutex
	verdicts []reporting.Verdict
	batches  int
	gate     chan struct{}
	panicOn  int // panic on this batch number (1-based), 0: never
}

func (r *recordSink) Publish(ctx context.Context, v []reporting.Verdict) error {
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches++
	if r.batches == r.panicOn {
		panic("boom in sink")
	}
	r.verdicts = append(r.verdicts, v...)
	return nil
}

func (r *recordSink) got() []reporting.Verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]reporting.Verdict(nil), r.verdicts...)
}

type signalRecordSink struct {
	recordSink
	smu     sync.Mutex
	signals []reporting.Signal
}

func (s *signalRecordSink) PublishSignals(_ context.Context, sig []reporting.Signal) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	s.signals = append(s.signals, sig...)
	return nil
}

func verdicts(n int, check string) []reporting.Verdict {
	out := make([]reporting.Verdict, n)
	for i := range out {
		out[i] = reporting.Verdict{Check: check, Target: "t", Streak: i + 1, State: reporting.StateHealthy}
	}
	return out
}

func counterValue(t *testing.T, f *reporting.Fanout, name, sink string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range f.Collectors() {
		reg.MustRegister(c)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "sink" && l.GetValue() == sink {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{sink=%q} series", name, sink)
	return 0
}

func TestFanoutDeliversToEverySinkInOrder(t *testing.T) {
	a, b := &recordSink{}, &signalRecordSink{}
	f := reporting.NewFanout(nil, 0, reporting.NamedSink{Name: "a", Sink: a}, reporting.NamedSink{Name: "b", Sink: b})
	for i := 0; i < 50; i++ {
		batch := verdicts(3, "c")
		if err := f.Publish(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		batch[0].Check = "mutated-after-publish" // the fanout must have copied
	}
	sig := []reporting.Signal{{Pool: "p", Origin: "o", Requests: 10}}
	if err := f.PublishSignals(context.Background(), sig); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]reporting.Verdict{"a": a.got(), "b": b.got()} {
		if len(got) != 150 {
			t.Fatalf("sink %s got %d verdicts, want 150", name, len(got))
		}
		for i, v := range got {
			if v.Check != "c" || v.Streak != i%3+1 {
				t.Fatalf("sink %s verdict %d = %+v, want check c streak %d", name, i, v, i%3+1)
			}
		}
	}
	if len(b.signals) != 1 || b.signals[0].Requests != 10 {
		t.Fatalf("signal sink got %+v", b.signals)
	}
	if got := counterValue(t, f, "vigil_sink_dropped_total", "a"); got != 0 {
		t.Fatalf("dropped{a} = %v, want 0", got)
	}
}

func TestFanoutNeverBlocksAndCountsDrops(t *testing.T) {
	slow := &recordSink{gate: make(chan struct{})}
	fast := &recordSink{}
	f := reporting.NewFanout(nil, 2, reporting.NamedSink{Name: "slow", Sink: slow}, reporting.NamedSink{Name: "fast", Sink: fast})

	// The dropped counters exist at 0 before anything happened.
	if got := counterValue(t, f, "vigil_sink_dropped_total", "slow"); got != 0 {
		t.Fatalf("dropped{slow} before publishing = %v", got)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 20; i++ {
			_ = f.Publish(context.Background(), verdicts(5, "c"))
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // a deadlock guard, not a performance assertion
		t.Fatal("Publish blocked behind a stuck sink")
	}
	// The slow sink holds at most 1 in flight + 2 queued batches.
	dropped := f.Dropped("slow")
	if dropped < 17*5 || dropped > 20*5 || dropped%5 != 0 {
		t.Fatalf("Dropped(slow) = %d, want between 85 and 100 in whole batches", dropped)
	}
	if got := counterValue(t, f, "vigil_sink_dropped_total", "slow"); uint64(got) != dropped {
		t.Fatalf("vigil_sink_dropped_total{slow} = %v, Dropped = %d", got, dropped)
	}
	close(slow.gate) // release
	if err := f.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The fast sink may also have dropped a little with a 2-batch queue, but
	// every verdict is either delivered or counted.
	if n := uint64(len(fast.got())); n+f.Dropped("fast") != 100 {
		t.Fatalf("fast sink got %d + dropped %d != 100", n, f.Dropped("fast"))
	}
	if n := uint64(len(slow.got())); n+dropped != 100 {
		t.Fatalf("slow sink got %d + dropped %d != 100", n, dropped)
	}
}

func TestFanoutRecoversPanicsWithStack(t *testing.T) {
	var buf checktest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	s := &recordSink{panicOn: 1}
	f := reporting.NewFanout(log, 0, reporting.NamedSink{Name: "bad", Sink: s})
	_ = f.Publish(context.Background(), verdicts(1, "first"))
	_ = f.Publish(context.Background(), verdicts(1, "second"))
	if err := f.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := s.got()
	if len(got) != 1 || got[0].Check != "second" {
		t.Fatalf("after a panic the sink should still receive the next batch, got %+v", got)
	}
	out := buf.String()
	if !strings.Contains(out, "boom in sink") || !strings.Contains(out, "goroutine") || !strings.Contains(out, "sink=bad") {
		t.Fatalf("panic log lacks message, sink or stack:\n%s", out)
	}
	if v := counterValue(t, f, "vigil_sink_errors_total", "bad"); v != 1 {
		t.Fatalf("vigil_sink_errors_total{bad} = %v, want 1", v)
	}
}

func TestFanoutCloseOnceAndDeadline(t *testing.T) {
	stuck := &recordSink{gate: make(chan struct{})}
	f := reporting.NewFanout(nil, 0, reporting.NamedSink{Name: "stuck", Sink: stuck})
	_ = f.Publish(context.Background(), verdicts(1, "c"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := f.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with a stuck sink = %v, want deadline exceeded", err)
	}
	if err2 := f.Close(context.Background()); err2 != err {
		t.Fatalf("second Close = %v, want the first result %v", err2, err)
	}
	if err := f.Publish(context.Background(), verdicts(1, "late")); !errors.Is(err, reporting.ErrFanoutClosed) {
		t.Fatalf("Publish after Close = %v", err)
	}
	if err := f.PublishSignals(context.Background(), []reporting.Signal{{}}); !errors.Is(err, reporting.ErrFanoutClosed) {
		t.Fatalf("PublishSignals after Close = %v", err)
	}
}
