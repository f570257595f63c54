package alerting

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// blockingStore holds the next Verdicts read until release is closed, so a
// silence can be POSTed while an evaluation reads the store.
type blockingStore struct {
	*memStore
	block   chan struct{}
	entered chan struct{}
}

func (s *blockingStore) Verdicts(ctx context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	if b := s.block; b != nil {
		s.block = nil
		close(s.entered)
		<-b
	}
	return s.memStore.Verdicts(ctx, maxAge)
}

// TestSilenceDuringEvaluation: a silence POSTed while an evaluation reads
// the store holds against that evaluation. An alert the evaluation fires is
// not notified after the POST was answered, one already firing stays
// silenced, and the history has no "unsilenced" entry dated before the
// silence and lists its entries newest first, also when the evaluation's
// entries are dated before the silence's.
func TestSilenceDuringEvaluation(t *testing.T) {
	for _, alreadyFiring := range []bool{false, true} {
		name := "fires in the evaluation"
		if alreadyFiring {
			name = "already firing"
		}
		t.Run(name, func(t *testing.T) {
			var st *blockingStore
			r := newSilenceRig(t, func(r *silenceRig) {
				st = &blockingStore{memStore: r.st}
				r.src = st
			})
			r.st.add(verdict("asset", "origin-a", "eu", t0, reporting.StateUnhealthy, 15*time.Second))
			notifiedBefore := 0
			if alreadyFiring {
				r.evaluate()
				notifiedBefore = len(r.hook.webhooks(t))
				if notifiedBefore != 1 {
					t.Fatalf("%d notifications before the silence, want 1", notifiedBefore)
				}
				r.clock.Add(time.Second)
				// origin-b fires in the evaluation that runs during the
				// POST: its entry, dated at that evaluation's start, comes
				// before the POST's "silenced origin-a".
				r.st.add(verdict("asset", "origin-b", "eu", r.clock.Now(), reporting.StateUnhealthy, 15*time.Second))
			}
			release := make(chan struct{})
			st.block, st.entered = release, make(chan struct{})
			done := make(chan error, 1)
			go func() { done <- r.a.Evaluate(context.Background()) }()
			<-st.entered // the evaluation has its time and reads the store
			r.clock.Add(500 * time.Millisecond)
			if code, body := r.call("POST", "/api/v1/silences", `{"check":"asset","for":"1h","by":"alice","why":"deploy"}`); code != http.StatusCreated {
				t.Fatalf("POST: %d %s", code, body)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			r.flush()
			if got := r.hook.webhooks(t); len(got) != notifiedBefore {
				t.Errorf("%d notifications after the silence was answered 201, want none", len(got)-notifiedBefore)
			}
			for _, al := range r.a.Active() {
				if al.Silenced == "" {
					t.Errorf("after the evaluation that ran during the POST: %s %s not silenced", al.Rule, al.Target)
				}
			}
			h := r.a.History("", 0)
			for i, e := range h {
				if e.Event == EventUnsilenced {
					t.Errorf("history has %s %s at %s: the silence was never lifted", e.Event, e.Target, e.At)
				}
				if i > 0 && e.At.After(h[i-1].At) {
					t.Errorf("history not newest first: %s %s at %s after %s %s at %s", h[i-1].Event, h[i-1].Target, h[i-1].At, e.Event, e.Target, e.At)
				}
			}
		})
	}
}
