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

// testChain is a root, an intermediate that expires soon, a cross-signed
// copy of that intermediate (same name and key) that lasts a year, and a
// leaf for 127.0.0.1 issued by the intermediate.
type testChain struct {
	root, inter, interLong, leaf *x509.Certificate
	leafKey                      *ecdsa.PrivateKey
}

func newTestChain(t *testing.T, leafNotAfter, interNotAfter time.Time) *testChain {
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
		if tmpl.NotBefore.IsZero() {
			tmpl.NotBefore = now.Add(-48 * time.Hour)
		}
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
	c := &testChain{leafKey: lk}
	c.root = issue(ca("vigil test root", now.Add(10*365*24*time.Hour)), nil, &rk.PublicKey, rk)
	c.inter = issue(ca("vigil test intermediate", interNotAfter), c.root, &ik.PublicKey, rk)
	c.interLong = issue(ca("vigil test intermediate", now.Add(365*24*time.Hour)), c.root, &ik.PublicKey, rk)
	c.leaf = issue(&x509.Certificate{Subject: pkix.Name{CommonName: "vigil test leaf"}, NotAfter: leafNotAfter,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, c.inter, &lk.PublicKey, ik)
	return c
}

// serve starts an HTTPS server presenting the leaf and the short-lived
// intermediate.
func (c *testChain) serve(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{
		Certificate: [][]byte{c.leaf.Raw, c.inter.Raw}, PrivateKey: c.leafKey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// pemFile writes certificates to a PEM file for ca_file.
func pemFile(t *testing.T, certs ...*x509.Certificate) string {
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

// TestCertMinDaysChain: cert_min_days and the reported expiries look at the
// whole chain, not the leaf only. A leaf good for 90 days under an
// intermediate that expires in 5 fails cert_min_days 30, naming the
// intermediate; when the client also trusts a longer-lived copy of that
// intermediate the best verified chain lasts 90 days and passes, while
// the earliest presented expiry stays the intermediate's. With
// insecure_skip_verify the presented certificates are judged. The same
// holds for http and tls checks.
func TestCertMinDaysChain(t *testing.T) {
	now := time.Now()
	ch := newTestChain(t, now.Add(90*24*time.Hour+time.Hour), now.Add(5*24*time.Hour+time.Hour))
	srv := ch.serve(t)
	host := strings.TrimPrefix(srv.URL, "https://")
	rootOnly := pemFile(t, ch.root)
	crossSigned := pemFile(t, ch.root, ch.interLong)

	type tc struct {
		name      string
		caFile    string
		insecure  bool
		ok        bool
		errHas    []string
		lastChain time.Time
	}
	cases := []tc{
		{name: "intermediate expires first", caFile: rootOnly,
			errHas:    []string{"certificate expires in 5 days (" + ch.inter.NotAfter.UTC().Format(time.DateOnly) + "), want at least 30", "intermediate CN=vigil test intermediate"},
			lastChain: ch.inter.NotAfter},
		{name: "a longer verified chain wins", caFile: crossSigned, ok: true, lastChain: ch.leaf.NotAfter},
		{name: "insecure judges the presented certificates", insecure: true,
			errHas: []string{"certificate expires in 5 days", "intermediate CN=vigil test intermediate"}},
	}
	for _, kind := range []string{"http", "tls"} {
		for _, c := range cases {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				expect := checks.Expect{CertMinDays: 30}
				var chk checks.Check
				var err error
				target := srv.URL
				if kind == "http" {
					chk, err = checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{CAFile: c.caFile, InsecureSkipVerify: c.insecure}},
						expect, checks.Options{Timeout: 5 * time.Second})
				} else {
					target = "tls://" + host
					chk, err = checks.NewTLS(checks.TLSSpec{CAFile: c.caFile, InsecureSkipVerify: c.insecure},
						expect, checks.Options{Timeout: 5 * time.Second})
				}
				if err != nil {
					t.Fatal(err)
				}
				r := chk.Run(context.Background(), checks.Target{URL: target})
				if r.OK != c.ok || (!c.ok && r.Cause != checks.CauseCert) {
					t.Fatalf("ok=%v cause %q err %q, want ok=%v (cause cert when not)", r.OK, r.Cause, r.Err, c.ok)
				}
				for _, s := range c.errHas {
					if !strings.Contains(r.Err, s) {
						t.Errorf("err %q, want it to contain %q", r.Err, s)
					}
				}
				if !r.CertExpiry.Equal(ch.inter.NotAfter) {
					t.Errorf("CertExpiry %s, want the intermediate's %s (earliest presented), not the leaf's %s",
						r.CertExpiry, ch.inter.NotAfter, ch.leaf.NotAfter)
				}
				if !r.LastChainExpiry.Equal(c.lastChain) {
					t.Errorf("LastChainExpiry %s, want %s", r.LastChainExpiry, c.lastChain)
				}
			})
		}
	}
}

// TestCertExpiredWording: an expired certificate is said to have expired
// N days ago, not to expire in -N days.
func TestCertExpiredWording(t *testing.T) {
	now := time.Now()
	ch := newTestChain(t, now.Add(-3*24*time.Hour-time.Hour), now.Add(365*24*time.Hour))
	srv := ch.serve(t)
	for _, kind := range []string{"http", "tls"} {
		t.Run(kind, func(t *testing.T) {
			var chk checks.Check
			var err error
			target := srv.URL
			if kind == "http" {
				chk, err = checks.NewHTTP(checks.HTTPSpec{TLS: checks.TLSOptions{InsecureSkipVerify: true}},
					checks.Expect{CertMinDays: 7}, checks.Options{Timeout: 5 * time.Second})
			} else {
				target = "tls://" + strings.TrimPrefix(srv.URL, "https://")
				chk, err = checks.NewTLS(checks.TLSSpec{InsecureSkipVerify: true}, checks.Expect{CertMinDays: 7}, checks.Options{Timeout: 5 * time.Second})
			}
			if err != nil {
				t.Fatal(err)
			}
			r := chk.Run(context.Background(), checks.Target{URL: target})
			want := "certificate expired 3 days ago (" + ch.leaf.NotAfter.UTC().Format(time.DateOnly) + "), want at least 7: leaf CN=vigil test leaf"
			if r.Cause != checks.CauseCert || r.Err != want {
				t.Errorf("cause %q err %q, want cert %q", r.Cause, r.Err, want)
			}
			for _, a := range r.Assertions {
				if a.Name == "cert_min_days" && a.Got != "expired 3 days ago (leaf CN=vigil test leaf)" {
					t.Errorf("cert_min_days got %q, want %q", a.Got, "expired 3 days ago (leaf CN=vigil test leaf)")
				}
			}
		})
	}
}
