package proxy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// newCRLCA is newTestCA for a CA that may sign CRLs (key usage cRLSign).
func newCRLCA(t *testing.T, name string) *testCA {
	t.Helper()
	key := newECKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	file := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	return &testCA{cert: cert, key: key, file: file}
}

// intermediate issues a CA certificate under ca; its file is the
// intermediate's own PEM.
func (ca *testCA) intermediate(t *testing.T, name string) *testCA {
	t.Helper()
	key := newECKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(nil, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	file := filepath.Join(t.TempDir(), "inter.pem")
	os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	return &testCA{cert: cert, key: key, file: file}
}

// crlDER is a CRL ca signs revoking the given certificates, valid until
// next (x509.CreateRevocationList).
func crlDER(t *testing.T, ca *testCA, next time.Time, revoked ...*x509.Certificate) []byte {
	t.Helper()
	tmpl := &x509.RevocationList{Number: big.NewInt(time.Now().UnixNano()), ThisUpdate: time.Now().Add(-time.Minute), NextUpdate: next}
	for _, c := range revoked {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{
			SerialNumber: c.SerialNumber, RevocationTime: time.Now().Add(-time.Minute), ReasonCode: 1, // keyCompromise
		})
	}
	der, err := x509.CreateRevocationList(nil, tmpl, ca.cert, ca.key.(crypto.Signer))
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// writeCRLs writes the CRLs as PEM to path (rewriting it in place).
func writeCRLs(t *testing.T, path string, ders ...[]byte) {
	t.Helper()
	var b []byte
	for _, d := range ders {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: d})...)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// runCRLProxy is runTLSProxyReg logging to the returned buffer.
func runCRLProxy(t *testing.T, cfg Config) (*harness, string, *x509.CertPool, *tryLogs) {
	t.Helper()
	certFile, keyFile, roots := selfSigned(t)
	cfg.Engine = EngineFast
	cfg.Listen = "127.0.0.1:0"
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	logs := &tryLogs{}
	h := &harness{t: t, reg: prometheus.NewRegistry()}
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(logs, nil)), WithRegistry(h.reg))
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	addrs := runProxyOn(t, p, 2)
	return h, addrs[1], roots, logs
}

// TestClientCRLRefusesRevoked: with client_crl_file, a client certificate
// the CRL lists fails the handshake over HTTP/1.1 and HTTP/2, reaches no
// origin, is counted as client_cert_revoked and logged with its serial and
// subject; the CA's other certificate is served.
func TestClientCRLRefusesRevoked(t *testing.T) {
	b := newBackend(t, "a")
	ca := newCRLCA(t, "vigil client CA")
	alice, _ := ca.client(t, "alice")
	bob, bobLeaf := ca.client(t, "bob")
	crl := filepath.Join(t.TempDir(), "clients.crl")
	writeCRLs(t, crl, crlDER(t, ca, time.Now().Add(time.Hour), bobLeaf))
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile, cfg.ClientCRLFile = ca.file, crl
	h, addr, roots, logs := runCRLProxy(t, cfg)

	for _, h2 := range []bool{false, true} {
		if code, _, err := tlsGet(t, addr, roots, &alice, h2, "/"); err != nil || code != 200 {
			t.Fatalf("h2=%v: a certificate the CRL does not list: %d %v", h2, code, err)
		}
		hits := b.hits.Load()
		_, _, err := tlsGet(t, addr, roots, &bob, h2, "/")
		if err == nil {
			t.Fatalf("h2=%v: a revoked certificate was served", h2)
		}
		if b.hits.Load() != hits {
			t.Errorf("h2=%v: the origin got the revoked client's request", h2)
		}
	}
	// The alert, read on a raw connection (over HTTP the client's error
	// depends on when the alert arrives: in TLS 1.3 the server judges the
	// certificate after the client's handshake is done).
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{bob}})
	if err == nil {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "bad certificate") {
		t.Errorf("the revoked client got %v, want the bad_certificate alert", err)
	}
	eventually(t, "revoked handshakes counted", func() bool {
		n, _ := h.metric("vigil_proxy_tls_handshake_errors_total", map[string]string{"reason": "client_cert_revoked"})
		return n == 3
	})
	if n, _ := h.metric("vigil_proxy_tls_handshake_errors_total", map[string]string{"reason": "client_cert_invalid"}); n != 0 {
		t.Errorf("client_cert_invalid counted %v revoked handshakes", n)
	}
	serial := serialHex(bobLeaf.SerialNumber)
	lines := logs.lines("client certificate revoked", "serial="+serial, "CN=bob")
	// Rate-limited per certificate: the second refusal within a minute is
	// held back and counted in the next line.
	if len(lines) != 1 {
		t.Errorf("want one log line with the serial %s and subject of the revoked certificate, got %q", serial, logs.String())
	}
	if strings.Contains(logs.String(), "PRIVATE KEY") || strings.Contains(logs.String(), "BEGIN") {
		t.Errorf("the log holds PEM: %q", logs.String())
	}
}

// TestClientCRLReload: a reload that reads a rewritten client_crl_file
// revoking the other certificate flips which one is served: a connection
// kept open with the now revoked certificate gets 403 on its next request
// (HTTP/1.1 and HTTP/2) and reaches no origin, a new handshake with it
// fails, a resumed TLS session included, and the certificate no longer
// listed is served.
func TestClientCRLReload(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		b := newBackend(t, "a")
		ca := newCRLCA(t, "vigil client CA")
		alice, aliceLeaf := ca.client(t, "alice")
		bob, bobLeaf := ca.client(t, "bob")
		crl := filepath.Join(t.TempDir(), "clients.crl")
		writeCRLs(t, crl, crlDER(t, ca, time.Now().Add(time.Hour), bobLeaf))
		cfg := pool1(PolicyFirst, b.srv.URL)
		cfg.ClientCAFile, cfg.ClientCRLFile = ca.file, crl
		h, addr, roots, logs := runCRLProxy(t, cfg)

		kept := certGetter(t, addr, roots, &alice, h2)
		if code := kept(); code != 200 {
			t.Fatalf("h2=%v: alice before the reload: %d", h2, code)
		}
		// New connections that resume alice's TLS session.
		resumed := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ClientSessionCache: tls.NewLRUClientSessionCache(4),
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &alice, nil }},
			DisableKeepAlives: true, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
		t.Cleanup(resumed.CloseIdleConnections)
		getResumed := func() (*http.Response, error) {
			resp, err := (&http.Client{Transport: resumed, Timeout: 10 * time.Second}).Get("https://" + addr + "/")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			return resp, err
		}
		didResume := false
		for i := 0; i < 3 && !didResume; i++ {
			resp, err := getResumed()
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("h2=%v: alice on a new connection: %v", h2, err)
			}
			didResume = resp.TLS.DidResume
		}
		if !didResume {
			t.Fatalf("h2=%v: the listener resumed no TLS session; the resumption case is not tested", h2)
		}
		if _, _, err := tlsGet(t, addr, roots, &bob, h2, "/"); err == nil {
			t.Fatalf("h2=%v: bob, revoked, was served before the reload", h2)
		}

		writeCRLs(t, crl, crlDER(t, ca, time.Now().Add(time.Hour), aliceLeaf))
		if err := h.p.Reload(h.p.state.Load().cfg); err != nil {
			t.Fatal(err)
		}
		hits := b.hits.Load()
		if code := kept(); code != 403 {
			t.Errorf("h2=%v: a connection kept open with a certificate the reload revoked: %d, want 403", h2, code)
		}
		if b.hits.Load() != hits {
			t.Errorf("h2=%v: the origin got the revoked connection's request", h2)
		}
		if lines := logs.lines("revoked since it was made", "serial="+serialHex(aliceLeaf.SerialNumber)); len(lines) != 1 {
			t.Errorf("h2=%v: want one line logging the kept connection's refusal, got %q", h2, logs.String())
		}
		if resp, err := getResumed(); err == nil {
			t.Errorf("h2=%v: a resumed session of a revoked certificate was served (%d, resumed %v)", h2, resp.StatusCode, resp.TLS.DidResume)
		}
		if _, _, err := tlsGet(t, addr, roots, &alice, h2, "/"); err == nil {
			t.Errorf("h2=%v: alice, revoked by the reload, was served on a new connection", h2)
		}
		if code, _, err := tlsGet(t, addr, roots, &bob, h2, "/"); err != nil || code != 200 {
			t.Errorf("h2=%v: bob, no longer revoked: %d %v", h2, code, err)
		}
		if b.hits.Load() != hits+1 {
			t.Errorf("h2=%v: the origin got %d requests after the reload, want bob's only", h2, b.hits.Load()-hits)
		}
	}
}

// TestClientCRLIntermediate: a CRL of the root CA that lists an
// intermediate CA refuses every client certificate that intermediate
// signed (the client sends the intermediate); a CRL of the intermediate
// (in client_ca_file too) refuses the leaf it lists only.
func TestClientCRLIntermediate(t *testing.T) {
	b := newBackend(t, "a")
	root := newCRLCA(t, "root CA")
	inter := root.intermediate(t, "issuing CA")
	chain := func(cn string) (tls.Certificate, *x509.Certificate) {
		c, leaf := inter.client(t, cn)
		c.Certificate = append(c.Certificate, inter.cert.Raw)
		return c, leaf
	}
	carol, _ := chain("carol")
	dave, daveLeaf := chain("dave")

	// The root's CRL revokes the intermediate.
	crl := filepath.Join(t.TempDir(), "root.crl")
	writeCRLs(t, crl, crlDER(t, root, time.Now().Add(time.Hour), inter.cert))
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile, cfg.ClientCRLFile = root.file, crl
	_, addr, roots, _ := runCRLProxy(t, cfg)
	for _, c := range []*tls.Certificate{&carol, &dave} {
		if _, _, err := tlsGet(t, addr, roots, c, false, "/"); err == nil {
			t.Errorf("%s: a certificate under a revoked intermediate was served", c.Leaf.Subject.CommonName)
		}
	}

	// Both CAs in client_ca_file, one file with both CRLs: the root's
	// revoking nothing, the intermediate's revoking dave.
	both := filepath.Join(t.TempDir(), "cas.pem")
	rootPEM, _ := os.ReadFile(root.file)
	interPEM, _ := os.ReadFile(inter.file)
	os.WriteFile(both, append(rootPEM, interPEM...), 0o600)
	crl2 := filepath.Join(t.TempDir(), "both.crl")
	writeCRLs(t, crl2, crlDER(t, root, time.Now().Add(time.Hour)), crlDER(t, inter, time.Now().Add(time.Hour), daveLeaf))
	cfg = pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile, cfg.ClientCRLFile = both, crl2
	_, addr, roots, _ = runCRLProxy(t, cfg)
	if code, _, err := tlsGet(t, addr, roots, &carol, false, "/"); err != nil || code != 200 {
		t.Errorf("carol, not revoked: %d %v", code, err)
	}
	if _, _, err := tlsGet(t, addr, roots, &dave, false, "/"); err == nil {
		t.Error("dave, revoked by the intermediate's CRL, was served")
	}
}

// TestClientCRLExpired: a CRL past its NextUpdate loads with a warning
// naming the file and the CRL; the certificates it lists stay refused and
// the others are served.
func TestClientCRLExpired(t *testing.T) {
	b := newBackend(t, "a")
	ca := newCRLCA(t, "vigil client CA")
	alice, _ := ca.client(t, "alice")
	bob, bobLeaf := ca.client(t, "bob")
	crl := filepath.Join(t.TempDir(), "clients.crl")
	// DER this time: the file may hold one DER CRL instead of PEM.
	if err := os.WriteFile(crl, crlDER(t, ca, time.Now().Add(-time.Second), bobLeaf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile, cfg.ClientCRLFile = ca.file, crl
	_, addr, roots, logs := runCRLProxy(t, cfg)
	if lines := logs.lines("level=WARN", "past its next update", crl, "CN=vigil client CA"); len(lines) != 1 {
		t.Errorf("want one warning about the expired CRL at start, got %q", logs.String())
	}
	if code, _, err := tlsGet(t, addr, roots, &alice, false, "/"); err != nil || code != 200 {
		t.Errorf("alice with an expired CRL not listing her: %d %v", code, err)
	}
	if _, _, err := tlsGet(t, addr, roots, &bob, false, "/"); err == nil {
		t.Error("bob, listed by an expired CRL, was served")
	}
	if lines := logs.lines("past its next update"); len(lines) != 1 {
		t.Errorf("the expired-CRL warning is repeated within the hour: %q", lines)
	}
}

// TestClientCRLConfigErrors: a client_crl_file that does not load, or
// that has no client_ca_file or tls_listen to go with, is a config error
// naming the key and the file.
func TestClientCRLConfigErrors(t *testing.T) {
	ca, other := newCRLCA(t, "vigil client CA"), newCRLCA(t, "someone else")
	noCRLSign := newTestCA(t, "vigil client CA") // same name, no cRLSign usage, other key
	dir := t.TempDir()
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o600)
		return p
	}
	pemCRL := func(der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}) }
	good := file("good.crl", pemCRL(crlDER(t, ca, time.Now().Add(time.Hour))))
	otherCRL := file("other.crl", pemCRL(crlDER(t, other, time.Now().Add(time.Hour))))
	garbage := file("garbage.crl", []byte("not a CRL\n"))
	badPEM := file("bad-pem.crl", pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: []byte{0x30, 0x03, 1, 2, 3}}))
	caPEM, _ := os.ReadFile(ca.file)
	certOnly := file("cert.pem", caPEM)
	second := file("second-bad.crl", append(pemCRL(crlDER(t, ca, time.Now().Add(time.Hour))), pemCRL(crlDER(t, other, time.Now().Add(time.Hour)))...))
	certFile, keyFile, _ := selfSigned(t)

	for _, tc := range []struct {
		name      string
		tlsListen bool
		caFile    string
		crlFile   string
		want      []string // substrings of the error, "" for none
	}{
		{"good", true, ca.file, good, nil},
		{"without client_ca_file", true, "", good, []string{"client_crl_file: only with client_ca_file"}},
		{"without tls_listen", false, "", good, []string{"client_crl_file: only with tls_listen"}},
		{"missing file", true, ca.file, filepath.Join(dir, "nope.crl"), []string{"client_crl_file: ", "nope.crl", "no such file"}},
		{"not a CRL", true, ca.file, garbage, []string{"client_crl_file: " + garbage + ": not a PEM or DER CRL"}},
		{"PEM CRL that does not parse", true, ca.file, badPEM, []string{"client_crl_file: " + badPEM + ": CRL 1: "}},
		{"PEM without a CRL", true, ca.file, certOnly, []string{"client_crl_file: " + certOnly + ": no PEM CRL"}},
		{"another CA's CRL", true, ca.file, otherCRL, []string{"client_crl_file: " + otherCRL + `: CRL 1 (issuer "CN=someone else"): not issued by a CA of client_ca_file ` + ca.file}},
		{"second CRL another CA's", true, ca.file, second, []string{"client_crl_file: " + second + `: CRL 2 (issuer "CN=someone else")`}},
		{"signature does not verify", true, noCRLSign.file, good, []string{"client_crl_file: " + good + `: CRL 1 (issuer "CN=vigil client CA"): its signature does not verify`, noCRLSign.file, "lacks the cRLSign key usage"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
			if tc.tlsListen {
				cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
			}
			cfg.ClientCAFile, cfg.ClientCRLFile = tc.caFile, tc.crlFile
			err := cfg.ValidateAndSetDefaults()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				if cfg.clientCRL == nil {
					t.Fatal("the CRL was not loaded")
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error with %q, got none", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// BenchmarkClientCRLCheck is the check every request on a TLS connection
// pays with client_crl_file set (clientCRL.stillValid): a lookup of the
// leaf's serial in a CRL of 10,000 entries. It allocates nothing.
func BenchmarkClientCRLCheck(b *testing.B) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vigil client CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, _ := x509.CreateCertificate(nil, caTmpl, caTmpl, key.Public(), key)
	caCert, _ := x509.ParseCertificate(caDER)
	leafDER, _ := x509.CreateCertificate(nil, &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject: pkix.Name{CommonName: "alice"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)},
		caCert, key.Public(), key)
	leaf, _ := x509.ParseCertificate(leafDER)
	ca := &testCA{cert: caCert, key: key}
	tmpl := &x509.RevocationList{Number: big.NewInt(1), ThisUpdate: time.Now(), NextUpdate: time.Now().Add(time.Hour)}
	for i := range 10000 {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{
			SerialNumber: new(big.Int).Lsh(big.NewInt(int64(i+1)), 64), RevocationTime: time.Now()})
	}
	der, err := x509.CreateRevocationList(nil, tmpl, ca.cert, ca.key.(crypto.Signer))
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(b.TempDir(), "big.crl")
	os.WriteFile(file, der, 0o600)
	c, err := loadClientCRL(file, "ca.pem", []*x509.Certificate{ca.cert})
	if err != nil {
		b.Fatal(err)
	}
	cs := &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf, ca.cert}}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.ReportAllocs()
	for b.Loop() {
		if !c.stillValid(log, cs, "127.0.0.1:1") {
			b.Fatal("revoked")
		}
	}
}
