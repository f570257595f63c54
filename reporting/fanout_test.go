package reporting_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
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

// refusingSink refuses every batch with err while refuse is set, like a
// store on a full disk, and records what it accepts.
type refusingSink struct {
	recordSink
	refuse atomic.Bool
	tries  atomic.Int64
}

var errDiskFull = errors.New("database or disk is full (13)")

func (r *refusingSink) Publish(ctx context.Context, v []reporting.Verdict) error {
	r.tries.Add(1)
	if r.refuse.Load() {
		return errDiskFull
	}
	return r.recordSink.Publish(ctx, v)
}

// TestFanoutRetriesRefusedBatches: while a sink refuses writes, Health names
// it with the error and what waits, the failure is logged once (further
// lines suppressed and counted), and no batch is lost: once the sink takes
// writes again every batch arrives, in order, and Health clears.
func TestFanoutRetriesRefusedBatches(t *testing.T) {
	var logs checktest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s := &refusingSink{}
	s.refuse.Store(true)
	f := reporting.NewFanoutWith(reporting.FanoutOptions{Log: log, RetryMerge: 1, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond},
		reporting.NamedSink{Name: "embedded", Sink: s})
	defer f.Close(context.Background())
	for i := range 5 {
		if err := f.Publish(context.Background(), []reporting.Verdict{{Check: "c", Target: "t", Streak: i + 1}}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.tries.Load() < 6 && time.Now().Before(deadline) { // the first try and some retries
		time.Sleep(10 * time.Millisecond)
	}
	err := f.Health()
	if err == nil || !strings.Contains(err.Error(), "sink embedded: writes failing since ") ||
		!strings.Contains(err.Error(), "(5 batches, 5 verdicts or signals waiting for retry, at most 1024 batches kept): database or disk is full (13)") {
		t.Fatalf("Health() = %v; want the failing sink, what waits and the error", err)
	}
	if n := strings.Count(logs.String(), `msg="sink publish failed"`); n != 1 {
		t.Errorf("%d \"sink publish failed\" lines after %d tries, want 1 (rate-limited):\n%s", n, s.tries.Load(), logs.String())
	}
	if got := f.Dropped("embedded"); got != 0 {
		t.Errorf("Dropped = %d while batches wait for retry, want 0", got)
	}

	s.refuse.Store(false)
	for len(s.got()) < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := s.got()
	if len(got) != 5 {
		t.Fatalf("sink got %d verdicts after it recovered, want all 5", len(got))
	}
	for i, v := range got {
		if v.Streak != i+1 {
			t.Fatalf("verdict %d has streak %d: order lost", i, v.Streak)
		}
	}
	if err := f.Health(); err != nil {
		t.Errorf("Health() after recovery = %v, want nil", err)
	}
	if !strings.Contains(logs.String(), `msg="sink publish recovered" sink=embedded`) {
		t.Errorf("no recovery line:\n%s", logs.String())
	}
}

// TestFanoutRetryQueueBound: past RetryBatches refused batches the oldest
// are dropped and counted, so a sink that never recovers costs bounded memory.
func TestFanoutRetryQueueBound(t *testing.T) {
	s := &refusingSink{}
	s.refuse.Store(true)
	f := reporting.NewFanoutWith(reporting.FanoutOptions{Log: slog.New(slog.DiscardHandler), RetryBatches: 3, RetryMerge: 1, RetryMin: time.Hour},
		reporting.NamedSink{Name: "embedded", Sink: s})
	for i := range 10 {
		f.Publish(context.Background(), verdicts(2, "c"+string(rune('a'+i))))
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.Dropped("embedded") < 14 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := f.Dropped("embedded"); got != 14 {
		t.Errorf("Dropped = %d, want 14 (7 oldest batches of 2 past the bound of 3)", got)
	}
	if got := counterValue(t, f, "vigil_sink_dropped_total", "embedded"); got != 14 {
		t.Errorf("vigil_sink_dropped_total = %v, want 14", got)
	}
	if err := f.Health(); err == nil || !strings.Contains(err.Error(), "(3 batches, 6 verdicts or signals waiting") {
		t.Errorf("Health() = %v, want 3 batches waiting", err)
	}
	s.refuse.Store(false)
	if err := f.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := s.got()
	if len(got) != 6 || got[0].Check != "ch" || got[5].Check != "cj" {
		t.Errorf("at Close the sink got %d verdicts (%v…), want the 3 newest batches", len(got), got)
	}
}

// hoveringSink refuses writes but takes one when allowed: a disk hovering
// near full.
type hoveringSink struct {
	refusingSink
	allowOne atomic.Bool
}

func (h *hoveringSink) Publish(ctx context.Context, v []reporting.Verdict) error {
	if h.allowOne.CompareAndSwap(true, false) {
		h.tries.Add(1)
		return h.recordSink.Publish(ctx, v)
	}
	return h.refusingSink.Publish(ctx, v)
}

// TestFanoutOneKeptBatchTakenIsNoRecovery: a failing sink that takes one of
// its kept batches and refuses the next is still failing since the outage
// began: no "recovered" line, and Health keeps the first date; it recovers
// once every kept batch is in.
func TestFanoutOneKeptBatchTakenIsNoRecovery(t *testing.T) {
	var logs checktest.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s := &hoveringSink{}
	s.refuse.Store(true)
	f := reporting.NewFanoutWith(reporting.FanoutOptions{Log: log, RetryMerge: 1, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond},
		reporting.NamedSink{Name: "embedded", Sink: s})
	defer f.Close(context.Background())
	for i := range 3 {
		if err := f.Publish(context.Background(), []reporting.Verdict{{Check: "c", Target: "t", Streak: i + 1}}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.tries.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	first := f.Health()
	if first == nil {
		t.Fatal("Health() = nil while the sink refuses writes")
	}
	time.Sleep(1100 * time.Millisecond) // a later "since" would read differently
	s.allowOne.Store(true)
	for len(s.got()) < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	n := s.tries.Load()
	for s.tries.Load() < n+2 && time.Now().Before(deadline) { // refused again since
		time.Sleep(10 * time.Millisecond)
	}
	if len(s.got()) != 1 {
		t.Fatalf("sink took %d batches, want 1", len(s.got()))
	}
	if strings.Contains(logs.String(), "sink publish recovered") {
		t.Errorf("one kept batch taken of 3 was logged as a recovery:\n%s", logs.String())
	}
	since := func(err error) string {
		_, after, _ := strings.Cut(fmt.Sprint(err), "writes failing since ")
		d, _, _ := strings.Cut(after, " ")
		return d
	}
	if got := f.Health(); got == nil || since(got) != since(first) {
		t.Errorf("Health() = %v; want still failing since %s", got, since(first))
	}
	s.refuse.Store(false)
	for len(s.got()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.Health(); err != nil || !strings.Contains(logs.String(), "sink publish recovered") {
		t.Errorf("after every kept batch is in: Health() = %v, recovery line logged: %v", err, strings.Contains(logs.String(), "sink publish recovered"))
	}
}

// TestFanoutMergesKeptBatches: batches that arrive while a refused one
// waits join the newest kept batch up to RetryMerge verdicts, so a bound
// of 3 kept batches holds 600 one-verdict batches (a busy canary hands its
// store one every 250 ms) instead of dropping all but 3; once the store
// takes writes every verdict arrives, in order.
func TestFanoutMergesKeptBatches(t *testing.T) {
	s := &refusingSink{}
	s.refuse.Store(true)
	f := reporting.NewFanoutWith(reporting.FanoutOptions{Log: slog.New(slog.DiscardHandler), RetryBatches: 3, RetryMin: time.Hour},
		reporting.NamedSink{Name: "embedded", Sink: s})
	ctx := context.Background()
	for i := range 600 {
		if err := f.Publish(ctx, []reporting.Verdict{{Check: "c", Target: "t", Streak: i + 1}}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	kept := func() bool {
		err := f.Health()
		return err != nil && strings.Contains(err.Error(), "(3 batches, 600 verdicts or signals waiting")
	}
	for !kept() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !kept() {
		t.Fatalf("Health() = %v, want 600 verdicts kept in 3 batches (256 + 256 + 88)", f.Health())
	}
	if got := f.Dropped("embedded"); got != 0 {
		t.Errorf("Dropped = %d, want 0", got)
	}
	s.refuse.Store(false)
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := s.got()
	if len(got) != 600 {
		t.Fatalf("the store got %d verdicts once it took writes, want 600", len(got))
	}
	for i, v := range got {
		if v.Streak != i+1 {
			t.Fatalf("verdict %d has streak %d: order lost", i, v.Streak)
		}
	}
}
