package main

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/tlsclient/tlstest"
)

// TestVerdictsFromCAReload: the --verdicts-from-ca file is read again at a
// config reload. A canary whose certificate moves to a new private CA is
// a failing source (unknown authority) until the file holds the new CA and
// the config reloads; then its verdicts are read again, without a restart.
// A reload while the file holds no certificate is rejected, naming the
// flag, and the CA in force stays.
func TestVerdictsFromCAReload(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	oldCA, newCA := tlstest.New(t), tlstest.New(t)
	var cert atomic.Pointer[tls.Certificate]
	cert.Store(&oldCA.ServerConfig(false).Certificates[0])
	var served atomic.Int64
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert.Load(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		now := time.Now()
		_ = json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "healthz", Target: "a", Region: "r1", Vantage: "v1",
			State: reporting.StateHealthy, OK: true, At: now, Expires: now.Add(time.Minute)}})
	}), ErrorLog: log.New(io.Discard, "", 0)}
	// Every read is a new handshake, as after the canary restarts with
	// its new certificate.
	srv.SetKeepAlivesEnabled(false)
	go srv.Serve(ln)
	defer srv.Close()
	canaryURL := "https://" + ln.Addr().String()

	caFile := t.TempDir() + "/verdicts-ca.pem"
	copyFile := func(from string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(caFile, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(oldCA.CAFile)
	tr, err := newCATransport(caFile)
	if err != nil {
		t.Fatal(err)
	}
	a, stop := startAppWith(t, proxyOnlyConfig(t, o.URL()), appOptions{roles: roles{proxy: true},
		verdictsFrom: []string{canaryURL}, verdictsTransport: tr})
	defer stop()
	health := func() string {
		if err := a.prx.VerdictHealth(); err != nil {
			return err.Error()
		}
		return ""
	}
	waitFor(t, 10*time.Second, "verdicts read under the old CA", func() bool { return served.Load() >= 3 && health() == "" })

	cert.Store(&newCA.ServerConfig(false).Certificates[0])
	waitFor(t, 10*time.Second, "the canary failing under the new CA", func() bool {
		return strings.Contains(health(), "certificate signed by unknown authority")
	})

	// A broken file: the reload is rejected, the old CA stays.
	if err := os.WriteFile(caFile, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a.reload()
	a.mu.Lock()
	rerr := a.reloadErr
	a.mu.Unlock()
	if rerr == nil || !strings.Contains(rerr.Error(), "--verdicts-from-ca: "+caFile+": no PEM certificate found") {
		t.Fatalf("reload with a broken CA file: %v, want it rejected naming --verdicts-from-ca and the file", rerr)
	}

	copyFile(newCA.CAFile)
	a.reload()
	a.mu.Lock()
	rerr = a.reloadErr
	a.mu.Unlock()
	if rerr != nil {
		t.Fatalf("reload with the new CA: %v", rerr)
	}
	n := served.Load()
	waitFor(t, 10*time.Second, "verdicts read again under the new CA", func() bool { return served.Load() >= n+3 && health() == "" })
}
