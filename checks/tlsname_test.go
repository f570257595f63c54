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
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// nameServer starts an HTTPS server on 127.0.0.1 whose certificate, issued
// by ca, is valid for names only (DNS names; no IP SAN).
func nameServer(t *testing.T, ca *clientCA, h http.Handler, names ...string) *httptest.Server {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: k}}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// caFileOf writes ca's certificate as a PEM file.
func caFileOf(t *testing.T, ca *clientCA) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTLSNameOwnHostOnly: tls.server_name and a Host header name the TLS
// server of the check's own host only. A backend probed by IP under its
// public name (its certificate is for wrong.example) that redirects to
// another host (localhost, whose certificate is for localhost) passes:
// the second host is verified against its own name, as blackbox_exporter,
// curl and browsers do. Without server_name, a Host header gives the TLS
// name (SNI and verification), without its port.
func TestTLSNameOwnHostOnly(t *testing.T) {
	ca := newClientCA(t, "vigil test CA")
	caFile := caFileOf(t, ca)
	canonical := nameServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "canonical sni="+r.TLS.ServerName)
	}), "localhost")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(canonical.URL, "https://"))
	canonicalURL := "https://localhost:" + port + "/json"
	backend := nameServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cross":
			http.Redirect(w, r, canonicalURL, http.StatusFound)
		case "/same":
			http.Redirect(w, r, "/json", http.StatusFound)
		default:
			io.WriteString(w, "backend sni="+r.TLS.ServerName)
		}
	}), "wrong.example")

	cases := []struct {
		name   string
		path   string
		sni    string
		host   string
		ok     bool
		body   string
		errHas string
	}{
		{name: "server_name, redirect to another host", path: "/cross", sni: "wrong.example", ok: true, body: "canonical sni=localhost"},
		{name: "server_name, redirect on the same host", path: "/same", sni: "wrong.example", ok: true, body: "backend sni=wrong.example"},
		{name: "Host header as the TLS name", path: "/json", host: "wrong.example", ok: true, body: "backend sni=wrong.example"},
		{name: "Host header with a port", path: "/json", host: "wrong.example:8443", ok: true, body: "backend sni=wrong.example"},
		{name: "Host header, redirect to another host", path: "/cross", host: "wrong.example", ok: true, body: "canonical sni=localhost"},
		{name: "server_name wins over the Host header", path: "/json", sni: "wrong.example", host: "other.example", ok: true, body: "backend sni=wrong.example"},
		{name: "Host header naming another certificate", path: "/json", host: "other.example", errHas: "cert: not valid for other.example (valid for wrong.example)"},
		{name: "neither: the IP is verified", path: "/json", errHas: "cert: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := checks.HTTPSpec{Path: c.path, FollowRedirects: true, TLS: checks.TLSOptions{CAFile: caFile, ServerName: c.sni}}
			if c.host != "" {
				spec.Headers = map[string]string{"Host": c.host}
			}
			var expect checks.Expect
			if c.body != "" {
				expect.Body.Contains = []string{c.body}
			}
			h, err := checks.NewHTTP(spec, expect, checks.Options{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r := h.Run(context.Background(), checks.Target{URL: backend.URL})
			if c.ok {
				if !r.OK {
					t.Fatalf("cause %q err %q, want a pass", r.Cause, r.Err)
				}
				return
			}
			if r.OK || r.Cause != checks.CauseCert || !strings.Contains(r.Err, c.errHas) {
				t.Errorf("ok %v cause %q err %q, want cause cert with %q", r.OK, r.Cause, r.Err, c.errHas)
			}
		})
	}
}

// TestTLSNameFromExpandedHost: a Host header built from variables (a script
// step) gives the TLS name after substitution, run by run.
func TestTLSNameFromExpandedHost(t *testing.T) {
	ca := newClientCA(t, "vigil test CA")
	caFile := caFileOf(t, ca)
	backend := nameServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "sni="+r.TLS.ServerName)
	}), "a.example", "b.example")
	h, err := checks.NewHTTP(checks.HTTPSpec{Headers: map[string]string{"Host": "${site}"}, TLS: checks.TLSOptions{CAFile: caFile}},
		checks.Expect{}, checks.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, site := range []string{"a.example", "b.example", "c.example", "a.example"} {
		expand := func(s string) string { return strings.ReplaceAll(s, "${site}", site) }
		r, resp := h.RunWith(context.Background(), checks.Target{URL: backend.URL}, checks.RunOptions{Expand: expand, KeepBody: true})
		if site == "c.example" {
			if r.OK || r.Cause != checks.CauseCert || !strings.Contains(r.Err, "cert: not valid for c.example (valid for a.example, b.example)") {
				t.Errorf("Host %s: ok %v cause %q err %q, want cause cert naming c.example", site, r.OK, r.Cause, r.Err)
			}
			continue
		}
		if !r.OK || resp == nil || string(resp.Body) != "sni="+site {
			t.Errorf("Host %s: ok %v cause %q err %q, want a pass with SNI %s", site, r.OK, r.Cause, r.Err, site)
		}
	}
}
