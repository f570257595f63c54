package alerting

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/tlsclient"
	"github.com/vigil-synthetics/vigil/reporting/tlsclient/tlstest"
)

// TestReceiverTLS: receivers posting to https servers whose certificates
// a private CA signed. Without tls.ca_file the delivery fails with the
// unknown-authority error; with it the webhook and Alertmanager (which
// also asks for a client certificate: tls.cert_file/key_file) get the
// alert.
func TestReceiverTLS(t *testing.T) {
	ca := tlstest.New(t)
	var hooks, ams atomic.Int32
	hook := ca.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hooks.Add(1)
	}), false)
	am := ca.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/api/v2/alerts" && r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			ams.Add(1)
		}
	}), true)

	clock := &fakeClock{t: t0}
	store := &memStore{clock: clock.Now}
	cfg := Config{
		Down:  DownRule{For: time.Second},
		Retry: RetryConfig{Attempts: 1, Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{
			{Name: "wh", Webhook: &WebhookConfig{URL: Secret(hook.URL + "/hook")}},
			{Name: "wh-ca", Webhook: &WebhookConfig{URL: Secret(hook.URL + "/hook")}, TLS: tlsclient.Config{CAFile: ca.CAFile}},
			{Name: "am-nocert", Alertmanager: &AlertmanagerConfig{URL: am.URL}, TLS: tlsclient.Config{CAFile: ca.CAFile}},
			{Name: "am-mtls", Alertmanager: &AlertmanagerConfig{URL: am.URL},
				TLS: tlsclient.Config{CAFile: ca.CAFile, CertFile: ca.ClientCertFile, KeyFile: ca.ClientKeyFile}},
		},
	}
	logs := &strings.Builder{}
	a, err := New(cfg, nil, store, Options{Now: clock.Now, Registry: prometheus.NewRegistry(),
		Log: slog.New(slog.NewTextHandler(lockedWriter{logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	for range 3 { // pending, then firing
		now := clock.Add(15 * time.Second)
		store.add(verdict("asset", "origin-a", "eu", now.Add(-time.Second), reporting.StateUnhealthy, 15*time.Second))
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	fails := a.DeliveryFailures()
	if f := fails["wh"]; !strings.Contains(f, "certificate signed by unknown authority") {
		t.Errorf("receiver wh (no ca_file): failure %q, want the unknown-authority error", f)
	}
	if f, ok := fails["wh-ca"]; ok {
		t.Errorf("receiver wh-ca (ca_file): failure %q, want delivered", f)
	}
	if f := fails["am-nocert"]; f == "" {
		t.Errorf("receiver am-nocert (no client certificate): delivered to a server that requires one")
	}
	if f, ok := fails["am-mtls"]; ok {
		t.Errorf("receiver am-mtls (ca_file + client certificate): failure %q, want delivered", f)
	}
	if n := hooks.Load(); n != 1 {
		t.Errorf("webhook server got %d posts, want 1 (from wh-ca)", n)
	}
	if n := ams.Load(); n == 0 {
		t.Errorf("alertmanager got no post with a client certificate")
	}
}

// TestReceiverTLSConfig: a bad receivers[].tls key is an error naming the
// key and the file; insecure_skip_verify is a warning.
func TestReceiverTLSConfig(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Receivers: []Receiver{
		{Name: "a", Webhook: &WebhookConfig{URL: "https://hooks.internal/x"}, TLS: tlsclient.Config{CAFile: notPEM}},
		{Name: "b", Alertmanager: &AlertmanagerConfig{URL: "http://am.internal:9093"}, TLS: tlsclient.Config{CAFile: notPEM}},
		{Name: "c", Slack: &SlackConfig{URL: "https://hooks.internal/y"}, TLS: tlsclient.Config{KeyFile: notPEM}},
	}}
	err := cfg.ValidateAndSetDefaults()
	for _, want := range []string{
		"receivers[0].tls.ca_file: " + notPEM + ": no PEM certificate found",
		"receivers[1].tls: set, but the receiver's url is http",
		"receivers[2].tls.cert_file: required with key_file",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to hold %q", err, want)
		}
	}
	cfg = Config{Receivers: []Receiver{
		{Name: "a", PagerDuty: &PagerDutyConfig{RoutingKey: "k"}, TLS: tlsclient.Config{InsecureSkipVerify: true}},
	}}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(cfg.Warnings(), "\n"); !strings.Contains(w, "receivers[0].tls.insecure_skip_verify: true: certificates are not verified") {
		t.Fatalf("warnings = %q", w)
	}
}
