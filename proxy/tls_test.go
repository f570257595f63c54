package proxy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate and key for 127.0.0.1 and ::1 and returns
// their paths and a pool trusting the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	tmpl := serverCertTemplate("vigil test")
	tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	certFile, keyFile, c := writeSelfSigned(t, tmpl, newECKey(t))
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return certFile, keyFile, pool
}

// serverCertTemplate is a server certificate named cn, valid for an hour
// around now.
func serverCertTemplate(cn string) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
}

func newECKey(t *testing.T) crypto.Signer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// writeSelfSigned signs tmpl with key itself and writes the certificate and
// the key (PKCS #8) as PEM files: it returns their paths and the certificate.
func writeSelfSigned(t *testing.T, tmpl *x509.Certificate, key crypto.Signer) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600)
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

func TestRunTLSListener(t *testing.T) {
	a := newBackend(t, "a")
	certFile, keyFile, roots := selfSigned(t)
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	p, err := New(cfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr := runProxyOn(t, p, 2)[1]
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	resp, err := client.Get("https://" + tlsAddr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("got %s over %s, want 200 over HTTP/2", resp.Status, resp.Proto)
	}
	a.mu.Lock()
	proto := a.last.Get("X-Forwarded-Proto")
	a.mu.Unlock()
	if proto != "https" {
		t.Fatalf("X-Forwarded-Proto %q, want https", proto)
	}
}

// TestCertReload: a renewed certificate is served without a restart once
// the reload interval has passed; a broken pair keeps the previous one.
func TestCertReload(t *testing.T) {
	certA, keyA, rootsA := selfSigned(t)
	certB, keyB, rootsB := selfSigned(t)
	s, err := newCertStore(CertPair{certA, keyA}, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.now = func() time.Time { return now }

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: s.GetCertificate})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	trusted := func(roots *x509.CertPool) bool {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots})
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	if !trusted(rootsA) || trusted(rootsB) {
		t.Fatal("first certificate not served")
	}
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Renewed in place (as certbot's deploy hook or a mounted secret does).
	copyFile(certB, certA)
	copyFile(keyB, keyA)
	if !trusted(rootsA) {
		t.Fatal("reloaded before the interval")
	}
	now = now.Add(certReloadEvery + time.Second)
	if !trusted(rootsB) || trusted(rootsA) {
		t.Fatal("renewed certificate not served after the interval")
	}
	// A half-written pair: the key no longer matches. The last good pair stays.
	os.WriteFile(keyA, []byte("-----BEGIN EC PRIVATE KEY-----\nbroken\n"), 0o600)
	now = now.Add(certReloadEvery + time.Second)
	if !trusted(rootsB) {
		t.Fatal("a broken pair replaced the good certificate")
	}
	if _, err := newCertStore(CertPair{certA, keyA}, nil, testLogger(t)); err == nil || !strings.Contains(err.Error(), keyA) {
		t.Fatalf("start with a broken pair: %v, want an error naming the key file", err)
	}
}
