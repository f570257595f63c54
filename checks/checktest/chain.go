package checktest

import (
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
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Chain is a certificate chain for expiry tests: a root, an intermediate
// (Inter) with its own expiry, a cross-signed copy of that intermediate
// (same name and key) that lasts a year (InterLong), and a leaf for
// 127.0.0.1 issued by the intermediate.
type Chain struct {
	Root, Inter, InterLong, Leaf *x509.Certificate
	LeafKey                      *ecdsa.PrivateKey
}

// NewChain issues a Chain whose leaf expires at leafNotAfter and whose
// intermediate expires at interNotAfter (the root lasts ten years).
func NewChain(t testing.TB, leafNotAfter, interNotAfter time.Time) *Chain {
	t.Helper()
	now := time.Now()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	serial := int64(0)
	issue := func(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) *x509.Certificate {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore = now.Add(-48 * time.Hour)
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca := func(cn string, notAfter time.Time) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: cn}, NotAfter: notAfter, IsCA: true,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	}
	rk, ik, lk := key(), key(), key()
	c := &Chain{LeafKey: lk}
	c.Root = issue(ca("vigil test root", now.Add(10*365*24*time.Hour)), nil, &rk.PublicKey, rk)
	c.Inter = issue(ca("vigil test intermediate", interNotAfter), c.Root, &ik.PublicKey, rk)
	c.InterLong = issue(ca("vigil test intermediate", now.Add(365*24*time.Hour)), c.Root, &ik.PublicKey, rk)
	c.Leaf = issue(&x509.Certificate{Subject: pkix.Name{CommonName: "vigil test leaf"}, NotAfter: leafNotAfter,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, c.Inter, &lk.PublicKey, ik)
	return c
}

// Serve starts an HTTPS server presenting the leaf and the intermediate
// (Inter); it stops when the test ends.
func (c *Chain) Serve(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{
		Certificate: [][]byte{c.Leaf.Raw, c.Inter.Raw}, PrivateKey: c.LeafKey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// PEMFile writes certificates to a PEM file (for ca_file) in the test's
// temporary directory and returns its path.
func PEMFile(t testing.TB, certs ...*x509.Certificate) string {
	t.Helper()
	var b []byte
	for _, c := range certs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	f := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
