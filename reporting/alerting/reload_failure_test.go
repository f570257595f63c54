package alerting

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/tlsclient"
	"github.com/vigil-synthetics/vigil/reporting/tlsclient/tlstest"
)

// TestReloadKeepsDeliveryFailure: a webhook receiver on a closed port and
// one that rejects every page (400) fail the delivery of a firing alert.
// A reload of the same config (a SIGHUP for an unrelated change) keeps
// both reported failing (/healthz, the status page) — it used to clear
// them until the next failed delivery, hiding a broken pager for as long
// as repeat_interval — and keeps the rejection: once the alert resolves
// the refusing receiver is owed nothing and stops being reported, with
// its run of failures from before the reloads, while the rejecting one
// stays reported. A reload that points the refusing receiver at a working
// URL starts it clean, says so in the log, and the page it still owed
// goes to the new URL; removing the rejecting one forgets its failure.
func TestReloadKeepsDeliveryFailure(t *testing.T) {
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	logs := &checktest.SyncBuffer{}
	bad := newRecorder(t)
	bad.failNext(1<<30, http.StatusBadRequest)
	good := newRecorder(t)
	dead := deadURL(t) + "/hook"
	mk := func(hookURL string, withBad bool) Config {
		cfg := Config{
			Down:    DownRule{For: time.Second},
			DeadMan: DeadManRule{Disabled: true},
			Retry:   RetryConfig{Attempts: 2, Backoff: 5 * time.Millisecond, Timeout: 2 * time.Second},
			Receivers: []Receiver{
				{Name: "hook", Webhook: &WebhookConfig{URL: Secret(hookURL), Headers: map[string]Secret{"X-Key": "k1"}}},
			},
		}
		if withBad {
			cfg.Receivers = append(cfg.Receivers, Receiver{Name: "bad", Webhook: &WebhookConfig{URL: Secret(bad.srv.URL + "/hook")}})
		}
		return cfg
	}
	a, err := New(mk(dead, true), nil, store, Options{Now: clock.Now, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	step := func(st reporting.State) {
		t.Helper()
		now := clock.Add(15 * time.Second)
		store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), st, 15*time.Second))
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	reload := func(cfg Config) {
		t.Helper()
		if err := a.Reload(cfg, nil); err != nil {
			t.Fatal(err)
		}
	}
	failing := func(when string, want map[string]string) {
		t.Helper()
		f := a.DeliveryFailures()
		for name, w := range want {
			if !strings.Contains(f[name], w) {
				t.Fatalf("%s: DeliveryFailures[%s] = %q, want %q (all: %v)", when, name, f[name], w, f)
			}
		}
		for name := range f {
			if _, ok := want[name]; !ok {
				t.Fatalf("%s: %s reported failing (%q), want it not", when, name, f[name])
			}
		}
	}
	down, up := reporting.StateUnhealthy, reporting.StateHealthy

	step(down) // pending
	step(down) // firing: both deliveries fail
	failing("after the page failed", map[string]string{"hook": "connection refused", "bad": "status 400"})

	reload(mk(dead, true))
	failing("after a reload of the same config", map[string]string{"hook": "connection refused", "bad": "status 400"})
	step(down) // the page redelivered to hook on the new workers: fails again
	failing("after a redelivery", map[string]string{"hook": "connection refused", "bad": "status 400"})
	reload(mk(dead, true))
	failing("after a second reload", map[string]string{"hook": "connection refused", "bad": "status 400"})
	if strings.Contains(logs.String(), "by the reload") {
		t.Fatalf("a reload that changed no receiver logged a change:\n%s", logs)
	}

	step(up) // resolves, never accepted: nothing is owed to either
	failing("after the alert resolved", map[string]string{"bad": "status 400"})
	line := regexp.MustCompile(`(?m)^.*msg="alerting: receiver no longer reported failing.*receiver=hook.*$`).FindString(logs.String())
	for _, want := range []string{"failures=2", "failing_since=" + t0.Add(30*time.Second).Format(time.RFC3339),
		"last_failure=" + t0.Add(45*time.Second).Format(time.RFC3339), "missed_alerts=1"} {
		if !strings.Contains(line, want) {
			t.Fatalf("the no-longer-failing line of hook lacks %s (its run from before the reloads):\n%s", want, logs)
		}
	}

	step(down) // down again
	step(down) // fires: hook fails
	failing("after the second page failed", map[string]string{"hook": "connection refused", "bad": "status 400"})
	reload(mk(good.srv.URL+"/hook", true))
	failing("after hook's URL changed", map[string]string{"bad": "status 400"})
	line = regexp.MustCompile(`(?m)^.*msg="alerting: receiver's delivery settings changed by the reload.*$`).FindString(logs.String())
	for _, want := range []string{"receiver=hook", "failures=1", "missed_alerts=0", "connection refused"} {
		if !strings.Contains(line, want) {
			t.Fatalf("no line at the reload saying hook's failure is no longer reported, with %s:\n%s", want, logs)
		}
	}
	step(down) // the page it still owes goes to the new URL
	failing("after the redelivery to the new URL", map[string]string{"bad": "status 400"})
	if ps := good.webhooks(t); len(ps) != 1 || ps[0].Status != StatusFiring {
		t.Fatalf("the new URL got %d notifications, want the owed page: %+v", len(ps), ps)
	}

	reload(mk(good.srv.URL+"/hook", false))
	failing("after bad was removed", nil)
	if !regexp.MustCompile(`msg="alerting: receiver removed by the reload.*receiver=bad.*status 400`).MatchString(logs.String()) {
		t.Fatalf("no line saying the failing receiver bad was removed:\n%s", logs)
	}
}

// TestReloadKeepsFailureOfDeliveryInFlight: a page is in flight to a
// receiver (held at its end) when a reload of the same config comes; the
// old worker finishes it after the reload and it fails (503). The failure
// is reported: the reload's new worker shares the receiver's failure.
func TestReloadKeepsFailureOfDeliveryInFlight(t *testing.T) {
	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	cfg := func() Config {
		return Config{
			Down:      DownRule{For: time.Second},
			DeadMan:   DeadManRule{Disabled: true},
			Retry:     RetryConfig{Attempts: 1, Timeout: 15 * time.Second},
			Receivers: []Receiver{{Name: "hook", Webhook: &WebhookConfig{URL: Secret(srv.URL + "/hook")}}},
		}
	}
	a, err := New(cfg(), nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	for range 2 { // pending, then firing: the page goes out
		now := clock.Add(15 * time.Second)
		store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), reporting.StateUnhealthy, 15*time.Second))
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the page never reached the receiver")
	}
	if err := a.Reload(cfg(), nil); err != nil {
		t.Fatal(err)
	}
	release <- struct{}{}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(a.DeliveryFailures()["hook"], "503") {
		if time.Now().After(deadline) {
			t.Fatalf("the page in flight at the reload failed and hook is not reported failing: %v", a.DeliveryFailures())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSameDelivery: what counts as the same receiver across a reload. Its
// filters may change; its kind, URL, headers, routing key, channel and
// tls settings, the contents of its CA and client-certificate files
// included, may not.
func TestSameDelivery(t *testing.T) {
	ca := tlstest.New(t)
	load := func(r Receiver) Receiver {
		t.Helper()
		if err := r.TLS.Load(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	hook := func(url string, h map[string]Secret) Receiver {
		return Receiver{Name: "r", Webhook: &WebhookConfig{URL: Secret(url), Headers: h}}
	}
	base := hook("https://h.example/x", map[string]Secret{"A": "1"})
	mtls := func() Receiver {
		r := base
		r.TLS = tlsclient.Config{CAFile: ca.CAFile, CertFile: ca.ClientCertFile, KeyFile: ca.ClientKeyFile}
		return load(r)
	}
	filtered := base
	filtered.Severities, filtered.Checks = []string{"page"}, []string{"x-*"}
	renamed := base
	renamed.Name = "s"
	for _, tc := range []struct {
		name string
		a, b Receiver
		same bool
	}{
		{"identical", base, hook("https://h.example/x", map[string]Secret{"A": "1"}), true},
		{"filters changed", base, filtered, true},
		{"no headers, nil or empty", hook("https://h.example/x", nil), hook("https://h.example/x", map[string]Secret{}), true},
		{"url", base, hook("https://h.example/y", map[string]Secret{"A": "1"}), false},
		{"header value", base, hook("https://h.example/x", map[string]Secret{"A": "2"}), false},
		{"name", base, renamed, false},
		{"kind", base, Receiver{Name: "r", Slack: &SlackConfig{URL: "https://h.example/x"}}, false},
		{"slack channel", Receiver{Name: "r", Slack: &SlackConfig{URL: "u", Channel: "#a"}},
			Receiver{Name: "r", Slack: &SlackConfig{URL: "u", Channel: "#b"}}, false},
		{"routing key", Receiver{Name: "r", PagerDuty: &PagerDutyConfig{RoutingKey: "k1", URL: "u"}},
			Receiver{Name: "r", PagerDuty: &PagerDutyConfig{RoutingKey: "k2", URL: "u"}}, false},
		{"alertmanager", Receiver{Name: "r", Alertmanager: &AlertmanagerConfig{URL: "http://a"}},
			Receiver{Name: "r", Alertmanager: &AlertmanagerConfig{URL: "http://a"}}, true},
		{"tls added", base, mtls(), false},
		{"tls same files", mtls(), mtls(), true},
	} {
		if got := sameDelivery(tc.a, tc.b); got != tc.same {
			t.Errorf("%s: sameDelivery = %v, want %v", tc.name, got, tc.same)
		}
	}

	// A client certificate rewritten in place (rotated) is a change.
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(ca.ClientCertFile, cert)
	copyFile(ca.ClientKeyFile, key)
	before := base
	before.TLS = tlsclient.Config{CertFile: cert, KeyFile: key}
	before = load(before)
	other := tlstest.New(t)
	copyFile(other.ClientCertFile, cert)
	copyFile(other.ClientKeyFile, key)
	after := base
	after.TLS = tlsclient.Config{CertFile: cert, KeyFile: key}
	after = load(after)
	if sameDelivery(before, after) {
		t.Error("client certificate rewritten in place: sameDelivery = true, want false")
	}
}
