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
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-synthetics/vigil/checks"
)

// testCA is a CA written for a test, and the server certificates it
// issues.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate as a PEM file
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: c, key: k, file: file}
}

// serverCert issues a server certificate for names (DNS names, and IP
// addresses written as such), valid 24 hours.
func (ca *testCA) serverCert(t *testing.T, names ...string) tls.Certificate {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
}

// startDoTServer starts a miekg/dns server speaking DNS over TLS (RFC
// 7858) on 127.0.0.1 with cert, answering www.example.test A with
// 192.0.2.10 and anything else NXDOMAIN. It returns host:port.
func startDoTServer(t *testing.T, cert tls.Certificate) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{Net: "tcp-tls", Listener: ln, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if q := r.Question[0]; q.Name == "www.example.test." && q.Qtype == dns.TypeA {
			rr, _ := dns.NewRR("www.example.test. 300 IN A 192.0.2.10")
			m.Answer = append(m.Answer, rr)
		} else {
			m.Rcode = dns.RcodeNameError
		}
		w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go srv.ActivateAndServe()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("dns-over-tls server did not start")
	}
	t.Cleanup(func() { srv.Shutdown() })
	return ln.Addr().String()
}

// TestDNSOverTLS: transport tcp-tls asks a real DNS-over-TLS server and
// verifies it with dns.tls as an http check verifies an origin: with the
// CA it passes (tls phase timed, the certificate's expiry reported);
// without it, or with a server_name the certificate does not name, it
// fails with cause cert and the tls check's messages, and the query is
// never sent; a server that speaks no TLS fails the handshake, cause tls.
func TestDNSOverTLS(t *testing.T) {
	ca := newTestCA(t, "vigil dot test CA")
	addr := startDoTServer(t, ca.serverCert(t, "dot.example.test", "127.0.0.1"))
	// A server that speaks no TLS: it answers the ClientHello with text.
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	go func() {
		for i := 0; i < 10; i++ {
			c, err := plain.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(3 * time.Second))
			c.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"))
			c.Close()
		}
	}()

	answer := checks.Expect{Answer: checks.RecordExpect{Regex: []string{`\tA\t192\.0\.2\.10$`}}}
	cases := []struct {
		name   string
		server string
		tls    *checks.TLSOptions
		cause  checks.Cause
		err    string
	}{
		{"verified with the CA", addr, &checks.TLSOptions{CAFile: ca.file}, "", ""},
		{"server_name the certificate names", addr, &checks.TLSOptions{CAFile: ca.file, ServerName: "dot.example.test"}, "", ""},
		{"insecure_skip_verify", addr, &checks.TLSOptions{InsecureSkipVerify: true}, "", ""},
		{"system pool only", addr, nil, checks.CauseCert, "cert: signed by an unknown authority: leaf CN=dot.example.test, issuer CN=vigil dot test CA"},
		{"wrong server_name", addr, &checks.TLSOptions{CAFile: ca.file, ServerName: "other.example.test"}, checks.CauseCert,
			"cert: not valid for other.example.test (valid for dot.example.test, 127.0.0.1)"},
		{"no TLS on the server", plain.Addr().String(), &checks.TLSOptions{CAFile: ca.file}, checks.CauseTLS,
			"tls: first record does not look like a TLS handshake"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := checks.DNSSpec{QueryName: "www.example.test", Transport: "tcp-tls", TLS: tc.tls}
			c, err := checks.NewDNS(spec, answer, checks.Options{Timeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			r := c.Run(context.Background(), checks.Target{Name: "dot", URL: "dns://" + tc.server})
			if r.Cause != tc.cause || !strings.Contains(r.Err, tc.err) || r.OK != (tc.cause == "") {
				t.Fatalf("ok %v cause %q err %q, want cause %q with %q", r.OK, r.Cause, r.Err, tc.cause, tc.err)
			}
			if r.Proto != "DNS/TLS" {
				t.Errorf("proto %q, want DNS/TLS", r.Proto)
			}
			if tc.cause == checks.CauseTLS {
				return
			}
			if r.Phases.TLS <= 0 || r.Phases.Connect <= 0 {
				t.Errorf("phases %+v: want connect and tls timed", r.Phases)
			}
			if r.CertExpiry.IsZero() {
				t.Error("the server's certificate expiry is not reported")
			}
			_, asked := assertionByName(r, "answer regex")
			if asked != (tc.cause == "") {
				t.Errorf("answer asserted: %v (assertions %+v): the query must be sent only to a verified server", asked, r.Assertions)
			}
		})
	}
}

// TestDNSOverTLSPortAndConfig: tcp-tls defaults the port of a dns://
// target and of dns.server to 853; dns.tls needs tcp-tls, tcp-tls needs
// a server, and a near miss of the value is named.
func TestDNSOverTLSPortAndConfig(t *testing.T) {
	for _, tc := range []struct {
		spec   checks.DNSSpec
		target string
	}{
		{checks.DNSSpec{QueryName: "www.example.test", Transport: "TCP-TLS"}, "dns://127.0.0.1"},
		{checks.DNSSpec{QueryName: "www.example.test", Transport: "tcp-tls", Server: "127.0.0.1"}, "https://www.example.test/"},
	} {
		c, err := checks.NewDNS(tc.spec, checks.Expect{}, checks.Options{Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r := c.Run(context.Background(), checks.Target{URL: tc.target})
		// Nothing is expected to listen on 127.0.0.1:853; if something
		// does, the run reached it, which is the point.
		if r.OK || !strings.Contains(r.Err, "127.0.0.1:853") && r.Cause == checks.CauseConnectRefused {
			t.Errorf("%+v %s: cause %q err %q, want port 853 dialled", tc.spec, tc.target, r.Cause, r.Err)
		}
		if r.Cause != checks.CauseConnectRefused {
			t.Logf("127.0.0.1:853 answers here: cause %q err %q", r.Cause, r.Err)
		}
	}

	for _, tc := range []struct {
		spec     checks.DNSSpec
		sentinel error
		want     string
	}{
		{checks.DNSSpec{Transport: "tls"}, checks.ErrBadValue, `dns.transport: "tls": want "udp", "tcp" or "tcp-tls" (write "tcp-tls" for DNS over TLS)`},
		{checks.DNSSpec{Transport: "https"}, checks.ErrBadValue, `dns.transport: "https": want "udp", "tcp" or "tcp-tls" (DNS over HTTPS is not supported)`},
		{checks.DNSSpec{Transport: "tcp", TLS: &checks.TLSOptions{}}, checks.ErrConflict, `dns.tls: set transport: tcp-tls for DNS over TLS (over tcp the query is plain text)`},
		{checks.DNSSpec{TLS: &checks.TLSOptions{CAFile: "/nonexistent/ca.pem"}}, checks.ErrConflict, `dns.tls: set transport: tcp-tls`},
		{checks.DNSSpec{Transport: "tcp-tls", TLS: &checks.TLSOptions{CAFile: "/nonexistent/ca.pem"}}, checks.ErrCAFile, `dns.tls.ca_file: `},
		{checks.DNSSpec{Transport: "tcp-tls", TLS: &checks.TLSOptions{MinVersion: "1.4"}}, checks.ErrBadValue, `dns.tls.min_version: "1.4"`},
	} {
		_, err := checks.NewDNS(tc.spec, checks.Expect{}, checks.Options{})
		if err == nil || !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v\nwant %v containing %q", tc.spec, err, tc.sentinel, tc.want)
		}
	}

	spec := checks.DNSSpec{Transport: "tcp-tls"}
	if err := spec.TargetFits("https://www.example.test/"); !errors.Is(err, checks.ErrConflict) ||
		!strings.Contains(err.Error(), "dns.server: required with transport tcp-tls when the target is no dns:// server") {
		t.Errorf("tcp-tls without a server: %v", err)
	}
	spec.QueryName = "www.example.test"
	if err := spec.TargetFits("dns://127.0.0.1"); err != nil {
		t.Errorf("tcp-tls with a dns:// target: %v", err)
	}
	spec = checks.DNSSpec{Transport: "tcp-tls", Server: "127.0.0.1"}
	if err := spec.TargetFits("https://www.example.test/"); err != nil {
		t.Errorf("tcp-tls with dns.server: %v", err)
	}
	spec = checks.DNSSpec{Transport: "tcp-tls", TLS: &checks.TLSOptions{InsecureSkipVerify: true}}
	if w := spec.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "tls.insecure_skip_verify: true") {
		t.Errorf("warnings %q", w)
	}
}
