package proxy

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// certFor writes a self-signed ECDSA certificate for names and its key, and
// returns their paths.
func certFor(t *testing.T, names ...string) (certFile, keyFile string) {
	t.Helper()
	tmpl := serverCertTemplate(names[0])
	tmpl.DNSNames = names
	certFile, keyFile, _ = writeSelfSigned(t, tmpl, newECKey(t))
	return certFile, keyFile
}

// TestTLSListenerCertBySNI: with certs, the TLS listener serves each client
// the certificate covering the name it asks for (SNI; wildcards too), the
// first that matches, and cert_file's to a client asking for another name
// or none (was: one certificate for every name).
func TestTLSListenerCertBySNI(t *testing.T) {
	cfg := pool1(PolicyFirst, newBackend(t, "a").srv.URL)
	ca, ka := certFor(t, "a.example")
	cb, kb := certFor(t, "*.b.example", "b.example")
	cx, kx := certFor(t, "x.b.example") // exact: wins over the wildcard listed before it
	cfg.Certs = []CertPair{{ca, ka}, {cb, kb}, {cx, kx}}
	addr, _ := runTLSProxy(t, cfg)
	for _, tc := range []struct{ sni, want string }{
		{"a.example", "a.example"},
		{"x.b.example", "x.b.example"},
		{"y.b.example", "*.b.example"},
		{"b.example", "*.b.example"},
		{"other.example", "vigil test"},
		{"", "vigil test"},
	} {
		// The test only looks at which certificate is served.
		c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: tc.sni, InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("SNI %q: %v", tc.sni, err)
		}
		got := c.ConnectionState().PeerCertificates[0].Subject.CommonName
		c.Close()
		if got != tc.want {
			t.Errorf("SNI %q: served %q, want %q", tc.sni, got, tc.want)
		}
	}
}

// TestTLSListenerVersionsAndSuites: the TLS listener refuses TLS 1.2
// cipher suites without AEAD (ECDHE-ECDSA-AES128-SHA, which Go's default
// takes), and with tls_min_version "1.3" every TLS 1.2 client.
func TestTLSListenerVersionsAndSuites(t *testing.T) {
	for _, tc := range []struct {
		min    string
		client *tls.Config
		ok     bool
	}{
		{"", &tls.Config{MaxVersion: tls.VersionTLS12}, true},
		{"", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}, false},
		{"", &tls.Config{MaxVersion: tls.VersionTLS11, MinVersion: tls.VersionTLS10}, false},
		{"1.3", &tls.Config{MaxVersion: tls.VersionTLS12}, false},
		{"1.3", &tls.Config{}, true},
	} {
		cfg := pool1(PolicyFirst, newBackend(t, "a").srv.URL)
		cfg.TLSMinVersion = tc.min
		addr, roots := runTLSProxy(t, cfg)
		tc.client.RootCAs = roots
		c, err := tls.Dial("tcp", addr, tc.client)
		if err == nil {
			c.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("tls_min_version %q, client max %x suites %v: handshake error %v, want ok=%v", tc.min, tc.client.MaxVersion, tc.client.CipherSuites, err, tc.ok)
		}
	}
}

// TestTLSListenerPairsCheckedAtValidate: a listener certificate that does
// not load (missing file, key of another certificate) is a config error
// naming the key and the files, so validate and a reload refuse what a
// start would fail on (was: validate said ok; the next start exited 1).
func TestTLSListenerPairsCheckedAtValidate(t *testing.T) {
	c1, k1 := certFor(t, "a.example")
	c2, k2 := certFor(t, "b.example")
	tmpl := serverCertTemplate("cn-only.example") // a common name, no subject alternative name
	cn, kn, _ := writeSelfSigned(t, tmpl, newECKey(t))
	origin := []OriginConfig{{Target: "a", URL: "http://127.0.0.1:1"}}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"key of another certificate", Config{TLSListen: "127.0.0.1:0", CertFile: c1, KeyFile: k2}, []string{"cert_file: " + c1, "key_file " + k2, "does not match"}},
		{"missing file", Config{TLSListen: "127.0.0.1:0", CertFile: c1 + ".gone", KeyFile: k1}, []string{"cert_file: " + c1 + ".gone", "no such file"}},
		{"bad SNI pair", Config{TLSListen: "127.0.0.1:0", CertFile: c1, KeyFile: k1, Certs: []CertPair{{c2, k1}}}, []string{"certs[0].cert_file: " + c2, "does not match"}},
		{"SNI pair half given", Config{TLSListen: "127.0.0.1:0", CertFile: c1, KeyFile: k1, Certs: []CertPair{{CertFile: c2}}}, []string{"certs[0]: cert_file and key_file are both required"}},
		{"certs without tls_listen", Config{Certs: []CertPair{{c2, k2}}}, []string{"certs: only with tls_listen"}},
		{"SNI pair without DNS names", Config{TLSListen: "127.0.0.1:0", CertFile: c1, KeyFile: k1, Certs: []CertPair{{cn, kn}}}, []string{"certs[0].cert_file: " + cn, "names no DNS name"}},
		{"bad min version", Config{TLSListen: "127.0.0.1:0", CertFile: c1, KeyFile: k1, TLSMinVersion: "1.1"}, []string{`tls_min_version: "1.1": want "1.2" or "1.3"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Pools = []PoolConfig{{Name: "w", Origins: origin}}
			err := tc.cfg.ValidateAndSetDefaults()
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	ok := Config{TLSListen: "127.0.0.1:0", CertFile: c1, KeyFile: k1, Certs: []CertPair{{c2, k2}}, Pools: []PoolConfig{{Name: "w", Origins: origin}}}
	if err := ok.ValidateAndSetDefaults(); err != nil {
		t.Fatalf("good pairs refused: %v", err)
	}
	if _, err := New(ok, nil, testLogger(t), WithRegistry(prometheus.NewRegistry())); err != nil {
		t.Fatal(err)
	}
}
