package alerting

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// blipHook is a webhook receiver on 127.0.0.1 that answers 500 until
// recoverAt, then 200, and records the status of every notification it
// accepted.
type blipHook struct {
	srv       *httptest.Server
	mu        sync.Mutex
	recoverAt time.Time
	refused   int
	accepted  []WebhookPayload
}

func newBlipHook(t *testing.T, down time.Duration) *blipHook {
	h := &blipHook{recoverAt: time.Now().Add(down)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		if time.Now().Before(h.recoverAt) {
			h.refused++
			http.Error(w, "receiver down", http.StatusInternalServerError)
			return
		}
		var p WebhookPayload
		if err := json.Unmarshal(b, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.accepted = append(h.accepted, p)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *blipHook) got() (refused int, accepted []WebhookPayload) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused, append([]WebhookPayload(nil), h.accepted...)
}

// runBlip starts an Alerter (real clock, 1s evaluations) whose only
// receiver is hook, with a short redelivery backoff; it returns the
// Alerter and a function publishing one verdict of asset × origin-a.
func runBlip(t *testing.T, hook *blipHook) (*Alerter, func(reporting.State)) {
	t.Helper()
	store := &memStore{clock: time.Now}
	publish := func(st reporting.State) {
		now := time.Now()
		v := verdict("asset", "origin-a", "eu", now, st, time.Hour)
		store.add(v)
	}
	publish(reporting.StateUnhealthy)
	cfg := Config{
		EvaluationInterval: time.Second,
		RepeatInterval:     4 * time.Hour,
		Down:               DownRule{For: time.Second},
		DeadMan:            DeadManRule{Disabled: true},
		Retry: RetryConfig{Attempts: 2, Backoff: 100 * time.Millisecond, Timeout: time.Second,
			RedeliverBackoff: 300 * time.Millisecond, RedeliverMaxBackoff: time.Second},
		Receivers: []Receiver{{Name: "hook", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}}},
	}
	a, err := New(cfg, nil, store, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer ccancel()
		_ = a.Close(cctx)
	})
	return a, publish
}

// waitFor polls cond every 50ms for up to limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", limit, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPageDeliveredAfterReceiverRecovers: the receiver answers 500 for
// the first 3 seconds, so the page fails through all its attempts. Once
// the receiver works again the page reaches it within seconds (not
// repeat_interval, 4h), exactly once, and the delivery failure reported by
// /healthz clears.
func TestPageDeliveredAfterReceiverRecovers(t *testing.T) {
	hook := newBlipHook(t, 3*time.Second)
	a, _ := runBlip(t, hook)

	waitFor(t, 5*time.Second, "no delivery failure reported while the receiver is down", func() bool {
		return strings.Contains(a.DeliveryFailures()["hook"], "status 500")
	})
	if refused, acc := hook.got(); refused == 0 || len(acc) != 0 {
		t.Fatalf("while down: refused %d, accepted %d", refused, len(acc))
	}
	waitFor(t, 8*time.Second, "the page never reached the recovered receiver", func() bool {
		_, acc := hook.got()
		return len(acc) > 0
	})
	time.Sleep(1500 * time.Millisecond) // more evaluations: nothing else is due
	_, acc := hook.got()
	if len(acc) != 1 || acc[0].Status != StatusFiring || len(acc[0].Alerts) != 1 || acc[0].Alerts[0].Rule != RuleDown {
		t.Fatalf("receiver accepted %+v, want the down page once", acc)
	}
	if f := a.DeliveryFailures(); len(f) != 0 {
		t.Fatalf("delivery failure still reported after the page was accepted: %v", f)
	}
}

// TestResolveOfUndeliveredPageNotSentAlone: the page fires and resolves
// while the receiver is down. When the receiver is back it is not sent a
// "resolved" for a page it never saw firing: it gets nothing.
func TestResolveOfUndeliveredPageNotSentAlone(t *testing.T) {
	hook := newBlipHook(t, 4*time.Second)
	a, publish := runBlip(t, hook)

	waitFor(t, 5*time.Second, "the page did not fire", func() bool { return len(a.Active()) == 1 })
	waitFor(t, 5*time.Second, "no delivery failure reported while the receiver is down", func() bool {
		return a.DeliveryFailures()["hook"] != ""
	})
	publish(reporting.StateHealthy)
	waitFor(t, 5*time.Second, "the page did not resolve", func() bool { return len(a.Active()) == 0 })
	// The receiver recovers at 4s; give it 3 more seconds of evaluations.
	time.Sleep(time.Until(hook.recoverAt) + 3*time.Second)
	if _, acc := hook.got(); len(acc) != 0 {
		t.Fatalf("receiver accepted %+v, want nothing (its only news would be a resolve for a page it never got)", acc)
	}
}
