package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// certValid writes a self-signed certificate for names valid from a day
// before now to notAfter, and its key; it returns their paths.
func certValid(t *testing.T, notAfter time.Time, names ...string) (certFile, keyFile string) {
	t.Helper()
	tmpl := serverCertTemplate(names[0])
	tmpl.DNSNames = names
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-48*time.Hour), notAfter
	certFile, keyFile, _ = writeSelfSigned(t, tmpl, newECKey(t))
	return certFile, keyFile
}

// TestCertExpiryWarnings: a certificate of the TLS listener that has
// expired, or expires within 14 days, is a config warning (vigil validate,
// and the WARN lines vigil logs at start and at every reload) naming the
// key, the file, the subject and names and the date; a later one is none.
// An expired cert_file used to pass validate silently while every client
// refused it.
func TestCertExpiryWarnings(t *testing.T) {
	past := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	soon := time.Now().Add(5*24*time.Hour + time.Hour).Truncate(time.Second)
	expiredCert, expiredKey := certValid(t, past, "www.example.test")
	soonCert, soonKey := certValid(t, soon, "api.example.test", "api2.example.test")
	laterCert, laterKey := certValid(t, time.Now().Add(90*24*time.Hour), "later.example.test")

	cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", expiredCert, expiredKey
	cfg.Certs = []CertPair{{laterCert, laterKey}, {soonCert, soonKey}}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	ws := strings.Join(cfg.Warnings(), "\n")
	for _, want := range []string{
		"cert_file: " + expiredCert + `: certificate "CN=www.example.test" (www.example.test) expired ` + past.UTC().Format(time.RFC3339) + ": clients refuse it",
		"certs[1].cert_file: " + soonCert + `: certificate "CN=api.example.test" (api.example.test,api2.example.test) expires ` + soon.UTC().Format(time.RFC3339) + ", in 5 days",
	} {
		if !strings.Contains(ws, want) {
			t.Errorf("warnings:\n%s\nwant a line with %q", ws, want)
		}
	}
	if strings.Contains(ws, laterCert) {
		t.Errorf("a certificate valid for 90 days was warned about:\n%s", ws)
	}
}

// TestServedCertExpiry: the running TLS listener reports a served
// certificate that has expired (CertReport's error: /healthz answers 503
// with it) and one that expires within 14 days (a warning), exports each
// certificate's expiry in vigil_proxy_certificate_expiry_timestamp_seconds
// {file, names}, and keeps both right when a renewed file is taken from
// disk (with a WARN line if the new one expires soon too) and when a reload
// serves another file (its old series gone).
func TestServedCertExpiry(t *testing.T) {
	past := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	certFile, keyFile := certValid(t, past, "www.example.test")
	cfg := pool1(PolicyFirst, newBackend(t, "a").srv.URL)
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	logs := &tryLogs{}
	h := &harness{t: t, reg: prometheus.NewRegistry()}
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(logs, nil)), WithRegistry(h.reg))
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	const name = "vigil_proxy_certificate_expiry_timestamp_seconds"
	if _, ok := h.metric(name, nil); ok {
		t.Errorf("%s before the TLS listener runs", name)
	}
	if ws, err := p.CertReport(); ws != nil || err != nil {
		t.Errorf("CertReport before the TLS listener runs: %q %v", ws, err)
	}
	tlsAddr := runProxyOn(t, p, 2)[1]

	// What curl met: the served certificate has expired.
	if c, err := tls.Dial("tcp", tlsAddr, &tls.Config{ServerName: "www.example.test", RootCAs: x509.NewCertPool()}); err == nil {
		c.Close()
		t.Fatal("handshake with an expired certificate succeeded")
	}
	ws, err := p.CertReport()
	want := "tls: cert_file " + certFile + `: certificate "CN=www.example.test" (www.example.test) expired ` + past.UTC().Format(time.RFC3339)
	if err == nil || !strings.HasPrefix(err.Error(), want) || len(ws) != 0 {
		t.Errorf("expired cert_file: CertReport %q, %v; want no warning and an error starting %q", ws, err, want)
	}
	if v, ok := h.metric(name, map[string]string{"file": certFile, "names": "www.example.test"}); !ok || int64(v) != past.Unix() {
		t.Errorf("%s{file=%q}: %v %v, want %d", name, certFile, v, ok, past.Unix())
	}

	// Renewed in place, by a certificate that expires in 3 days: taken
	// at the next look at the files (every 10 s, forced here).
	soon := time.Now().Add(3*24*time.Hour + time.Hour).Truncate(time.Second)
	newCert, newKey := certValid(t, soon, "www.example.test", "example.test")
	for _, f := range [][2]string{{newCert, certFile}, {newKey, keyFile}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	recheck := func() {
		s := p.tlsCerts.Load()
		s.mu.Lock()
		s.checked = time.Time{}
		s.mu.Unlock()
	}
	recheck()
	if v, ok := h.metric(name, map[string]string{"file": certFile, "names": "www.example.test,example.test"}); !ok || int64(v) != soon.Unix() {
		t.Errorf("after the renewal: %s %v %v, want %d", name, v, ok, soon.Unix())
	}
	if _, ok := h.metric(name, map[string]string{"names": "www.example.test"}); ok {
		t.Errorf("after the renewal: the old certificate's series is still exported")
	}
	ws, err = p.CertReport()
	if err != nil || len(ws) != 1 || !strings.Contains(ws[0], "tls: cert_file "+certFile+`: certificate "CN=www.example.test" (www.example.test,example.test) expires `+soon.UTC().Format(time.RFC3339)+", in 3 days") {
		t.Errorf("renewed, expiring in 3 days: CertReport %q, %v; want one warning", ws, err)
	}
	if got := logs.lines("level=WARN", "expires "+soon.UTC().Format(time.RFC3339), "cert_file="+certFile); len(got) != 1 {
		t.Errorf("WARN lines for the renewed certificate expiring in 3 days: %q\nlog:\n%s", got, logs.String())
	}

	// A reload onto another, long-lived file.
	goodCert, goodKey := certValid(t, time.Now().Add(90*24*time.Hour), "www.example.test")
	next := p.state.Load().cfg
	next.CertFile, next.KeyFile = goodCert, goodKey
	if err := p.Reload(next); err != nil {
		t.Fatal(err)
	}
	if ws, err := p.CertReport(); len(ws) != 0 || err != nil {
		t.Errorf("after the reload onto a certificate valid 90 days: %q %v", ws, err)
	}
	if _, ok := h.metric(name, map[string]string{"file": certFile}); ok {
		t.Errorf("after the reload: the old file's series is still exported")
	}
	if _, ok := h.metric(name, map[string]string{"file": goodCert}); !ok {
		t.Errorf("after the reload: no series for %s", goodCert)
	}
}

// TestCertExpiryWatch: a served certificate that enters the 14-day window
// while the listener runs, and one that expires, each get their WARN line
// once, at the instant it happens, with no reload and no new file (there
// used to be only the metric and /healthz); looking again says nothing new.
func TestCertExpiryWatch(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	// cert_file enters the window, certs[0] expires, 3 s from now.
	enters := now.Add(certExpiryWarn + 3*time.Second)
	expires := now.Add(3 * time.Second)
	entersCert, entersKey := certValid(t, enters, "www.example.test")
	expiresCert, expiresKey := certValid(t, expires, "api.example.test")
	cfg := pool1(PolicyFirst, newBackend(t, "a").srv.URL)
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", entersCert, entersKey
	cfg.Certs = []CertPair{{expiresCert, expiresKey}}
	logs := &tryLogs{}
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(logs, nil)), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	runProxyOn(t, p, 2)

	entering := func() []string {
		return logs.lines("level=WARN", `certificate \"CN=www.example.test\" (www.example.test) expires `+enters.UTC().Format(time.RFC3339)+", in 14 days", "cert_file="+entersCert)
	}
	expired := func() []string {
		return logs.lines("level=WARN", `certificate \"CN=api.example.test\" (api.example.test) expired `+expires.UTC().Format(time.RFC3339)+": clients refuse it", "cert_file="+expiresCert)
	}
	if n := len(entering()) + len(expired()); n != 0 {
		t.Fatalf("expiry lines before either line was crossed:\n%s", logs.String())
	}
	// The watch's own period is an hour: only its timer for the instant
	// can log these within the test.
	deadline := time.Now().Add(10 * time.Second)
	for (len(entering()) == 0 || len(expired()) == 0) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(entering()) != 1 || len(expired()) != 1 {
		t.Fatalf("want one WARN line for the certificate entering the 14-day window and one for the expired one; log:\n%s", logs.String())
	}
	if late := time.Since(expires); late > 2*time.Second {
		t.Errorf("the lines came %s after the instant", late)
	}
	// Woken again (as by a reload or the hourly look), it says nothing new.
	for range 5 {
		p.certWake <- struct{}{}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if len(entering()) != 1 || len(expired()) != 1 {
		t.Errorf("the lines were repeated; log:\n%s", logs.String())
	}
}

// The time left is rounded to the nearest day or hour: a certificate that
// has just entered the 14-day window is "in 14 days".
func TestDaysLeftRounds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{certExpiryWarn - time.Second, "14 days"},
		{13*24*time.Hour + 11*time.Hour, "13 days"},
		{36 * time.Hour, "2 days"},
		{35 * time.Hour, "1 day"},
		{24 * time.Hour, "1 day"},
		{23*time.Hour + 40*time.Minute, "1 day"},
		{5*time.Hour + 20*time.Minute, "5 hours"},
		{70 * time.Minute, "1 hour"},
		{10 * time.Minute, "under an hour"},
	} {
		if got := daysLeft(c.d); got != c.want {
			t.Errorf("daysLeft(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
