package alerting

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
)

// recorded is one request a recorder received.
type recorded struct {
	Path   string
	Header http.Header
	Body   []byte
}

// recorder is a local HTTP receiver that records requests and answers
// failStatus to the first failN of them, 2xx afterwards.
type recorder struct {
	srv        *httptest.Server
	mu         sync.Mutex
	reqs       []recorded
	failN      int
	failStatus int
	okStatus   int
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{failStatus: http.StatusInternalServerError, okStatus: http.StatusOK}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{Path: req.URL.Path, Header: req.Header.Clone(), Body: b})
		fail := r.failN > 0
		if fail {
			r.failN--
		}
		status := r.okStatus
		if fail {
			status = r.failStatus
		}
		r.mu.Unlock()
		w.WriteHeader(status)
		if fail {
			_, _ = w.Write([]byte("try later"))
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) failNext(n, status int) {
	r.mu.Lock()
	r.failN, r.failStatus = n, status
	r.mu.Unlock()
}

func (r *recorder) all() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// webhooks decodes every recorded request as a WebhookPayload.
func (r *recorder) webhooks(t *testing.T) []WebhookPayload {
	t.Helper()
	var out []WebhookPayload
	for _, rec := range r.all() {
		var p WebhookPayload
		if err := json.Unmarshal(rec.Body, &p); err != nil {
			t.Fatalf("webhook body: %v: %s", err, rec.Body)
		}
		out = append(out, p)
	}
	return out
}

// harness drives an Alerter over a memStore with a fake clock.
type harness struct {
	t     *testing.T
	clock *fakeClock
	store *memStore
	hook  *recorder
	reg   *prometheus.Registry
	a     *Alerter
	// regions publish on every tick with these states
	interval time.Duration
	// unknownInterval publishes verdicts without their interval (0, as
	// from a store that lacks it), so the burn-rate windows count only
	// the runs they hold (no expected-runs floor, counts.expected): for
	// tests built on a few runs' error ratios.
	unknownInterval bool
}

// base time: a Monday, 10:00 UTC.
var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, start time.Time, cfg Config, slos []SLO) *harness {
	t.Helper()
	h := &harness{t: t, clock: &fakeClock{t: start}, hook: newRecorder(t), reg: prometheus.NewRegistry(),
		interval: 15 * time.Second}
	h.store = &memStore{clock: h.clock.Now}
	cfg.Receivers = append(cfg.Receivers, Receiver{Name: "ops", Webhook: &WebhookConfig{URL: Secret(h.hook.srv.URL + "/hook")}})
	if cfg.Retry.Backoff == 0 {
		cfg.Retry.Backoff = 5 * time.Millisecond
	}
	a, err := New(cfg, slos, h.store, Options{Now: h.clock.Now, Registry: h.reg,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	h.a = a
	return h
}

// verdict builds one run's verdict.
func verdict(check, target, region string, at time.Time, state reporting.State, interval time.Duration) reporting.Verdict {
	ok := state == reporting.StateHealthy
	v := reporting.Verdict{Check: check, Target: target, Region: region, Vantage: region + "-1", State: state, OK: ok,
		At: at, Expires: at.Add(3 * interval), Interval: interval, TTFB: 120 * time.Millisecond}
	if !ok {
		v.Cause, v.Err, v.TTFB = "connect_refused", "dial tcp 10.0.0.1:443: connection refused", 0
	}
	return v
}

// tick advances the clock by the harness interval, publishes one verdict
// per region (check asset, target origin-a unless given) and evaluates.
func (h *harness) tick(states map[string]reporting.State) {
	h.t.Helper()
	now := h.clock.Add(h.interval)
	for region, st := range states {
		v := verdict("asset", "origin-a", region, now.Add(-time.Second), st, h.interval)
		if h.unknownInterval {
			v.Interval = 0
		}
		h.store.add(v)
	}
	h.eval()
}

// eval evaluates once and waits for the deliveries.
func (h *harness) eval() {
	h.t.Helper()
	if err := h.a.Evaluate(context.Background()); err != nil {
		h.t.Fatalf("Evaluate at %s: %v", h.clock.Now().Format(time.TimeOnly), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.a.Flush(ctx); err != nil {
		h.t.Fatalf("Flush: %v", err)
	}
}

// counter reads a metric's value from the registry (-1 when absent).
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	return -1
}
