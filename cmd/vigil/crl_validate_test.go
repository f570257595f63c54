package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestValidateStaleCRLWarns: vigil validate warns about a client_crl_file
// CRL past its next update (it still applies: the proxy logs the same at
// start), at the key's line; a current CRL is no warning.
func TestValidateStaleCRLWarns(t *testing.T) {
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "clients CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	caFile := write("ca.pem", "CERTIFICATE", der)
	kder, _ := x509.MarshalECPrivateKey(key)
	keyFile := write("key.pem", "EC PRIVATE KEY", kder)
	crl := func(name string, next time.Time) string {
		b, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{Number: big.NewInt(1),
			ThisUpdate: next.Add(-2 * time.Hour), NextUpdate: next}, ca, key)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, "X509 CRL", b)
	}
	stale, fresh := crl("stale.crl", time.Now().Add(-time.Hour)), crl("fresh.crl", time.Now().Add(time.Hour))
	config := func(crlFile string) string {
		return writeConfig(t, fmt.Sprintf(`targets: [{name: a, url: "http://127.0.0.1:9"}]
proxy:
  tls_listen: 127.0.0.1:0
  cert_file: %s
  key_file: %s
  client_ca_file: %s
  client_crl_file: %s
  pools: [{name: web, origins: [{target: a}]}]
`, caFile, keyFile, caFile, crlFile))
	}
	p := config(stale)
	out, code := runCLI(t, "validate", "-c", p)
	want := "warning: " + p + ":7: proxy.client_crl_file: " + stale + `: CRL 1 (issuer "CN=clients CA") next update was `
	if code != 0 || !strings.HasPrefix(out, "ok\n") || !strings.Contains(out, want) || !strings.Contains(out, "the certificates it lists stay refused") {
		t.Errorf("stale CRL: exit %d\n%s\nwant ok and a line starting %q", code, out, want)
	}
	if out, code := runCLI(t, "validate", "-c", config(fresh)); code != 0 || out != "ok\n" {
		t.Errorf("current CRL: exit %d %q, want ok alone", code, out)
	}
}
