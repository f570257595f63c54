package proxy

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// rsaCertFor writes a self-signed RSA certificate for name and its key.
func rsaCertFor(t *testing.T, name string) (string, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := serverCertTemplate(name + " rsa")
	tmpl.DNSNames = []string{name}
	tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	certFile, keyFile, _ := writeSelfSigned(t, tmpl, key)
	return certFile, keyFile
}

// TestTLSListenerDualCertSameName: two pairs for one name (ECDSA first, RSA
// second, as nginx's dual ssl_certificate): a TLS 1.2 client offering only
// ECDHE-RSA suites gets the RSA one (was: the ECDSA one, and a failed
// handshake); a client taking both gets the first.
func TestTLSListenerDualCertSameName(t *testing.T) {
	cfg := pool1(PolicyFirst, newBackend(t, "a").srv.URL)
	ec, ek := certFor(t, "a.example")
	rc, rk := rsaCertFor(t, "a.example")
	cfg.Certs = []CertPair{{ec, ek}, {rc, rk}}
	addr, _ := runTLSProxy(t, cfg)
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "a.example", InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}})
	if err != nil {
		t.Fatalf("RSA-only TLS 1.2 client, SNI a.example (an RSA pair for it is configured): %v", err)
	}
	if got := c.ConnectionState().PeerCertificates[0].Subject.CommonName; got != "a.example rsa" {
		t.Errorf("RSA-only client served %q, want the RSA pair", got)
	}
	c.Close()
	c, err = tls.Dial("tcp", addr, &tls.Config{ServerName: "a.example", InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.ConnectionState().PeerCertificates[0].Subject.CommonName; got != "a.example" {
		t.Errorf("client taking both served %q, want the first pair (ECDSA)", got)
	}
	c.Close()
}

// TestTLSListenerCertFileCompetes: cert_file is a candidate beside certs for
// the name it covers. An RSA-only client asking for a name that cert_file
// (RSA) and a certs pair (ECDSA) both cover gets cert_file's (was: the
// ECDSA pair and a failed handshake), and an exact cert_file wins over a
// certs wildcard (was: the wildcard), as nginx chooses.
func TestTLSListenerCertFileCompetes(t *testing.T) {
	cfg := pool1(PolicyFirst, newBackend(t, "a").srv.URL)
	ec, ek := certFor(t, "a.example")
	wc, wk := certFor(t, "*.example")
	cfg.Certs = []CertPair{{ec, ek}, {wc, wk}}
	rc, rk := rsaCertFor(t, "a.example")
	cfg.Engine = EngineFast
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", rc, rk
	p, err := New(cfg, nil, testLogger(t), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	addr := runProxyOn(t, p, 2)[1]
	served := func(name string, rsaOnly bool) string {
		t.Helper()
		tc := &tls.Config{ServerName: name, InsecureSkipVerify: true}
		if rsaOnly {
			tc.MaxVersion = tls.VersionTLS12
			tc.CipherSuites = []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}
		}
		c, err := tls.Dial("tcp", addr, tc)
		if err != nil {
			t.Fatalf("SNI %q, RSA only %v: %v", name, rsaOnly, err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := served("a.example", true); got != "a.example rsa" {
		t.Errorf("RSA-only client for a.example served %q, want cert_file's RSA pair", got)
	}
	if got := served("a.example", false); got != "a.example" {
		t.Errorf("a client taking both, a.example: served %q, want the certs pair listed first", got)
	}
	if got := served("b.example", false); got != "*.example" {
		t.Errorf("b.example: served %q, want the wildcard", got)
	}
}

// TestTLSListenerExactCertFileBeatsWildcard: an exact cert_file wins over a
// wildcard of certs for its name.
func TestTLSListenerExactCertFileBeatsWildcard(t *testing.T) {
	cfg := pool1(PolicyFirst, newBackend(t, "a").srv.URL)
	wc, wk := certFor(t, "*.example")
	cfg.Certs = []CertPair{{wc, wk}}
	xc, xk := certFor(t, "a.example")
	cfg.Engine = EngineFast
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", xc, xk
	p, err := New(cfg, nil, testLogger(t), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	addr := runProxyOn(t, p, 2)[1]
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "a.example", InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.ConnectionState().PeerCertificates[0].Subject.CommonName; got != "a.example" {
		t.Errorf("a.example served %q, want cert_file's exact certificate", got)
	}
}
