package alerting

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestDeadManDaily: a check run once a day (dead_man.intervals 3: a 3-day
// window, pending 2 days) fires once it has been silent for 5 days, although
// the window and pending period are past dead_man.forget_after (24h): the
// pair is forgotten after DeadManForgetFor (twice the window and pending
// period: 10 days), not before its alert can fire. A check run every 10s and silent for longer
// than forget_after is still forgotten at 24h.
func TestDeadManDaily(t *testing.T) {
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	hook := newRecorder(t)
	cfg := Config{Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL)}}}}
	a, err := New(cfg, nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	const day = 24 * time.Hour
	store.add(verdict("nightly", "origin-a", "eu", clock.Now(), H, day))
	store.add(verdict("api", "origin-a", "eu", clock.Now(), H, 10*time.Second))
	// When each check's dead-man alert first fired and first resolved,
	// as its silence.
	fired, resolved := map[string]time.Duration{}, map[string]time.Duration{}
	seen := 0
	// Every 30 minutes for 11 days.
	for i := 1; i <= 11*48; i++ {
		clock.Add(30 * time.Minute)
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		silent := time.Duration(i) * 30 * time.Minute
		ps := hook.webhooks(t)
		for _, p := range ps[seen:] {
			for _, al := range p.Alerts {
				m := fired
				if al.Status == "resolved" {
					m = resolved
				}
				if _, ok := m[al.Check]; !ok && p.Rule == RuleDeadMan {
					m[al.Check] = silent
				}
			}
		}
		seen = len(ps)
	}
	if fired["nightly"] != 5*day+30*time.Minute || resolved["nightly"] != 10*day+30*time.Minute {
		t.Errorf("nightly (daily): fired after %s of silence, resolved after %s; want 5d0h30m (window 3d + pending 2d) and 10d0h30m (forgotten)",
			fired["nightly"], resolved["nightly"])
	}
	if fired["api"] != time.Hour || resolved["api"] != day+30*time.Minute {
		t.Errorf("api (every 10s): fired after %s of silence, resolved after %s; want 1h (the first evaluations past its window and pending period) and 24h30m (forget_after)",
			fired["api"], resolved["api"])
	}
}
