package checks_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// selfSignedServer serves HTTPS with a self-signed leaf that is not a CA,
// as `openssl req -x509` without CA:TRUE or a device's default cert.
func selfSignedServer(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "selfsigned.local"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: k}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// An untrusted certificate is named: subject CN, issuer, "self-signed"
// when it is, and the top of a longer chain presented; in http checks and
// in the tls check's "cert chain" assertion.
func TestUnknownAuthorityNamesTheCertificate(t *testing.T) {
	chain := checktest.NewChain(t, time.Now().Add(30*24*time.Hour), time.Now().Add(60*24*time.Hour))
	privateCA := checktest.NewTLSOrigin()
	defer privateCA.Close()
	for _, c := range []struct {
		name, url, want string
	}{
		{"self-signed", selfSignedServer(t), "cert: signed by an unknown authority: leaf CN=selfsigned.local (self-signed)"},
		{"private CA", privateCA.URL(), "cert: signed by an unknown authority: leaf CN=localhost, issuer CN=vigil checktest CA"},
		{"chain", chain.Serve(t).URL, "cert: signed by an unknown authority: leaf CN=vigil test leaf, issuer CN=vigil test intermediate; " +
			"the chain ends at CN=vigil test intermediate, issued by CN=vigil test root"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			h, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{}, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			res := h.Run(ctx, checks.Target{Name: "o", URL: c.url})
			if res.Cause != checks.CauseCert || res.Err != c.want {
				t.Errorf("http: cause %s err %q\nwant cert %q", res.Cause, res.Err, c.want)
			}
			tc, err := checks.NewTLS(checks.TLSSpec{}, checks.Expect{}, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res = tc.Run(ctx, checks.Target{Name: "o", URL: strings.Replace(c.url, "https://", "tls://", 1)})
			if res.Cause != checks.CauseCert || res.Err != c.want {
				t.Errorf("tls: cause %s err %q\nwant cert %q", res.Cause, res.Err, c.want)
			}
		})
	}
}
