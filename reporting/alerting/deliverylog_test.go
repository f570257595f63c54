package alerting

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestDeliveryFailuresRateLimited: while an Alertmanager answers 503,
// every evaluation's delivery fails; the log says so once, then at most
// once a minute with how many failed and were not logged, and once when
// deliveries work again (it logged a WARN per evaluation). The metrics
// and the failure kept for /healthz still count every one.
func TestDeliveryFailuresRateLimited(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer am.Close()
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	logs := &checktest.SyncBuffer{}
	cfg := Config{Down: DownRule{For: time.Second}, DeadMan: DeadManRule{Disabled: true},
		Retry:     RetryConfig{Attempts: 1},
		Receivers: []Receiver{{Name: "am", Alertmanager: &AlertmanagerConfig{URL: am.URL}}}}
	reg := prometheus.NewRegistry()
	a, err := New(cfg, nil, store, Options{Now: clock.Now, Registry: reg, Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	eval := func() {
		t.Helper()
		now := clock.Add(15 * time.Second)
		store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), reporting.StateUnhealthy, 15*time.Second))
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	count := func(msg string) int { return strings.Count(logs.String(), `msg="alerting: `+msg+`"`) }
	for range 4 { // 45s: the alert fires at the 2nd evaluation, 3 deliveries fail
		eval()
	}
	if n := count("delivery failed"); n != 1 || count("delivery still failing") != 0 {
		t.Fatalf("3 failed deliveries within a minute: %d WARN lines, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "receiver=am") || !strings.Contains(logs.String(), "status 503") {
		t.Fatalf("the line names neither the receiver nor the error:\n%s", logs)
	}
	if f := a.DeliveryFailures()["am"]; !strings.Contains(f, "status 503") {
		t.Fatalf("DeliveryFailures: %q", f)
	}
	for range 4 { // at 60s after the first failure: one line with the count
		eval()
	}
	if n := count("delivery still failing"); n != 1 {
		t.Fatalf("a minute on: %d still-failing lines, want 1:\n%s", n, logs)
	}
	if !regexp.MustCompile(`delivery still failing".* failures=5 suppressed=3 failing_for=1m0s`).MatchString(logs.String()) {
		t.Fatalf("still-failing line lacks failures=5 suppressed=3 failing_for=1m0s:\n%s", logs)
	}
	if got := counter(t, reg, "vigil_alert_notifications_total", map[string]string{"receiver": "am", "result": "failure"}); got != 7 {
		t.Fatalf("failure counter %v, want 7 (every delivery)", got)
	}
	down.Store(false)
	eval()
	if n := count("deliveries work again"); n != 1 || !strings.Contains(logs.String(), "failures=7") {
		t.Fatalf("after recovery: %d works-again lines:\n%s", n, logs)
	}
	if f, ok := a.DeliveryFailures()["am"]; ok {
		t.Fatalf("DeliveryFailures after recovery: %q", f)
	}
	down.Store(true)
	eval()
	if n := count("delivery failed"); n != 2 {
		t.Fatalf("a new run of failures: %d delivery-failed lines, want 2:\n%s", n, logs)
	}
}
