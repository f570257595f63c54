package alerting

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestFailureClearsWhenNothingIsOwed: two webhook receivers refuse every
// connection, one routed the asset check's alerts, the other the api
// check's; a third, routed the asset check's alerts too, rejects them
// (400). Both checks go down; every delivery fails and every receiver is
// reported failing (/healthz, the status page). The asset alerts resolve
// before their receivers accepted them: they are sent nothing about them
// (they never accepted the page), so nothing is left to send them and,
// for the refusing one, nothing would ever tell vigil it is back. Its
// failure is no longer reported from that evaluation on, and one log line
// says what it missed; it was reported failing for as long as
// repeat_interval (4h) before. The rejecting one stays reported: it will
// reject the next page too. The api receiver still owes its firing page
// and stays failing. The failures stay counted in
// vigil_alert_notifications_total, and a new alert to the refusing asset
// receiver reports it failing again.
func TestFailureClearsWhenNothingIsOwed(t *testing.T) {
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	logs := &checktest.SyncBuffer{}
	reg := prometheus.NewRegistry()
	bad := newRecorder(t)
	bad.failNext(1<<30, http.StatusBadRequest)
	cfg := Config{
		Down:    DownRule{For: time.Second},
		DeadMan: DeadManRule{Disabled: true},
		Retry:   RetryConfig{Attempts: 2, Backoff: 5 * time.Millisecond, Timeout: 2 * time.Second},
		Receivers: []Receiver{
			{Name: "asset-hook", Checks: []string{"asset"}, Webhook: &WebhookConfig{URL: Secret(deadURL(t) + "/hook")}},
			{Name: "asset-bad", Checks: []string{"asset"}, Webhook: &WebhookConfig{URL: Secret(bad.srv.URL + "/hook")}},
			{Name: "api-hook", Checks: []string{"api"}, Webhook: &WebhookConfig{URL: Secret(deadURL(t) + "/hook")}},
		},
	}
	a, err := New(cfg, nil, store, Options{Now: clock.Now, Registry: reg, Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	// step advances 15s, publishes one eu verdict per check × target,
	// evaluates and waits for the deliveries.
	step := func(asset, api reporting.State) {
		t.Helper()
		now := clock.Add(15 * time.Second)
		for _, tg := range []string{"origin-a", "origin-b"} {
			store.add(verdict("asset", tg, "eu", now.Add(-time.Second), asset, 15*time.Second))
		}
		store.add(verdict("api", "origin-a", "eu", now.Add(-time.Second), api, 15*time.Second))
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	down, up := reporting.StateUnhealthy, reporting.StateHealthy
	failures := func(receiver string) float64 {
		return counter(t, reg, "vigil_alert_notifications_total", map[string]string{"receiver": receiver, "result": ResultFailure})
	}

	step(down, down) // pending
	step(down, down) // firing: both pages fail
	step(down, down) // redelivered after retry.redeliver_backoff (10s): fail again
	if n := len(a.Active()); n != 3 {
		t.Fatalf("%d alerts firing, want 3: %+v", n, a.Active())
	}
	f := a.DeliveryFailures()
	for name, want := range map[string]string{"asset-hook": "connection refused", "api-hook": "connection refused",
		"asset-bad": "status 400"} {
		if !strings.Contains(f[name], want) {
			t.Fatalf("DeliveryFailures[%s] = %q, want %s", name, f[name], want)
		}
		if got := failures(name); got != 2 {
			t.Fatalf("%s: %v failed deliveries counted, want 2", name, got)
		}
	}

	step(up, down) // the asset alerts resolve, unaccepted: nothing is owed to asset-hook
	if n := len(a.Active()); n != 1 {
		t.Fatalf("%d alerts firing, want the api one: %+v", n, a.Active())
	}
	f = a.DeliveryFailures()
	if e, ok := f["asset-hook"]; ok {
		t.Fatalf("asset-hook is still reported failing (%q) although nothing is left to send it: /healthz stays 503 until repeat_interval", e)
	}
	if !strings.Contains(f["api-hook"], "connection refused") {
		t.Fatalf("api-hook still owes its page and is not reported failing: %v", f)
	}
	if !strings.Contains(f["asset-bad"], "status 400") {
		t.Fatalf("asset-bad rejected every page and is no longer reported failing: %v", f)
	}
	line := regexp.MustCompile(`(?m)^.*msg="alerting: receiver no longer reported failing.*receiver=asset-hook.*$`).FindString(logs.String())
	if line == "" {
		t.Fatalf("no log line saying asset-hook is no longer reported failing:\n%s", logs)
	}
	for _, want := range []string{
		"failures=2", "failing_since=" + t0.Add(30*time.Second).Format(time.RFC3339),
		"last_failure=" + t0.Add(45*time.Second).Format(time.RFC3339),
		"missed_alerts=2", `missed="down on asset/origin-a, down on asset/origin-b"`, "connection refused",
	} {
		if !strings.Contains(line, want) {
			t.Fatalf("the line lacks %s:\n%s", want, line)
		}
	}
	if got := failures("asset-hook"); got != 2 {
		t.Fatalf("asset-hook: failure counter %v after the clear, want 2 (the failures happened)", got)
	}

	step(up, down)
	step(up, down)
	if e, ok := a.DeliveryFailures()["asset-hook"]; ok {
		t.Fatalf("asset-hook reported failing again (%q) with nothing sent to it", e)
	}
	if f := a.DeliveryFailures(); !strings.Contains(f["api-hook"], "connection refused") || !strings.Contains(f["asset-bad"], "status 400") {
		t.Fatalf("api-hook (its page owed) or asset-bad (rejecting) no longer reported failing: %v", f)
	}
	if n := strings.Count(logs.String(), `msg="alerting: receiver no longer reported failing`); n != 1 {
		t.Fatalf("%d no-longer-failing lines, want 1:\n%s", n, logs)
	}

	step(down, down) // asset down again
	step(down, down) // fires: its delivery fails
	if !strings.Contains(a.DeliveryFailures()["asset-hook"], "connection refused") {
		t.Fatalf("a new page to the still refusing asset-hook failed and it is not reported failing: %v", a.DeliveryFailures())
	}
	// A new run of failures: logged at once, not as "still failing".
	if n := regexp.MustCompile(`msg="alerting: delivery failed" receiver=asset-hook`).FindAllString(logs.String(), -1); len(n) != 2 {
		t.Fatalf("%d delivery-failed lines for asset-hook, want 2 (one per run):\n%s", len(n), logs)
	}
}

// TestStreamReceiverStaysFailingWhileSent: an Alertmanager that refuses
// connections is sent the firing alert on every evaluation, then its
// resolve until it accepts it: something is always left to send it, so
// it is reported failing after every evaluation, never cleared in
// between (/healthz would flap).
func TestStreamReceiverStaysFailingWhileSent(t *testing.T) {
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	cfg := Config{
		Down:      DownRule{For: time.Second},
		DeadMan:   DeadManRule{Disabled: true},
		Retry:     RetryConfig{Attempts: 1, Timeout: 2 * time.Second},
		Receivers: []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: deadURL(t)}}},
	}
	a, err := New(cfg, nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	for i, st := range []reporting.State{reporting.StateUnhealthy, reporting.StateUnhealthy, reporting.StateUnhealthy,
		reporting.StateUnhealthy, reporting.StateHealthy, reporting.StateHealthy, reporting.StateHealthy} {
		now := clock.Add(15 * time.Second)
		store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), st, 15*time.Second))
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := a.Flush(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			continue // pending: nothing sent yet
		}
		if f := a.DeliveryFailures()["am"]; !strings.Contains(f, "connection refused") {
			t.Fatalf("evaluation %d: DeliveryFailures[am] = %q, want connection refused", i, f)
		}
	}
}
