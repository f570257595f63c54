package checks_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// clientCA is a CA that issues client certificates.
type clientCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newClientCA(t *testing.T, cn string) *clientCA {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &clientCA{cert: c, key: k}
}

// issue writes a client certificate and its key as PEM files in dir and
// returns their paths.
func (ca *clientCA) issue(t *testing.T, dir, cn string) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
	write := func(f, typ string, b []byte) {
		if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(certFile, "CERTIFICATE", der)
	write(keyFile, "PRIVATE KEY", kb)
	return certFile, keyFile
}

// mtlsServer is an HTTPS server that requires a client certificate issued
// by ca, speaking TLS up to maxVersion.
func mtlsServer(t *testing.T, ca *clientCA, maxVersion uint16) *httptest.Server {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MaxVersion: maxVersion}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestClientCertificate: with tls.cert_file and tls.key_file an http check
// (and cert_file/key_file a tls check) passes against a server that
// requires a client certificate; without one, or with one the server does
// not trust, it fails with cause tls and says why. Over TLS 1.3, where the
// server refuses the certificate only after the client's handshake is
// done, and TLS 1.2.
func TestClientCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := newClientCA(t, "vigil test client CA")
	certFile, keyFile := ca.issue(t, dir, "probe")
	strangerCert, strangerKey := newClientCA(t, "some other CA").issue(t, dir, "stranger")

	for _, ver := range []struct {
		name string
		max  uint16
	}{{"TLS 1.3", tls.VersionTLS13}, {"TLS 1.2", tls.VersionTLS12}} {
		srv := mtlsServer(t, ca, ver.max)
		caFile := httptestCAFile(t, srv)
		cases := []struct {
			name      string
			cert, key string
			ok        bool
			errHas    string
			bodyHasCN string
		}{
			{name: "with the certificate", cert: certFile, key: keyFile, ok: true, bodyHasCN: "hello probe"},
			{name: "without", errHas: "(the server asked for a client certificate and none is configured: cert_file, key_file)"},
			{name: "untrusted certificate", cert: strangerCert, key: strangerKey, errHas: "(the server refused the client certificate)"},
		}
		for _, kind := range []string{"http", "tls"} {
			for _, c := range cases {
				t.Run(ver.name+"/"+kind+"/"+c.name, func(t *testing.T) {
					t.Parallel()
					var chk checks.Check
					var err error
					target := srv.URL
					var expect checks.Expect
					if kind == "http" && c.bodyHasCN != "" {
						expect.Body.Contains = []string{c.bodyHasCN}
					}
					if kind == "http" {
						chk, err = checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: caFile, CertFile: c.cert, KeyFile: c.key}},
							expect, checks.Options{Timeout: 5 * time.Second})
					} else {
						target = "tls://" + strings.TrimPrefix(srv.URL, "https://")
						chk, err = checks.NewTLS(checks.TLSSpec{CAFile: caFile, CertFile: c.cert, KeyFile: c.key},
							expect, checks.Options{Timeout: 5 * time.Second})
					}
					if err != nil {
						t.Fatal(err)
					}
					r := chk.Run(context.Background(), checks.Target{URL: target})
					if c.ok {
						if !r.OK {
							t.Fatalf("cause %q err %q, want a pass with the client certificate", r.Cause, r.Err)
						}
						return
					}
					if r.OK || r.Cause != checks.CauseTLS {
						t.Fatalf("ok=%v cause %q err %q, want cause tls", r.OK, r.Cause, r.Err)
					}
					if !strings.HasPrefix(r.Err, "tls: remote error: ") || !strings.Contains(r.Err, c.errHas) {
						t.Errorf("err %q, want the server's alert and %q", r.Err, c.errHas)
					}
				})
			}
		}
	}
}

// TestClientCertificateConfig: cert_file and key_file are read when the
// config loads; an unreadable, empty or mismatched file is an error naming
// the key and the path, for http.tls and tls checks alike. A reload reads
// them again: a spec validated after the files changed presents the new
// certificate.
func TestClientCertificateConfig(t *testing.T) {
	dir := t.TempDir()
	ca := newClientCA(t, "vigil test client CA")
	certFile, keyFile := ca.issue(t, dir, "probe")
	_, otherKey := ca.issue(t, dir, "other")
	missing := filepath.Join(dir, "missing.pem")
	notPEM := filepath.Join(dir, "notpem.txt")
	os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600)

	cases := []struct {
		name      string
		cert, key string
		want      string
	}{
		{"cert without key", certFile, "", "key_file: required with cert_file"},
		{"key without cert", "", keyFile, "cert_file: required with key_file"},
		{"cert unreadable", missing, keyFile, "cert_file: open " + missing + ": no such file or directory"},
		{"key unreadable", certFile, missing, "key_file: open " + missing + ": no such file or directory"},
		{"cert not PEM", notPEM, keyFile, "cert_file: " + notPEM + ": tls: failed to find any PEM data in certificate input"},
		{"key not PEM", certFile, notPEM, "key_file: " + notPEM + ": tls: failed to find any PEM data in key input"},
		{"mismatched", certFile, otherKey, "key_file: " + otherKey + " does not match cert_file " + certFile + ": tls: private key does not match public key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := checks.HTTPSpec{URL: "https://127.0.0.1/", TLS: checks.TLSOptions{CertFile: c.cert, KeyFile: c.key}}
			err := h.ValidateAndSetDefaults()
			if err == nil || !strings.Contains(err.Error(), "tls."+c.want) || !errors.Is(err, checks.ErrClientCert) {
				t.Errorf("http: %v, want ErrClientCert %q", err, "tls."+c.want)
			}
			s := checks.TLSSpec{CertFile: c.cert, KeyFile: c.key}
			err = s.ValidateAndSetDefaults()
			if err == nil || err.Error() != c.want || !errors.Is(err, checks.ErrClientCert) {
				t.Errorf("tls: %v, want ErrClientCert %q", err, c.want)
			}
		})
	}

	t.Run("reload reads the files again", func(t *testing.T) {
		srv := mtlsServer(t, ca, tls.VersionTLS13)
		caFile := httptestCAFile(t, srv)
		run := func() checks.Result {
			t.Helper()
			h, err := checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}},
				checks.Expect{Body: checks.BodyExpect{Contains: []string{"hello probe"}}}, checks.Options{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			return h.Run(context.Background(), checks.Target{URL: srv.URL})
		}
		if r := run(); !r.OK {
			t.Fatalf("before: cause %q err %q", r.Cause, r.Err)
		}
		// Replace the pair in place with one from a CA the server does not
		// trust; the next load presents it.
		sc, sk := newClientCA(t, "some other CA").issue(t, t.TempDir(), "probe")
		for src, dst := range map[string]string{sc: certFile, sk: keyFile} {
			b, _ := os.ReadFile(src)
			if err := os.WriteFile(dst, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if r := run(); r.OK || r.Cause != checks.CauseTLS {
			t.Errorf("after replacing the files: ok=%v cause %q err %q, want cause tls (the new certificate is presented)", r.OK, r.Cause, r.Err)
		}
	})
}
