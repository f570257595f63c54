package alerting

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// runOnce starts an Alerter on cfg, runs it for one evaluation and returns
// what it logged at INFO and above.
func runOnce(t *testing.T, cfg Config) string {
	t.Helper()
	var buf bytes.Buffer
	a, err := New(cfg, nil, &memStore{clock: time.Now}, Options{Log: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a.Run(ctx) // evaluates once, then sees ctx done
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	if err := a.Close(cctx); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

const notifyNobody = "alerts are evaluated and shown on the status page and GET /api/v1/alerts, and notify nobody"

// TestNoReceiversLogsInfoOnce: an alerter with no alerting section (no
// receivers, nothing set) says once, at INFO, that its alerts notify
// nobody; one whose written section has no receiver is told by the config
// warning instead, and one with a receiver says nothing of it.
func TestNoReceiversLogsInfoOnce(t *testing.T) {
	out := runOnce(t, Config{})
	if n := strings.Count(out, notifyNobody); n != 1 || !strings.Contains(out, "level=INFO") ||
		!strings.Contains(out, "alerting.receivers") {
		t.Fatalf("no alerting section: log %q, want one INFO line saying alerts notify nobody", out)
	}

	written := Config{EvaluationInterval: time.Second}
	written.SetKeys([]string{"evaluation_interval"})
	if err := written.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(written.Warnings(), "\n"); !strings.Contains(w, "receivers: none") {
		t.Fatalf("alerting section without receivers: warnings %q, want receivers: none", w)
	}
	if out := runOnce(t, written); strings.Contains(out, notifyNobody) {
		t.Fatalf("alerting section without receivers: log %q, want only the config warning", out)
	}

	hook := newRecorder(t)
	withHook := Config{Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL)}}}}
	if out := runOnce(t, withHook); strings.Contains(out, "notify nobody") {
		t.Fatalf("with a receiver: log %q", out)
	}
}
