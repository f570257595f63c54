package reporting_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// refusingStore is the embedded store that refuses every write while
// refuse is set, as it does on a full disk.
type refusingStore struct {
	*store.Store
	refuse atomic.Bool
}

func (r *refusingStore) Publish(ctx context.Context, v []reporting.Verdict) error {
	if r.refuse.Load() {
		return errDiskFull
	}
	return r.Store.Publish(ctx, v)
}

func (r *refusingStore) PublishSignals(ctx context.Context, s []reporting.Signal) error {
	if r.refuse.Load() {
		return errDiskFull
	}
	return r.Store.PublishSignals(ctx, s)
}

// TestWithWaitingReadsKeptBatches: while the embedded store refuses
// writes, a reader through WithWaiting sees the latest verdicts the
// fan-out keeps for it (the newest per series wins, stored or kept), the
// kept signals, and a note naming the store, since when and the error;
// once the store takes the batches again it reads the store alone, with
// no note.
func TestWithWaitingReadsKeptBatches(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sink := &refusingStore{Store: st}
	f := reporting.NewFanoutWith(reporting.FanoutOptions{Log: slog.New(slog.DiscardHandler), RetryMerge: 1, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond},
		reporting.NamedSink{Name: "embedded", Sink: sink})
	defer f.Close(context.Background())
	src := reporting.WithWaiting(st, f, "embedded", "store.embedded")
	sigs, ok := src.(reporting.SignalSource)
	if !ok {
		t.Fatal("WithWaiting over the embedded store is not a SignalSource: the canary's triggers would read no signals")
	}

	now := time.Now()
	v := func(target string, state reporting.State, ago time.Duration) reporting.Verdict {
		at := now.Add(-ago)
		return reporting.Verdict{Check: "up", Target: target, Region: "r1", Vantage: "v1", State: state,
			OK: state == reporting.StateHealthy, Interval: time.Second, At: at, Expires: at.Add(3 * time.Second)}
	}
	ctx := context.Background()
	f.Publish(ctx, []reporting.Verdict{v("a", reporting.StateHealthy, 20*time.Second), v("b", reporting.StateHealthy, 20*time.Second)})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if vs, _ := st.Verdicts(ctx, 0); len(vs) == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	sink.refuse.Store(true)
	f.Publish(ctx, []reporting.Verdict{v("a", reporting.StateUnhealthy, 3*time.Second)})
	f.Publish(ctx, []reporting.Verdict{v("a", reporting.StateDegraded, time.Second), v("0new", reporting.StateHealthy, time.Second)})
	f.Publish(ctx, []reporting.Verdict{v("b", reporting.StateUnhealthy, time.Hour)}) // older than the stored b
	f.PublishSignals(ctx, []reporting.Signal{{Pool: "p", Origin: "a", Region: "r1", At: now.Add(-time.Second), Requests: 7}})
	kept := func() bool { err := f.Health(); return err != nil && strings.Contains(err.Error(), "(4 batches, ") }
	for time.Now().Before(deadline) && !kept() {
		time.Sleep(10 * time.Millisecond)
	}
	if !kept() {
		t.Fatalf("the fan-out does not keep the 4 refused batches: %v", f.Health())
	}

	rctx, notes := reporting.WithReadNotes(ctx)
	vs, err := src.Verdicts(rctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range vs {
		got = append(got, x.Target+"="+string(x.State))
	}
	if want := "0new=healthy a=degraded b=healthy"; strings.Join(got, " ") != want {
		t.Errorf("latest verdicts while the store refuses writes: %s, want %s (newest per pair, stored or waiting, in the store's order)", strings.Join(got, " "), want)
	}
	note := notes.String()
	if !strings.HasPrefix(note, "store.embedded refuses writes since ") ||
		!strings.Contains(note, ": database or disk is full (13). The latest states shown include verdicts waiting in this process's memory for retry; history and uptime are incomplete from ") ||
		strings.ContainsAny(note, "\n\r") {
		t.Errorf("note %q: want one line naming the store, since when and its error", note)
	}
	if vs, _ := src.Verdicts(ctx, 2*time.Second); len(vs) != 2 || vs[0].Target != "0new" || vs[1].Target != "a" {
		t.Errorf("max_age 2s: %+v, want the two verdicts of the last 2s", vs)
	}
	gs, err := sigs.Signals(ctx, now.Add(-time.Minute))
	if err != nil || len(gs) != 1 || gs[0].Requests != 7 {
		t.Errorf("signals while the store refuses writes: %+v, %v; want the waiting one", gs, err)
	}
	if gs, _ := sigs.Signals(ctx, now); len(gs) != 0 {
		t.Errorf("signals after now: %+v, want none", gs)
	}
	hctx, hnotes := reporting.WithReadNotes(ctx)
	if _, err := src.History(hctx, reporting.HistoryQuery{Check: "up"}); err != nil || hnotes.String() != note {
		t.Errorf("history: %v, note %q; want the same note", err, hnotes.String())
	}

	sink.refuse.Store(false)
	for time.Now().Before(deadline) && f.Health() != nil {
		time.Sleep(10 * time.Millisecond)
	}
	rctx, notes = reporting.WithReadNotes(ctx)
	vs, err = src.Verdicts(rctx, 0)
	stored, _ := st.Verdicts(ctx, 0)
	if err != nil || len(vs) != 3 || len(stored) != 3 || vs[1].State != reporting.StateDegraded || stored[1].State != reporting.StateDegraded {
		t.Errorf("after the store took the batches: %+v (store: %+v), want the same three", vs, stored)
	}
	if n := notes.String(); n != "" {
		t.Errorf("note after recovery: %q, want none", n)
	}
}
