package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// https:// origins are verified by default; tls.ca_file trusts an internal
// CA, tls.server_name sets the name sent and verified, and
// tls.insecure_skip_verify turns verification off.
func TestOriginTLS(t *testing.T) {
	o := checktest.NewTLSOrigin() // a private CA; the leaf names localhost and 127.0.0.1
	defer o.Close()
	ca, err := o.CAFile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		tls  OriginTLSConfig
		want int
	}{
		{"unknown CA", OriginTLSConfig{}, http.StatusBadGateway},
		{"ca_file", OriginTLSConfig{CAFile: ca}, http.StatusOK},
		{"server_name in the certificate", OriginTLSConfig{CAFile: ca, ServerName: "localhost"}, http.StatusOK},
		{"server_name not in the certificate", OriginTLSConfig{CAFile: ca, ServerName: "other.example"}, http.StatusBadGateway},
		{"TLS 1.3 only", OriginTLSConfig{CAFile: ca, MinVersion: "1.3"}, http.StatusOK},
		{"insecure_skip_verify", OriginTLSConfig{InsecureSkipVerify: true}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pool1(PolicyFirst, o.URL())
			cfg.Pools[0].TLS = tc.tls
			cfg.Pools[0].Retry.Tries = 1
			h := start(t, cfg, nil, false)
			code, body, _ := h.do("GET", "/", "")
			if code != tc.want {
				t.Fatalf("got %d %q, want %d", code, body, tc.want)
			}
			if tc.want == http.StatusBadGateway {
				if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": noOrigin, "code": "502"}); v != 1 {
					t.Fatalf("502 not counted as the proxy's own answer: %v", v)
				}
			}
		})
	}
}

func TestOriginTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	for _, tc := range []struct {
		tls  OriginTLSConfig
		want string
	}{
		{OriginTLSConfig{CAFile: filepath.Join(dir, "missing.pem")}, "pools[0].tls.ca_file: open "},
		{OriginTLSConfig{CAFile: notPEM}, "pools[0].tls.ca_file: " + notPEM + ": no PEM certificate in it"},
		{OriginTLSConfig{MinVersion: "1.1"}, `pools[0].tls.min_version: "1.1": want "1.2" or "1.3"`},
	} {
		cfg := pool1(PolicyFirst, "https://127.0.0.1:1")
		cfg.Pools[0].TLS = tc.tls
		_, err := New(cfg, nil, testLogger(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.tls, err, tc.want)
		}
	}
}

// An origin that requires a client certificate (mutual TLS) gets the
// pool's tls.cert_file / key_file; without them the handshake fails (502).
func TestOriginClientCertificate(t *testing.T) {
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "vigil-proxy"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(leafKey)
	certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)

	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(caCert)
	var seen atomic.Value
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) > 0 {
			seen.Store(r.TLS.PeerCertificates[0].Subject.CommonName)
		}
		io.WriteString(w, "mtls ok")
	}))
	origin.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	origin.StartTLS()
	defer origin.Close()
	serverCA := filepath.Join(dir, "server-ca.pem")
	os.WriteFile(serverCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: origin.Certificate().Raw}), 0o600)

	for _, tc := range []struct {
		name       string
		cert, key  string
		want       int
		wantClient string
	}{
		{"without a client certificate", "", "", http.StatusBadGateway, ""},
		{"with cert_file and key_file", certFile, keyFile, http.StatusOK, "vigil-proxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.Pools[0].TLS = OriginTLSConfig{CAFile: serverCA, CertFile: tc.cert, KeyFile: tc.key}
			cfg.Pools[0].Retry.Tries = 1
			h := start(t, cfg, nil, false)
			code, body, _ := h.do("GET", "/", "")
			if code != tc.want {
				t.Fatalf("got %d %q, want %d", code, body, tc.want)
			}
			if tc.wantClient != "" && seen.Load() != tc.wantClient {
				t.Fatalf("the origin saw client certificate %v, want %q", seen.Load(), tc.wantClient)
			}
		})
	}
	// Half a pair, or a pair that does not load, is a config error naming the keys.
	for _, tc := range []struct {
		cfg  OriginTLSConfig
		want string
	}{
		{OriginTLSConfig{CertFile: certFile}, "pools[0].tls.key_file: required with cert_file"},
		{OriginTLSConfig{KeyFile: keyFile}, "pools[0].tls.cert_file: required with key_file"},
		{OriginTLSConfig{CertFile: certFile, KeyFile: serverCA}, "pools[0].tls.cert_file: " + certFile + " with key_file " + serverCA + ": "},
	} {
		cfg := pool1(PolicyFirst, origin.URL)
		cfg.Pools[0].TLS = tc.cfg
		if _, err := New(cfg, nil, testLogger(t)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}
