package alerting

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// gateHook is a webhook receiver on 127.0.0.1 whose first request waits
// until the test releases it (so a delivery is in flight for as long as the
// test needs) and whose answers answer decides, request by request.
type gateHook struct {
	srv     *httptest.Server
	arrived chan struct{} // closed when the first request arrives
	release chan struct{} // closed by the test: the first request is answered
	mu      sync.Mutex
	// answer returns the status for request i (0-based) carrying p.
	answer   func(i int, p WebhookPayload) int
	reqs     []WebhookPayload
	accepted []WebhookPayload
}

func newGateHook(t *testing.T, answer func(i int, p WebhookPayload) int) *gateHook {
	h := &gateHook{arrived: make(chan struct{}), release: make(chan struct{}), answer: answer}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var p WebhookPayload
		if err := json.Unmarshal(b, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		i := len(h.reqs)
		h.reqs = append(h.reqs, p)
		h.mu.Unlock()
		if i == 0 {
			close(h.arrived)
			select {
			case <-h.release:
			case <-req.Context().Done():
				return
			case <-time.After(10 * time.Second):
			}
		}
		h.mu.Lock()
		status := h.answer(i, p)
		if status/100 == 2 {
			h.accepted = append(h.accepted, p)
		}
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		h.srv.Close()
	})
	return h
}

func (h *gateHook) got() (reqs, accepted []WebhookPayload) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]WebhookPayload(nil), h.reqs...), append([]WebhookPayload(nil), h.accepted...)
}

// heldRig is an Alerter on a fake clock whose only receiver is a gateHook;
// retries wait 20ms (real time).
type heldRig struct {
	t     *testing.T
	clock *fakeClock
	store *memStore
	hook  *gateHook
	a     *Alerter
}

func newHeldRig(t *testing.T, answer func(i int, p WebhookPayload) int) *heldRig {
	clock := &fakeClock{t: t0}
	return newHeldRigOn(t, clock, &memStore{clock: clock.Now}, "", answer)
}

// newHeldRigOn is newHeldRig on a given clock and store, with the
// alerter's state saved at statePath ("": none).
func newHeldRigOn(t *testing.T, clock *fakeClock, store *memStore, statePath string,
	answer func(i int, p WebhookPayload) int) *heldRig {
	t.Helper()
	r := &heldRig{t: t, clock: clock, store: store, hook: newGateHook(t, answer)}
	cfg := Config{
		Down:    DownRule{For: time.Second},
		DeadMan: DeadManRule{Disabled: true},
		Retry: RetryConfig{Attempts: 2, Backoff: 20 * time.Millisecond, Timeout: 15 * time.Second,
			RedeliverBackoff: 2 * time.Second},
		Receivers: []Receiver{{Name: "w", Webhook: &WebhookConfig{URL: Secret(r.hook.srv.URL + "/hook")}}},
	}
	a, err := New(cfg, nil, r.store, Options{Now: r.clock.Now, StatePath: statePath,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	r.a = a
	return r
}

// step advances the clock 15s, publishes one eu verdict per target and
// evaluates, without waiting for the deliveries.
func (r *heldRig) step(states map[string]reporting.State) {
	r.t.Helper()
	now := r.clock.Add(15 * time.Second)
	for target, st := range states {
		r.store.add(verdict("asset", target, "eu", now.Add(-time.Second), st, 15*time.Second))
	}
	if err := r.a.Evaluate(context.Background()); err != nil {
		r.t.Fatal(err)
	}
}

// fireInFlight makes the down alerts of targets fire and returns once the
// receiver holds the page's first attempt.
func (r *heldRig) fireInFlight(targets ...string) {
	r.t.Helper()
	st := map[string]reporting.State{}
	for _, tg := range targets {
		st[tg] = U
	}
	r.step(st) // pending
	r.step(st) // firing: the page is queued
	select {
	case <-r.hook.arrived:
	case <-time.After(10 * time.Second):
		r.t.Fatal("the page never reached the receiver")
	}
}

// flush releases the receiver's first request and waits for every
// delivery.
func (r *heldRig) flush() {
	r.t.Helper()
	select {
	case <-r.hook.release:
	default:
		close(r.hook.release)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.a.Flush(ctx); err != nil {
		r.t.Fatal(err)
	}
}

func titles(ps []WebhookPayload) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Title
	}
	return out
}

// TestResolveWithdrawnWhenPageFailsForGood: the page is in flight (its
// first attempt held at the receiver) when the alert resolves, so its
// resolve is queued behind it. The receiver refuses both attempts of the
// page and accepts everything after: it must not be sent the resolve of a
// page it never accepted, then or at any later evaluation. Its failure is
// reported until an evaluation finds nothing left to send it.
func TestResolveWithdrawnWhenPageFailsForGood(t *testing.T) {
	r := newHeldRig(t, func(i int, p WebhookPayload) int {
		if i < 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	r.fireInFlight("a")
	r.step(map[string]reporting.State{"a": H}) // resolves while the page is in flight
	if n := len(r.a.Active()); n != 0 {
		t.Fatalf("%d alerts still firing after the origin healed", n)
	}
	r.flush()
	if f := r.a.DeliveryFailures()["w"]; !strings.Contains(f, "503") {
		t.Fatalf("delivery failure of the page not reported: %q", f)
	}
	for i := 0; i < 3; i++ { // later evaluations, past retry.redeliver_backoff
		r.step(map[string]reporting.State{"a": H})
		r.flush()
	}
	reqs, acc := r.hook.got()
	if len(acc) != 0 {
		t.Fatalf("receiver accepted %q, want nothing: it never accepted the page", titles(acc))
	}
	if len(reqs) != 2 || reqs[0].Status != StatusFiring || reqs[1].Status != StatusFiring {
		t.Fatalf("receiver got %q, want the page's 2 attempts only", titles(reqs))
	}
	if f, ok := r.a.DeliveryFailures()["w"]; ok {
		t.Fatalf("delivery failure still reported with nothing left to send: %q", f)
	}
}

// TestHeldResolveSentWhenPageAccepted: same, but the receiver accepts the
// page's second attempt: the resolve queued behind it is delivered, and
// retried when its first attempt fails.
func TestHeldResolveSentWhenPageAccepted(t *testing.T) {
	r := newHeldRig(t, func(i int, p WebhookPayload) int {
		if i == 0 || i == 2 { // the page's first attempt, the resolve's first
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	r.fireInFlight("a")
	r.step(map[string]reporting.State{"a": H})
	r.flush()
	reqs, acc := r.hook.got()
	if len(acc) != 2 || acc[0].Status != StatusFiring || acc[1].Status != StatusResolved ||
		acc[1].Title != "[RESOLVED] VigilCheckDown asset (page)" || len(reqs) != 4 {
		t.Fatalf("receiver got %q, accepted %q; want the page, then its resolve (each on its second attempt)",
			titles(reqs), titles(acc))
	}
}

// TestWithdrawnResolveLeavesFiringPart: a and b page together; a resolves
// while that page is in flight, so the next notification lists b firing
// and a resolved. The page fails for good: that notification goes out with
// b only, its title and text rebuilt without a's resolve.
func TestWithdrawnResolveLeavesFiringPart(t *testing.T) {
	r := newHeldRig(t, func(i int, p WebhookPayload) int {
		if i < 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	r.fireInFlight("a", "b")
	r.step(map[string]reporting.State{"a": H, "b": U})
	r.flush()
	_, acc := r.hook.got()
	if len(acc) != 1 {
		t.Fatalf("receiver accepted %q, want one notification", titles(acc))
	}
	p := acc[0]
	if p.Status != StatusFiring || p.Title != "[FIRING:1] VigilCheckDown asset (page)" || len(p.Alerts) != 1 ||
		p.Alerts[0].Target != "b" || p.Alerts[0].Status != StatusFiring || strings.Contains(p.Text, "resolved") {
		t.Fatalf("receiver accepted %+v, want b firing only (a was never accepted as firing)", p)
	}
}

// TestHeldResolveNotSentAfterCrash: the state file saved while the page is
// in flight and its resolve on hold is what a crashed process leaves. An
// alerter started from it (the page lost with the crash: never accepted)
// does not send the resolve.
func TestHeldResolveNotSentAfterCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "alerts.json")
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	r := newHeldRigOn(t, clock, store, path, func(i int, p WebhookPayload) int { return http.StatusServiceUnavailable })
	r.fireInFlight("a")
	r.step(map[string]reporting.State{"a": H})
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(dir, "crashed.json")
	if err := os.WriteFile(crashed, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	r.flush()

	r2 := newHeldRigOn(t, clock, store, crashed, func(i int, p WebhookPayload) int { return http.StatusOK })
	close(r2.hook.release)
	for i := 0; i < 2; i++ {
		r2.step(map[string]reporting.State{"a": H})
		r2.flush()
	}
	if reqs, _ := r2.hook.got(); len(reqs) != 0 {
		t.Fatalf("after the restart the receiver got %q, want nothing: it never accepted the page", titles(reqs))
	}
}
