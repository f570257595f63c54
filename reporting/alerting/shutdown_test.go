package alerting

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// deadURL is a local address nothing listens on: listen, then close.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestCloseBoundedWhileReceiverFails is the `vigil alerter` shutdown with
// a webhook and an Alertmanager that cannot take deliveries, with the
// default retry settings (5 tries, 1s backoff doubling, 10s per request:
// about 15s of retries per notification). Close, given the 15s the
// command gives it, must return within the close grace (2s), log one line
// per failing receiver with the count, and still deliver to a healthy
// receiver.
func TestCloseBoundedWhileReceiverFails(t *testing.T) {
	cases := []struct {
		name string
		url  func(t *testing.T) (string, func() int)
	}{
		{"connection refused", func(t *testing.T) (string, func() int) {
			return deadURL(t), func() int { return 1 }
		}},
		{"status 500", func(t *testing.T) (string, func() int) {
			r := newRecorder(t)
			r.failNext(1<<30, http.StatusInternalServerError)
			return r.srv.URL, func() int { return len(r.all()) }
		}},
		{"hanging", func(t *testing.T) (string, func() int) {
			block := make(chan struct{})
			var mu sync.Mutex
			n := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				mu.Lock()
				n++
				mu.Unlock()
				select {
				case <-block:
				case <-req.Context().Done():
				}
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(block) }) // runs before srv.Close
			return srv.URL, func() int { mu.Lock(); defer mu.Unlock(); return n }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			badURL, hits := tc.url(t)
			ok := newRecorder(t)
			logs := &checktest.SyncBuffer{}
			clock := &fakeClock{t: t0}
			store := &memStore{clock: clock.Now}
			a, err := New(Config{Down: DownRule{For: time.Second}, Receivers: []Receiver{
				{Name: "hook", Webhook: &WebhookConfig{URL: Secret(badURL + "/hook")}},
				{Name: "am", Alertmanager: &AlertmanagerConfig{URL: badURL}},
				{Name: "ok", Webhook: &WebhookConfig{URL: Secret(ok.srv.URL + "/hook")}},
			}}, nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			// Two targets fire, then one resolves: hook gets a firing and
			// a resolved-in-firing notification, am a stream per evaluation.
			for _, st := range []map[string]reporting.State{
				{"a": U, "b": U}, {"a": U, "b": U}, {"a": U, "b": H},
			} {
				now := clock.Add(15 * time.Second)
				for target, s := range st {
					store.add(verdict("asset", target, "eu", now.Add(-time.Second), s, 15*time.Second))
				}
				if err := a.Evaluate(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			// Let the first attempts reach the failing receiver.
			for deadline := time.Now().Add(5 * time.Second); hits() == 0 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)

			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			start := time.Now()
			err = a.Close(ctx)
			took := time.Since(start)
			if took > 5*time.Second {
				t.Fatalf("Close took %s with a failing receiver; want about 2s at most", took)
			}
			if err == nil || !strings.Contains(err.Error(), "notifications not delivered") {
				t.Errorf("Close error = %v, want the count of undelivered notifications", err)
			}
			out := logs.String()
			for _, name := range []string{"hook", "am"} {
				re := regexp.MustCompile(`msg="alerting: notifications not delivered at shutdown" receiver=` + name + ` count=([0-9]+) `)
				m := re.FindAllStringSubmatch(out, -1)
				if len(m) != 1 || m[0][1] == "0" {
					t.Errorf("receiver %s: want one shutdown line with a count, got %d:\n%s", name, len(m), out)
				}
			}
			if strings.Contains(out, "receiver=ok count=") {
				t.Errorf("healthy receiver logged as undelivered:\n%s", out)
			}
			if n := strings.Count(out, `msg="alerting: delivery failed"`); n != 0 {
				t.Errorf("%d per-notification failure lines, want the per-receiver summary only:\n%s", n, out)
			}
			if got := ok.webhooks(t); len(got) != 2 {
				t.Errorf("healthy receiver got %d notifications, want 2 (firing, then the change)", len(got))
			}
		})
	}
}

// TestCloseDeliversQueued: on close, notifications still queued for a
// healthy (if slow) receiver get their attempt instead of being dropped.
func TestCloseDeliversQueued(t *testing.T) {
	r := newRecorder(t)
	inner := r.srv.Config.Handler
	r.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		time.Sleep(100 * time.Millisecond)
		inner.ServeHTTP(w, req)
	})
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	a, err := New(Config{Down: DownRule{For: time.Second},
		Receivers: []Receiver{{Name: "slow", Webhook: &WebhookConfig{URL: Secret(r.srv.URL)}}}},
		nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	states := []reporting.State{U, U, H, U, U, H}
	for _, st := range states {
		now := clock.Add(15 * time.Second)
		store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), st, 15*time.Second))
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var statuses []string
	for _, p := range r.webhooks(t) {
		statuses = append(statuses, p.Status)
	}
	if got := strings.Join(statuses, ","); got != "firing,resolved,firing,resolved" {
		t.Fatalf("delivered %q, want firing,resolved,firing,resolved", got)
	}
}

// TestDrainRetries: drain (for a dispatcher a reload replaced) still gives
// queued deliveries their full retries before closing.
func TestDrainRetries(t *testing.T) {
	r := newRecorder(t)
	r.failNext(2, http.StatusServiceUnavailable)
	cfg := Config{Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(r.srv.URL)}}},
		Retry: RetryConfig{Backoff: 10 * time.Millisecond}}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(cfg, &http.Client{}, slog.New(slog.NewTextHandler(io.Discard, nil)), m, nil, nil, nil, nil, nil)
	d.sendTo(d.worker("ops"), Notification{GroupKey: "down/asset/page", Status: StatusFiring, Severity: SeverityPage, At: t0}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.drain(ctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if n := len(r.all()); n != 3 {
		t.Fatalf("%d requests, want 3 (two 503s, then the delivery)", n)
	}
}
