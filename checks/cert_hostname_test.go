package checks_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestHostnameMismatchWording: every probe that verifies a certificate
// says a name mismatch the same way, naming all of the certificate's
// names (DNS names, then IP addresses): the tls check's wording. Go's
// own text names only the IP addresses when the name is an IP ("valid
// for 127.0.0.2, not 127.0.0.1") and only the DNS names otherwise.
func TestHostnameMismatchWording(t *testing.T) {
	ca := newTestCA(t, "vigil hostname test CA")
	cert := ca.serverCert(t, "localhost", "127.0.0.2")
	quiet := log.New(io.Discard, "", 0) // refused handshakes are expected

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ErrorLog = quiet
	srv.StartTLS()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")

	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer plain.Close()
	px := &testProxy{}
	px.srv = httptest.NewUnstartedServer(px)
	px.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	px.srv.Config.ErrorLog = quiet
	px.srv.StartTLS()
	defer px.srv.Close()
	pxAddr := strings.TrimPrefix(px.srv.URL, "https://")

	grpcURL := startGRPC(t, &cert, true)
	dotAddr := startDoTServer(t, cert)

	const (
		byIP   = "cert: not valid for 127.0.0.1 (valid for localhost, 127.0.0.2)"
		byName = "cert: not valid for other.example (valid for localhost, 127.0.0.2)"
	)
	opts := checks.Options{Timeout: 3 * time.Second}
	type runner interface {
		Run(context.Context, checks.Target) checks.Result
	}
	cases := []struct {
		name   string
		mk     func() (runner, error)
		target string
		want   string
	}{
		{"http, by IP", func() (runner, error) {
			return checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: ca.file}}, checks.Expect{}, opts)
		}, srv.URL, byIP},
		{"http, server_name", func() (runner, error) {
			return checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: ca.file, ServerName: "other.example"}}, checks.Expect{}, opts)
		}, srv.URL, byName},
		{"tls, by IP", func() (runner, error) {
			return checks.NewTLS(checks.TLSSpec{CAFile: ca.file}, checks.Expect{}, opts)
		}, "tls://" + addr, byIP},
		{"tls, server_name", func() (runner, error) {
			return checks.NewTLS(checks.TLSSpec{CAFile: ca.file, ServerName: "other.example"}, checks.Expect{}, opts)
		}, "tls://" + addr, byName},
		{"grpc, by IP", func() (runner, error) {
			return checks.NewGRPC(checks.GRPCSpec{TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{CAFile: ca.file}}}, checks.Expect{}, opts)
		}, grpcURL, byIP},
		{"grpc, server_name", func() (runner, error) {
			return checks.NewGRPC(checks.GRPCSpec{TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{CAFile: ca.file, ServerName: "other.example"}}}, checks.Expect{}, opts)
		}, grpcURL, byName},
		{"dns over TLS, by IP", func() (runner, error) {
			return checks.NewDNS(checks.DNSSpec{QueryName: "www.example.test", Transport: "tcp-tls", TLS: &checks.TLSOptions{CAFile: ca.file}}, checks.Expect{}, opts)
		}, "dns://" + dotAddr, byIP},
		{"http.proxy_tls, by IP", func() (runner, error) {
			return checks.NewHTTP(checks.HTTPSpec{ProxyURL: "https://" + pxAddr, ProxyTLS: &checks.TLSOptions{CAFile: ca.file}}, checks.Expect{}, opts)
		}, plain.URL, byIP + " (http.proxy_url " + pxAddr + ")"},
		{"http.proxy_tls, server_name", func() (runner, error) {
			return checks.NewHTTP(checks.HTTPSpec{ProxyURL: "https://" + pxAddr, ProxyTLS: &checks.TLSOptions{CAFile: ca.file, ServerName: "other.example"}}, checks.Expect{}, opts)
		}, plain.URL, byName + " (http.proxy_url " + pxAddr + ")"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.mk()
			if err != nil {
				t.Fatal(err)
			}
			if cl, ok := c.(interface{ Close() }); ok {
				defer cl.Close()
			}
			r := c.Run(context.Background(), checks.Target{Name: "o", URL: tc.target})
			if r.OK || r.Cause != checks.CauseCert || r.Err != tc.want {
				t.Errorf("ok %v cause %q err %q\nwant cause cert, err %q", r.OK, r.Cause, r.Err, tc.want)
			}
		})
	}
}

// TestHostnameMismatchCommonNameOnly: a certificate whose only name is its
// subject's common name is valid for no name (Go ignores the common
// name); the message says so instead of "valid for" the very name asked.
func TestHostnameMismatchCommonNameOnly(t *testing.T) {
	ca := newTestCA(t, "vigil hostname test CA")
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "legacy.example"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: k}}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()

	const want = "cert: not valid for legacy.example (no subject alternative names; the common name legacy.example is not used)"
	h, err := checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: ca.file, ServerName: "legacy.example"}}, checks.Expect{}, checks.Options{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	tc, err := checks.NewTLS(checks.TLSSpec{CAFile: ca.file, ServerName: "legacy.example"}, checks.Expect{}, checks.Options{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]checks.Result{
		"http": h.Run(context.Background(), checks.Target{URL: srv.URL}),
		"tls":  tc.Run(context.Background(), checks.Target{URL: "tls://" + strings.TrimPrefix(srv.URL, "https://")}),
	} {
		if r.OK || r.Cause != checks.CauseCert || r.Err != want {
			t.Errorf("%s: ok %v cause %q err %q\nwant cause cert, err %q", name, r.OK, r.Cause, r.Err, want)
		}
	}
}
