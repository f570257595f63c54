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
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestExpiredProxyCertificate: a proxy cert_file that has expired is a
// `vigil validate` warning naming the key, the file, the certificate and
// the date, and once the TLS listener serves it /healthz answers 503 with
// it (every client refuses the certificate) while /readyz stays 200 and
// lists it. All three said ok while curl failed with "certificate has
// expired".
func TestExpiredProxyCertificate(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	notAfter := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "www.example.test"},
		DNSNames: []string{"www.example.test"}, NotBefore: notAfter.Add(-90 * 24 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "www.crt"), filepath.Join(dir, "www.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	path := writeConfig(t, fmt.Sprintf(`agent: {region: r1, data_dir: %q}
targets: [{name: a, url: "http://127.0.0.1:9"}]
proxy:
  listen: 127.0.0.1:0
  tls_listen: 127.0.0.1:0
  cert_file: %s
  key_file: %s
  pools: [{name: web, origins: [{target: a}]}]
`, filepath.Join(dir, "data"), certFile, keyFile))
	what := `certificate "CN=www.example.test" (www.example.test) expired ` + notAfter.UTC().Format(time.RFC3339)

	out, code := runCLI(t, "validate", "-c", path)
	if want := "warning: " + path + ":6: proxy.cert_file: " + certFile + ": " + what; code != 0 || !strings.HasPrefix(out, "ok\n") || !strings.Contains(out, want) {
		t.Errorf("validate: exit %d\n%s\nwant ok and a line starting %q", code, out, want)
	}

	a, stop := startApp(t, path, roles{proxy: true})
	defer stop()
	base := "http://" + a.Addr()
	want := "proxy: tls: cert_file " + certFile + ": " + what
	var body string
	waitFor(t, 10*time.Second, "/healthz naming the expired certificate", func() bool {
		var code int
		code, body = do(t, "GET", base+"/healthz", "", nil)
		return code == 503 && strings.Contains(body, want)
	})
	if code, ready := do(t, "GET", base+"/readyz", "", nil); code != 200 || !strings.Contains(ready, "warning: "+want) {
		t.Errorf("/readyz: %d %q, want 200 listing %q", code, ready, want)
	}
	series := fmt.Sprintf(`vigil_proxy_certificate_expiry_timestamp_seconds{file=%q,names="www.example.test"} %s`,
		certFile, strconv.FormatFloat(float64(notAfter.Unix()), 'e', -1, 64))
	if _, metrics := do(t, "GET", base+"/metrics", "", nil); !strings.Contains(metrics, series) {
		t.Errorf("/metrics lacks %s", series)
	}
}
