package canary

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// recorder is an origin that keeps the requests it receives.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
	// certs counts TLS connections that presented a client certificate.
	certs int
}

func (o *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reqs = append(o.reqs, r.Clone(r.Context()))
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		o.certs++
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("got " + r.URL.RequestURI() + "\n"))
}

func (o *recorder) seen() []*http.Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*http.Request(nil), o.reqs...)
}

// writeClientCert writes a self-signed client certificate and its key
// under dir and returns their paths.
func writeClientCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vigil-probe-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestProbeCredentialsStayWithTheirTargets: a module that sends
// credentials (a sensitive header, a header holding a ${NAME} value,
// basic_auth, a sensitive json field, a client certificate) probes only
// its own targets' scheme, host and port; any other target is a 400
// naming the module and the keys, and the other origin receives nothing.
// A module without credentials probes any allowed target, as before.
func TestProbeCredentialsStayWithTheirTargets(t *testing.T) {
	const (
		envTok = "envtok_Zq81Jx4Lm0Pa" // as ${API_TOKEN} expands
		fooVal = "fooSecretValue9876"  // as ${FOO_VAL} expands
	)
	own, foreign, ownTLS, foreignTLS := &recorder{}, &recorder{}, &recorder{}, &recorder{}
	ownSrv := httptest.NewServer(own)
	defer ownSrv.Close()
	foreignSrv := httptest.NewServer(foreign)
	defer foreignSrv.Close()
	ownTLSSrv := httptest.NewUnstartedServer(ownTLS)
	ownTLSSrv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	ownTLSSrv.StartTLS()
	defer ownTLSSrv.Close()
	foreignTLSSrv := httptest.NewUnstartedServer(foreignTLS)
	foreignTLSSrv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	foreignTLSSrv.StartTLS()
	defer foreignTLSSrv.Close()
	certFile, keyFile := writeClientCert(t, t.TempDir())

	mod := func(name, target string, h checks.HTTPSpec) CheckConfig {
		h.TLS.InsecureSkipVerify = true
		return CheckConfig{Name: name, Targets: []string{target}, Disabled: true, Timeout: 5 * time.Second,
			HTTP: &h, Expect: &checks.Expect{Status: checks.StatusList{"2xx"}}}
	}
	cfg := &Config{
		Agent:    AgentConfig{Region: "test-region", Vantage: "v1", Concurrency: 16, AdminToken: probeToken, Probe: allowLoopback()},
		Defaults: Defaults{Interval: time.Hour, Jitter: pct(0)},
		Targets: []TargetConfig{{Name: "own", URL: ownSrv.URL}, {Name: "own-tls", URL: ownTLSSrv.URL},
			{Name: "foreign", URL: foreignSrv.URL}},
		Checks: []CheckConfig{
			mod("http_2xx", "own", checks.HTTPSpec{Headers: map[string]string{"Authorization": "Bearer " + envTok, "X-Foo": fooVal}}),
			mod("env_header", "own", checks.HTTPSpec{Headers: map[string]string{"X-Foo": fooVal}}),
			mod("basic", "own", checks.HTTPSpec{BasicAuth: &checks.BasicAuth{Username: "bob", Password: "BasicPw-4242"}}),
			mod("json_pw", "own", checks.HTTPSpec{Method: "POST", JSON: map[string]any{"user": map[string]any{"name": "bob", "password": "Pw7"}}}),
			mod("https_tok", "own-tls", checks.HTTPSpec{Headers: map[string]string{"Authorization": "Bearer " + envTok}}),
			mod("mtls", "own-tls", checks.HTTPSpec{TLS: checks.TLSOptions{CertFile: certFile, KeyFile: keyFile}}),
			mod("plain", "own", checks.HTTPSpec{Headers: map[string]string{"Accept": "text/plain"}}),
		},
	}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatalf("config: %v", err)
	}
	// The redactor as the agent builds it: ${NAME} values and the
	// config's literal credentials.
	var red checks.Redactor
	red.Add(envTok)
	red.Add(fooVal)
	for _, s := range cfg.Secrets() {
		red.Add(s)
	}
	c := start(t, cfg, compile(t, cfg), Options{Sink: &memSink{}, PublishEvery: 10 * time.Millisecond, Redact: red.Redact})
	mux := http.NewServeMux()
	mux.Handle("GET /probe", c.ProbeHandler("test"))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ownHostPort := strings.TrimPrefix(ownSrv.URL, "http://")
	ownTLSHostPort := strings.TrimPrefix(ownTLSSrv.URL, "https://")

	for _, tc := range []struct {
		module, target string
		want           []string // in the 400; none: the probe runs
	}{
		{"http_2xx", foreignSrv.URL + "/other", []string{`module "http_2xx": it sends credentials (http.headers.Authorization, http.headers.X-Foo)`,
			"own targets (" + ownSrv.URL + ")", `target "` + foreignSrv.URL + `" is not one of them`}},
		{"env_header", foreignSrv.URL, []string{`module "env_header": it sends credentials (http.headers.X-Foo)`}},
		{"basic", foreignSrv.URL, []string{`module "basic": it sends credentials (http.basic_auth)`}},
		{"json_pw", foreignSrv.URL, []string{`module "json_pw": it sends credentials (http.json.user.password)`}},
		// The module's own host and port, in clear instead of over TLS.
		{"https_tok", "http://" + ownTLSHostPort + "/", []string{`module "https_tok": it sends credentials (http.headers.Authorization)`,
			"own targets (" + ownTLSSrv.URL + ")"}},
		{"mtls", foreignTLSSrv.URL, []string{`module "mtls": it sends credentials (http.tls.cert_file)`}},
		// Its own origin, at any path, with or without the scheme.
		{"http_2xx", ownSrv.URL + "/other?x=1", nil},
		{"http_2xx", ownHostPort + "/again", nil},
		{"https_tok", "https://" + ownTLSHostPort + "/", nil},
		{"mtls", ownTLSSrv.URL, nil},
		{"plain", foreignSrv.URL + "/open", nil},
	} {
		code, _, body := probeGet(t, srv.URL, tc.module, tc.target, probeToken, nil)
		if tc.want == nil {
			if code != 200 || gaugeOf(t, parseProbe(t, body), "probe_success", nil) != 1 {
				t.Errorf("%s → %s: %d, want a passing probe:\n%s", tc.module, tc.target, code, body)
			}
			continue
		}
		if code != http.StatusBadRequest {
			t.Errorf("%s → %s: %d, want 400:\n%s", tc.module, tc.target, code, body)
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s → %s: the answer lacks %q:\n%s", tc.module, tc.target, w, body)
			}
		}
		for _, leak := range []string{envTok, fooVal, "BasicPw-4242"} {
			if strings.Contains(body, leak) {
				t.Errorf("%s → %s: the answer shows %q", tc.module, tc.target, leak)
			}
		}
	}

	if n := len(foreign.seen()); n != 1 {
		t.Errorf("the foreign origin received %d requests, want 1 (the module without credentials)", n)
	}
	for _, r := range foreign.seen() {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Foo") != "" {
			t.Errorf("the foreign origin received credentials: %v", r.Header)
		}
	}
	if n := len(foreignTLS.seen()); n != 0 {
		t.Errorf("the foreign TLS origin received %d requests, want 0", n)
	}
	var auths []string
	for _, r := range own.seen() {
		auths = append(auths, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Foo"))
	}
	if want := "Bearer " + envTok + "|" + fooVal; len(auths) != 2 || auths[0] != want || auths[1] != want {
		t.Errorf("the module's own origin received %q, want its credentials twice", auths)
	}
	ownTLS.mu.Lock()
	certs := ownTLS.certs
	ownTLS.mu.Unlock()
	if certs != 1 {
		t.Errorf("the module's own TLS origin saw %d client certificates, want 1", certs)
	}
}
