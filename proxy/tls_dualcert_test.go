package proxy

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"testing"
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
