package alerting

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
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
			const token = "admin-token-0123456789"
			clock := &fakeClock{t: t0}
			ms := &memStore{clock: clock.Now}
			st := &blockingStore{memStore: ms}
			hook := newRecorder(t)
			cfg := Config{EvaluationInterval: time.Hour, Down: DownRule{For: 0}, DeadMan: DeadManRule{Disabled: true},
				QuorumLost: QuorumLostRule{Disabled: true}, Retry: RetryConfig{Backoff: 5 * time.Millisecond},
				Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}}}}
			cfg.SetKeys([]string{"down.for"})
			a, err := New(cfg, nil, st, Options{Now: clock.Now, StatePath: filepath.Join(t.TempDir(), "alerts.json"),
				Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = a.Close(context.Background()) })
			srv := httptest.NewServer(a.SilencesHandler(func() string { return token }))
			defer srv.Close()
			ms.add(verdict("asset", "origin-a", "eu", t0, reporting.StateUnhealthy, 15*time.Second))
			notifiedBefore := 0
			if alreadyFiring {
				if err := a.Evaluate(context.Background()); err != nil {
					t.Fatal(err)
				}
				fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = a.Flush(fctx)
				fcancel()
				notifiedBefore = len(hook.webhooks(t))
				if notifiedBefore != 1 {
					t.Fatalf("%d notifications before the silence, want 1", notifiedBefore)
				}
				clock.Add(time.Second)
				// origin-b fires in the evaluation that runs during the
				// POST: its entry, dated at that evaluation's start, comes
				// before the POST's "silenced origin-a".
				ms.add(verdict("asset", "origin-b", "eu", clock.Now(), reporting.StateUnhealthy, 15*time.Second))
			}
			release := make(chan struct{})
			st.block, st.entered = release, make(chan struct{})
			done := make(chan error, 1)
			go func() { done <- a.Evaluate(context.Background()) }()
			<-st.entered // the evaluation has its time and reads the store
			clock.Add(500 * time.Millisecond)
			req, _ := http.NewRequest("POST", srv.URL+"/api/v1/silences", strings.NewReader(`{"check":"asset","for":"1h","by":"alice","why":"deploy"}`))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("POST: %d", resp.StatusCode)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = a.Flush(fctx)
			fcancel()
			if got := hook.webhooks(t); len(got) != notifiedBefore {
				t.Errorf("%d notifications after the silence was answered 201, want none", len(got)-notifiedBefore)
			}
			for _, al := range a.Active() {
				if al.Silenced == "" {
					t.Errorf("after the evaluation that ran during the POST: %s %s not silenced", al.Rule, al.Target)
				}
			}
			h := a.History("", 0)
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
