// Package tlstest makes a private CA for tests: a root, a server
// certificate it signs for 127.0.0.1, ::1 and localhost, and a client
// certificate, each written as PEM files under t.TempDir().
package tlstest

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

// CA is a private CA made for one test.
type CA struct {
	// CAFile is the root certificate as a PEM file (a ca_file).
	CAFile string
	// ClientCertFile and ClientKeyFile are a client certificate the CA
	// signed (cert_file, key_file).
	ClientCertFile, ClientKeyFile string
	// ServerCertFile and ServerKeyFile are the server certificate (for
	// 127.0.0.1, ::1 and localhost) and its key, for a server run as a
	// process.
	ServerCertFile, ServerKeyFile string
	// Pool holds the root.
	Pool *x509.CertPool

	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	server tls.Certificate
	t      testing.TB
}

// New makes a CA, a server certificate for 127.0.0.1, ::1 and localhost,
// and a client certificate.
func New(t testing.TB) *CA {
	t.Helper()
	dir := t.TempDir()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vigil test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{cert: cert, key: key, t: t, Pool: x509.NewCertPool()}
	ca.Pool.AddCert(cert)
	ca.CAFile = filepath.Join(dir, "ca.pem")
	writePEM(t, ca.CAFile, "CERTIFICATE", der)

	sDER, sKey := ca.sign(&x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	ca.server = tls.Certificate{Certificate: [][]byte{sDER}, PrivateKey: sKey}
	ca.ServerCertFile = filepath.Join(dir, "server.pem")
	writePEM(t, ca.ServerCertFile, "CERTIFICATE", sDER)
	ca.ServerKeyFile = filepath.Join(dir, "server-key.pem")
	writePEM(t, ca.ServerKeyFile, "PRIVATE KEY", marshalKey(t, sKey))

	cDER, cKey := ca.sign(&x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: "vigil test client"},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	ca.ClientCertFile = filepath.Join(dir, "client.pem")
	writePEM(t, ca.ClientCertFile, "CERTIFICATE", cDER)
	ca.ClientKeyFile = filepath.Join(dir, "client-key.pem")
	writePEM(t, ca.ClientKeyFile, "PRIVATE KEY", marshalKey(t, cKey))
	return ca
}

func (ca *CA) sign(tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey) {
	ca.t.Helper()
	key := newKey(ca.t)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	return der, key
}

// ServerConfig is a server config presenting the CA's server certificate.
// With requireClient, the handshake requires a client certificate the CA
// signed.
func (ca *CA) ServerConfig(requireClient bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{ca.server}, MinVersion: tls.VersionTLS12}
	if requireClient {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = ca.Pool
	}
	return c
}

// Serve starts an HTTPS server on 127.0.0.1 (a free port) with the CA's
// server certificate, closed at the end of the test.
func (ca *CA) Serve(h http.Handler, requireClient bool) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = ca.ServerConfig(requireClient)
	srv.StartTLS()
	ca.t.Cleanup(srv.Close)
	return srv
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func marshalKey(t testing.TB, key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
