package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net/http"
	"testing"
	"time"
)

// TestClientCertExpiredOnOpenConnection: a request on a connection whose
// client certificate expired after the handshake gets 403 and reaches no
// origin, over HTTP/1.1 and HTTP/2; the handshake alone checked the expiry,
// so a kept-alive connection went on being served, its certificate vouched
// for in X-Forwarded-Client-Cert.
func TestClientCertExpiredOnOpenConnection(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		b := newBackend(t, "a")
		ca := newTestCA(t, "ca")
		cfg := pool1(PolicyFirst, b.srv.URL)
		cfg.ClientCAFile = ca.file
		_, _, addr, roots := runTLSProxyReg(t, cfg)
		key := newECKey(t)
		notAfter := time.Now().Add(1500 * time.Millisecond)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "short"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		der, err := x509.CreateCertificate(nil, tmpl, ca.cert, key.Public(), ca.key)
		if err != nil {
			t.Fatal(err)
		}
		cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
		get := certGetter(t, addr, roots, &cert, h2)
		if code := get(); code != 200 {
			t.Fatalf("h2=%v with a valid certificate: %d", h2, code)
		}
		time.Sleep(time.Until(notAfter) + 200*time.Millisecond)
		hits := b.hits.Load()
		if code := get(); code != 403 {
			t.Errorf("h2=%v: a request after the client certificate expired: %d, want 403", h2, code)
		}
		if b.hits.Load() != hits {
			t.Errorf("h2=%v: the origin got the request", h2)
		}
	}
}

// certGetter returns a GET of / on addr over one kept-alive connection
// (HTTP/2 or HTTP/1.1) presenting cert, answering the status.
func certGetter(t *testing.T, addr string, roots *x509.CertPool, cert *tls.Certificate, h2 bool) func() int {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }},
		ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return func() int {
		resp, err := client.Get("https://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
}
