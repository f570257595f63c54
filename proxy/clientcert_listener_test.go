package proxy

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// testCA is a certificate authority that signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  any
	file string // the CA certificate as PEM
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key := newECKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
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

// client issues a client certificate for cn with a URI and a DNS name.
func (ca *testCA) client(t *testing.T, cn string) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key := newECKey(t)
	u, _ := url.Parse("spiffe://example.test/" + cn)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: []string{`Q"uote\Co`}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs: []*url.URL{u}, DNSNames: []string{cn + ".example.test"},
	}
	der, err := x509.CreateCertificate(nil, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf
}

// runTLSProxyReg is runTLSProxy keeping the proxy and its registry: it
// returns the plain and TLS addresses and the roots trusting the listener.
func runTLSProxyReg(t *testing.T, cfg Config) (*harness, string, string, *x509.CertPool) {
	t.Helper()
	certFile, keyFile, roots := selfSigned(t)
	cfg.Engine = EngineFast
	cfg.Listen = "127.0.0.1:0"
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	h := &harness{t: t, reg: prometheus.NewRegistry()}
	p, err := New(cfg, nil, testLogger(t), WithRegistry(h.reg))
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	addrs := runProxyOn(t, p, 2)
	return h, addrs[0], addrs[1], roots
}

// tlsGet sends GET path over TLS (HTTP/2 when h2) with the given client
// certificate (none when cert is nil) and extra header fields; it returns
// the status and the error of the exchange.
func tlsGet(t *testing.T, addr string, roots *x509.CertPool, cert *tls.Certificate, h2 bool, path string, hdr ...string) (int, http.Header, error) {
	t.Helper()
	tc := &tls.Config{RootCAs: roots}
	if cert != nil {
		// Sent whatever CAs the listener names (Go's client would
		// otherwise send none signed by another CA).
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "https://"+addr+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if h2 && resp.ProtoMajor != 2 {
		t.Fatalf("asked for HTTP/2, got %s", resp.Proto)
	}
	return resp.StatusCode, resp.Header, nil
}

// TestTLSListenerClientCertRequired: with client_ca_file, a client without
// a certificate, or with one another CA signed, fails the handshake and
// reaches no origin (each counted by reason); one with a certificate the CA
// signed is served over HTTP/1.1 and HTTP/2, and the origin gets it in
// X-Forwarded-Client-Cert, never a value the client sent.
func TestTLSListenerClientCertRequired(t *testing.T) {
	b := newBackend(t, "a")
	ca, other := newTestCA(t, "vigil client CA"), newTestCA(t, "someone else")
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile = ca.file
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	good, leaf := ca.client(t, "alice")
	bad, _ := other.client(t, "mallory")

	for _, h2 := range []bool{false, true} {
		if _, _, err := tlsGet(t, addr, roots, nil, h2, "/"); err == nil {
			t.Errorf("h2=%v: a client without a certificate was served", h2)
		}
		if _, _, err := tlsGet(t, addr, roots, &bad, h2, "/"); err == nil {
			t.Errorf("h2=%v: a client with another CA's certificate was served", h2)
		}
	}
	if n := b.hits.Load(); n != 0 {
		t.Fatalf("the origin got %d requests from clients without a valid certificate", n)
	}
	eventually(t, "handshake errors counted", func() bool {
		m, _ := h.metric("vigil_proxy_tls_handshake_errors_total", map[string]string{"reason": "client_cert_missing"})
		i, _ := h.metric("vigil_proxy_tls_handshake_errors_total", map[string]string{"reason": "client_cert_invalid"})
		return m == 2 && i == 2
	})

	sum := sha256.Sum256(leaf.Raw)
	want := `Hash=` + hex.EncodeToString(sum[:]) + `;Subject="CN=alice,O=Q\\\"uote\\\\Co";URI="spiffe://example.test/alice";DNS="alice.example.test"`
	for _, h2 := range []bool{false, true} {
		code, _, err := tlsGet(t, addr, roots, &good, h2, "/", "X-Forwarded-Client-Cert", `Hash=00;Subject="CN=admin"`)
		if err != nil || code != 200 {
			t.Fatalf("h2=%v: client with a valid certificate: %d %v", h2, code, err)
		}
		b.mu.Lock()
		got := b.last["X-Forwarded-Client-Cert"]
		b.mu.Unlock()
		if len(got) != 1 || got[0] != want {
			t.Errorf("h2=%v: origin got X-Forwarded-Client-Cert %q, want [%s]", h2, got, want)
		}
	}
}

// TestTLSListenerClientCertOptional: with client_auth optional, a client
// without a certificate is served without X-Forwarded-Client-Cert (its own
// removed); one with a certificate that does not verify is still refused.
func TestTLSListenerClientCertOptional(t *testing.T) {
	b := newBackend(t, "a")
	ca, other := newTestCA(t, "vigil client CA"), newTestCA(t, "someone else")
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.ClientCAFile, cfg.ClientAuth = ca.file, ClientAuthOptional
	_, _, addr, roots := runTLSProxyReg(t, cfg)
	code, _, err := tlsGet(t, addr, roots, nil, false, "/", "X-Forwarded-Client-Cert", `Hash=00;Subject="CN=admin"`)
	if err != nil || code != 200 {
		t.Fatalf("client without a certificate (optional): %d %v", code, err)
	}
	b.mu.Lock()
	got, ok := b.last["X-Forwarded-Client-Cert"]
	b.mu.Unlock()
	if ok {
		t.Errorf("origin got the client's own X-Forwarded-Client-Cert %q", got)
	}
	bad, _ := other.client(t, "mallory")
	if _, _, err := tlsGet(t, addr, roots, &bad, false, "/"); err == nil {
		t.Error("a client with another CA's certificate was served (optional)")
	}
}

// TestClientCertHeaderDroppedOnPlainListener: without client certificates,
// a client-sent X-Forwarded-Client-Cert (or its underscore look-alike)
// never reaches the origin, which could take it for the proxy's.
func TestClientCertHeaderDroppedOnPlainListener(t *testing.T) {
	b := newBackend(t, "a")
	h := start(t, pool1(PolicyFirst, b.srv.URL), nil, false)
	code, _, _ := h.do("GET", "/", "", "X-Forwarded-Client-Cert", `Hash=00;Subject="CN=admin"`, "X_Forwarded_Client_Cert", "x")
	if code != 200 {
		t.Fatalf("GET: %d", code)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.last {
		if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), "X-Forwarded-Client-Cert") {
			t.Errorf("origin got %s: %q", k, b.last[k])
		}
	}
}

// TestClientCAFileReload: client_ca_file added by a reload applies to the
// next connection, without a restart.
func TestClientCAFileReload(t *testing.T) {
	b := newBackend(t, "a")
	ca := newTestCA(t, "vigil client CA")
	cfg := pool1(PolicyFirst, b.srv.URL)
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	if code, _, err := tlsGet(t, addr, roots, nil, false, "/"); err != nil || code != 200 {
		t.Fatalf("before the reload: %d %v", code, err)
	}
	next := h.p.state.Load().cfg
	next.ClientCAFile = ca.file
	if err := h.p.Reload(next); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tlsGet(t, addr, roots, nil, false, "/"); err == nil {
		t.Error("after a reload adding client_ca_file, a client without a certificate was served")
	}
	good, _ := ca.client(t, "alice")
	if code, _, err := tlsGet(t, addr, roots, &good, false, "/"); err != nil || code != 200 {
		t.Errorf("after the reload, a client with a valid certificate: %d %v", code, err)
	}
}

// TestRedirectHTTPS: with redirect_https, the plain listener answers a
// request for a served host with 308 to the same target on the TLS
// listener's port, asks no origin, and still refuses hosts no pool serves.
func TestRedirectHTTPS(t *testing.T) {
	b := newBackend(t, "a")
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.Pools[0].Hosts = []string{"www.example.test"}
	cfg.Pools = append(cfg.Pools, PoolConfig{Name: "v6", Hosts: []string{"*"}, PathPrefix: "/v6", Origins: []OriginConfig{{URL: b.srv.URL}}})
	cfg.RedirectHTTPS = true
	h, plain, addr, _ := runTLSProxyReg(t, cfg)
	_, tlsPort, _ := net.SplitHostPort(addr)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, host, target string
		code                 int
		loc                  string
	}{
		{"GET", "WWW.Example.Test:8080", "/a/b?x=1&y=%20", 308, "https://www.example.test:" + tlsPort + "/a/b?x=1&y=%20"},
		{"POST", "www.example.test", "/form", 308, "https://www.example.test:" + tlsPort + "/form"},
		{"HEAD", "[::1]:80", "/v6/", 308, "https://[::1]:" + tlsPort + "/v6/"},
		{"GET", "evil.example", "/", 421, ""},
		// The "*" pool redirects only hosts a certificate of the listener
		// covers: any other Host would go into Location as the client
		// wrote it.
		{"GET", "evil.example", "/v6/x", 421, ""},
		{"GET", "127.0.0.1", "/v6/x", 308, "https://127.0.0.1:" + tlsPort + "/v6/x"},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+plain+tc.target, strings.NewReader(""))
		req.Host = tc.host
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || resp.Header.Get("Location") != tc.loc {
			t.Errorf("%s %s Host %s: %d Location %q, want %d %q", tc.method, tc.target, tc.host, resp.StatusCode, resp.Header.Get("Location"), tc.code, tc.loc)
		}
		if tc.method == "HEAD" && len(body) != 0 {
			t.Errorf("HEAD redirect has a body: %q", body)
		}
	}
	// HTTP/1.0 without Host, on the "*" pool: no host to redirect to.
	c, err := net.Dial("tcp", plain)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET /v6/x HTTP/1.0\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
		t.Errorf("redirect without a Host: %v %v, want 400 and no Location", resp, err)
	}
	if n := b.hits.Load(); n != 0 {
		t.Errorf("the origin got %d requests while redirect_https was on", n)
	}
	for pool, want := range map[string]float64{"web": 2, "v6": 2} {
		if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"pool": pool, "origin": "none", "code": "308"}); v != want {
			t.Errorf("vigil_proxy_requests_total{pool=%s,origin=none,code=308} = %v, want %v", pool, v, want)
		}
	}
}

// TestHSTS: with hsts_max_age, answers on the TLS listener carry
// Strict-Transport-Security (the proxy's own 502 too) unless the origin
// sent its own, which is passed on alone; the plain listener adds none.
func TestHSTS(t *testing.T) {
	own := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strict-Transport-Security", "max-age=60")
		io.WriteString(w, "own")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go own.Serve(ln)
	t.Cleanup(func() { own.Close() })
	b := newBackend(t, "a")
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.Pools[0].PathPrefix = "/"
	cfg.Pools = append(cfg.Pools,
		PoolConfig{Name: "own", PathPrefix: "/own", Origins: []OriginConfig{{URL: "http://" + ln.Addr().String()}}},
		PoolConfig{Name: "dead", PathPrefix: "/dead", Origins: []OriginConfig{{URL: deadURL(t)}}})
	cfg.HSTSMaxAge, cfg.HSTSIncludeSubdomains = 365*24*time.Hour, true
	_, plain, addr, roots := runTLSProxyReg(t, cfg)
	const want = "max-age=31536000; includeSubDomains"
	for _, tc := range []struct {
		path string
		code int
		hsts []string
	}{
		{"/", 200, []string{want}},
		{"/own", 200, []string{"max-age=60"}},
		{"/dead", 502, []string{want}},
	} {
		for _, h2 := range []bool{false, true} {
			code, hdr, err := tlsGet(t, addr, roots, nil, h2, tc.path)
			if err != nil || code != tc.code || strings.Join(hdr.Values("Strict-Transport-Security"), "|") != strings.Join(tc.hsts, "|") {
				t.Errorf("h2=%v GET %s: %d Strict-Transport-Security %q (%v), want %d %q", h2, tc.path, code, hdr.Values("Strict-Transport-Security"), err, tc.code, tc.hsts)
			}
		}
	}
	resp, err := http.Get("http://" + plain + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v := resp.Header.Values("Strict-Transport-Security"); len(v) != 0 {
		t.Errorf("plain listener answer has Strict-Transport-Security %q", v)
	}
	// The proxy's refusals before routing carry it too (nginx's "always").
	tc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for _, tc2 := range []struct {
		method, host string
		code         int
	}{{"TRACE", "", 405}, {"GET", "", 400}} {
		req, _ := http.NewRequest(tc2.method, "https://"+addr+"/a/..;/b", nil)
		if tc2.method == "TRACE" {
			req.URL.Path = "/"
		}
		resp, err := tc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc2.code || resp.Header.Get("Strict-Transport-Security") != want {
			t.Errorf("%s refused on the TLS listener: %d, Strict-Transport-Security %q; want %d with it", tc2.method, resp.StatusCode, resp.Header.Get("Strict-Transport-Security"), tc2.code)
		}
	}
}

// TestClientCertAndHSTSConfigErrors: each mistake names its key.
func TestClientCertAndHSTSConfigErrors(t *testing.T) {
	certFile, keyFile, _ := selfSigned(t)
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600)
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"ca without tls", func(c *Config) { c.TLSListen = ""; c.ClientCAFile = notPEM }, "client_ca_file: only with tls_listen"},
		{"redirect without tls", func(c *Config) { c.TLSListen = ""; c.RedirectHTTPS = true }, "redirect_https: only with tls_listen"},
		{"hsts without tls", func(c *Config) { c.TLSListen = ""; c.HSTSMaxAge = time.Hour }, "hsts_max_age: only with tls_listen"},
		{"no PEM", func(c *Config) { c.ClientCAFile = notPEM }, "client_ca_file: " + notPEM + ": no PEM certificate in it"},
		{"missing file", func(c *Config) { c.ClientCAFile = notPEM + ".gone" }, "client_ca_file: open " + notPEM + ".gone"},
		{"bad client_auth", func(c *Config) { c.ClientAuth = "always" }, `client_auth: "always": want "require" or "optional"`},
		{"client_auth alone", func(c *Config) { c.ClientAuth = "optional" }, "client_auth: only with client_ca_file"},
		{"fractional hsts", func(c *Config) { c.HSTSMaxAge = 1500 * time.Millisecond }, "hsts_max_age: 1.5s: whole seconds only"},
		{"negative hsts", func(c *Config) { c.HSTSMaxAge = -time.Second }, "hsts_max_age: -1s is negative"},
		{"subdomains alone", func(c *Config) { c.HSTSIncludeSubdomains = true }, "hsts_include_subdomains: only with hsts_max_age"},
	} {
		cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
		cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
		tc.mod(&cfg)
		err := cfg.ValidateAndSetDefaults()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
