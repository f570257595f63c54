package checks_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// socksServer is a minimal SOCKS5 server (RFC 1928 CONNECT, RFC 1929
// user/password) on 127.0.0.1. It records each CONNECT's target as sent
// ("origin.invalid:80", "127.0.0.1:443") and resolves any name itself to
// 127.0.0.1, so a name only the proxy knows can be asked for.
type socksServer struct {
	ln   net.Listener
	auth string // "user:password" required, or "" for none
	// refuse answers every CONNECT with reply 5 (connection refused).
	refuse bool
	// silent reads the greeting and never answers.
	silent bool

	mu   sync.Mutex
	seen []string
}

func startSOCKS(t *testing.T, s *socksServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln = ln
	t.Cleanup(func() { ln.Close() })
	go func() {
		for i := 0; i < 100; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return ln.Addr().String()
}

func (s *socksServer) targets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func (s *socksServer) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil || hdr[0] != 5 {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return
	}
	if s.silent {
		io.Copy(io.Discard, c)
		return
	}
	want := byte(0)
	if s.auth != "" {
		want = 2
	}
	offered := false
	for _, m := range methods {
		offered = offered || m == want
	}
	if !offered {
		c.Write([]byte{5, 0xff})
		return
	}
	c.Write([]byte{5, want})
	if want == 2 {
		var b [2]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != 1 {
			return
		}
		user := make([]byte, b[1])
		io.ReadFull(c, user)
		io.ReadFull(c, b[:1])
		pass := make([]byte, b[0])
		io.ReadFull(c, pass)
		if string(user)+":"+string(pass) != s.auth {
			c.Write([]byte{1, 1})
			return
		}
		c.Write([]byte{1, 0})
	}
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[1] != 1 {
		return
	}
	var host string
	switch req[3] {
	case 1, 4:
		ip := make(net.IP, map[byte]int{1: 4, 4: 16}[req[3]])
		io.ReadFull(c, ip)
		host = ip.String()
	case 3:
		var n [1]byte
		io.ReadFull(c, n[:])
		name := make([]byte, n[0])
		io.ReadFull(c, name)
		host = string(name)
	default:
		return
	}
	var pb [2]byte
	io.ReadFull(c, pb[:])
	port := strconv.Itoa(int(binary.BigEndian.Uint16(pb[:])))
	s.mu.Lock()
	s.seen = append(s.seen, net.JoinHostPort(host, port))
	s.mu.Unlock()
	dialHost := host
	if net.ParseIP(host) == nil {
		dialHost = "127.0.0.1" // the proxy's own "resolver"
	}
	var up net.Conn
	var err error
	if !s.refuse {
		up, err = net.DialTimeout("tcp", net.JoinHostPort(dialHost, port), 2*time.Second)
	}
	if s.refuse || err != nil {
		c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer up.Close()
	c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0})
	go func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite() }()
	io.Copy(c, up)
}

// TestProxySOCKS5: with a socks5:// or socks5h:// http.proxy_url each
// connection is a SOCKS5 tunnel: https origins get TLS end to end
// (verified with http.tls, timed as tls), socks5h:// leaves the origin's
// name to the proxy while socks5:// resolves it here, a user and password
// are sent by RFC 1929; a proxy that refuses the login, wants one, refuses
// the target, is down or never answers fails the run with a cause and a
// message that name the proxy, and never the password.
func TestProxySOCKS5(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain ok") }))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure ok") }))
	defer secure.Close()
	ca := httptestCAFile(t, secure)
	open := &socksServer{}
	openAddr := startSOCKS(t, open)
	authed := &socksServer{auth: "probe:S0cksPa55"}
	authAddr := startSOCKS(t, authed)
	refusing := &socksServer{refuse: true}
	refuseAddr := startSOCKS(t, refusing)
	silentAddr := startSOCKS(t, &socksServer{silent: true})
	dead := deadAddr(t)
	_, plainPort, _ := net.SplitHostPort(strings.TrimPrefix(plain.URL, "http://"))
	secureHost := strings.TrimPrefix(secure.URL, "https://")

	cases := []struct {
		name, url, proxy string
		srv              *socksServer
		body             string
		cause            checks.Cause
		err              string
		seen             string // the CONNECT target the proxy got, "" for none
	}{
		{"https via socks5", secure.URL + "/", "socks5://" + openAddr, open, "secure ok", "", "", secureHost},
		{"http via socks5h, a name only the proxy resolves", "http://origin.invalid:" + plainPort + "/x", "socks5h://" + openAddr, open,
			"plain ok", "", "", "origin.invalid:" + plainPort},
		{"socks5 resolves here", "http://origin.invalid:" + plainPort + "/x", "socks5://" + openAddr, open, "", checks.CauseDNS,
			"dns: lookup origin.invalid: no such host (the origin's name, resolved here for a socks5:// http.proxy_url; socks5h:// has the proxy resolve it)", ""},
		{"user and password", secure.URL + "/", "socks5://probe:S0cksPa55@" + authAddr, authed, "secure ok", "", "", secureHost},
		{"wrong password", secure.URL + "/", "socks5h://probe:wr0ng-Secret9@" + authAddr, authed, "", checks.CauseConnect,
			"connect: proxy " + authAddr + " refused the SOCKS5 user and password (username/password authentication failed)", ""},
		{"login required", secure.URL + "/", "socks5://" + authAddr, authed, "", checks.CauseConnect,
			"connect: proxy " + authAddr + " requires SOCKS5 authentication (no acceptable authentication methods): set user:password in http.proxy_url", ""},
		{"target refused", "http://" + dead + "/", "socks5://probe:S0cksPa55@" + refuseAddr, refusing, "", checks.CauseConnect,
			"connect: proxy " + refuseAddr + " answered the SOCKS5 request for " + dead + ` with "connection refused"`, dead},
		{"proxy down", secure.URL + "/", "socks5h://probe:S0cksPa55@" + dead, nil, "", checks.CauseConnectRefused,
			"connection refused by " + dead + " (http.proxy_url " + dead + ")", ""},
		{"proxy silent", secure.URL + "/", "socks5://probe:S0cksPa55@" + silentAddr, nil, "", checks.CauseConnectTimeout,
			"connect: proxy " + silentAddr + " did not answer the SOCKS5 handshake within 500ms", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := 0
			if tc.srv != nil {
				before = len(tc.srv.targets())
			}
			e := checks.Expect{}
			if tc.body != "" {
				e.Body.Contains = []string{tc.body}
			}
			h, err := checks.NewHTTP(checks.HTTPSpec{URL: tc.url, ProxyURL: tc.proxy, TLS: checks.TLSOptions{CAFile: ca}}, e,
				checks.Options{Timeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r := h.Run(context.Background(), checks.Target{})
			if r.Cause != tc.cause || !strings.Contains(r.Err, tc.err) || r.OK != (tc.cause == "") {
				t.Fatalf("ok %v cause %q err %q\nwant cause %q with %q", r.OK, r.Cause, r.Err, tc.cause, tc.err)
			}
			if strings.Contains(r.Err, "S0cksPa55") || strings.Contains(r.Err, "wr0ng-Secret9") {
				t.Errorf("the message shows the proxy password: %s", r.Err)
			}
			if tc.srv != nil {
				got := tc.srv.targets()[before:]
				if tc.seen == "" && len(got) > 0 || tc.seen != "" && (len(got) != 1 || got[0] != tc.seen) {
					t.Errorf("proxy was asked for %q, want %q", got, tc.seen)
				}
			}
			if tc.cause == "" {
				if r.Phases.Connect <= 0 || r.Phases.TTFB <= 0 {
					t.Errorf("phases %+v: want connect and ttfb", r.Phases)
				}
				if strings.HasPrefix(tc.url, "https") && (r.Phases.TLS <= 0 || r.CertExpiry.IsZero()) {
					t.Errorf("no tls phase or certificate through the tunnel: %+v", r.Phases)
				}
			}
		})
	}
}

// TestProxyHTTPS: with an https:// http.proxy_url vigil speaks TLS to the
// proxy, verified with http.proxy_tls (the proxy's CA and name), while
// http.tls stays the origin's: the CONNECT tunnel carries TLS end to end
// with the origin. A proxy certificate that does not verify, or a proxy
// that never finishes the handshake, fails the run naming the proxy, and
// the proxy's certificate is not reported as the origin's.
func TestProxyHTTPS(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain ok") }))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure ok") }))
	defer secure.Close()
	originCA := httptestCAFile(t, secure)
	proxyCA := newTestCA(t, "vigil proxy test CA")

	px := &testProxy{auth: "probe:Pr0xyPa55"}
	px.srv = httptest.NewUnstartedServer(px)
	px.srv.TLS = &tls.Config{Certificates: []tls.Certificate{proxyCA.serverCert(t, "proxy.example.test", "127.0.0.1")}}
	px.srv.StartTLS()
	defer px.srv.Close()
	proxyAddr := strings.TrimPrefix(px.srv.URL, "https://")

	// A TLS proxy that accepts the connection and never answers the
	// ClientHello.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for i := 0; i < 10; i++ {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); c.SetDeadline(time.Now().Add(5 * time.Second)); io.Copy(io.Discard, c) }()
		}
	}()

	creds := "https://probe:Pr0xyPa55@"
	cases := []struct {
		name, url, proxy string
		proxyTLS         *checks.TLSOptions
		originCA         string
		body             string
		cause            checks.Cause
		err              string
		seen             string
	}{
		{"https origin through the tunnel", secure.URL + "/", creds + proxyAddr, &checks.TLSOptions{CAFile: proxyCA.file}, originCA,
			"secure ok", "", "", "CONNECT " + strings.TrimPrefix(secure.URL, "https://")},
		{"http origin in absolute form", plain.URL + "/x", creds + proxyAddr, &checks.TLSOptions{CAFile: proxyCA.file, ServerName: "proxy.example.test"}, "",
			"plain ok", "", "", "GET " + plain.URL + "/x"},
		{"proxy insecure_skip_verify", plain.URL + "/x", creds + proxyAddr, &checks.TLSOptions{InsecureSkipVerify: true}, "",
			"plain ok", "", "", "GET " + plain.URL + "/x"},
		{"proxy verified against the system pool", secure.URL + "/", creds + proxyAddr, nil, originCA, "", checks.CauseCert,
			"cert: signed by an unknown authority: leaf CN=proxy.example.test, issuer CN=vigil proxy test CA (http.proxy_url " + proxyAddr + ")", ""},
		{"proxy_tls.server_name the certificate does not name", secure.URL + "/", creds + proxyAddr,
			&checks.TLSOptions{CAFile: proxyCA.file, ServerName: "other.example.test"}, originCA, "", checks.CauseCert,
			"cert: not valid for other.example.test (valid for proxy.example.test, 127.0.0.1) (http.proxy_url " + proxyAddr + ")", ""},
		{"origin verified with http.tls, not proxy_tls", secure.URL + "/", creds + proxyAddr, &checks.TLSOptions{CAFile: proxyCA.file}, "",
			"", checks.CauseCert, "cert: signed by an unknown authority", "CONNECT " + strings.TrimPrefix(secure.URL, "https://")},
		{"wrong proxy password", secure.URL + "/", "https://probe:wr0ng-Secret9@" + proxyAddr, &checks.TLSOptions{CAFile: proxyCA.file}, originCA,
			"", checks.CauseConnect, "connect: proxy " + proxyAddr + " answered CONNECT with 407 Proxy Authentication Required",
			"CONNECT " + strings.TrimPrefix(secure.URL, "https://")},
		{"proxy never finishes the handshake", secure.URL + "/", creds + silent.Addr().String(), nil, originCA, "", checks.CauseTLS,
			"tls: handshake not finished within 500ms (http.proxy_url " + silent.Addr().String() + ")", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(px.requests())
			e := checks.Expect{}
			if tc.body != "" {
				e.Body.Contains = []string{tc.body}
			}
			spec := checks.HTTPSpec{URL: tc.url, ProxyURL: tc.proxy, ProxyTLS: tc.proxyTLS, TLS: checks.TLSOptions{CAFile: tc.originCA}}
			h, err := checks.NewHTTP(spec, e, checks.Options{Timeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r := h.Run(context.Background(), checks.Target{})
			if r.Cause != tc.cause || !strings.Contains(r.Err, tc.err) || r.OK != (tc.cause == "") {
				t.Fatalf("ok %v cause %q err %q\nwant cause %q with %q", r.OK, r.Cause, r.Err, tc.cause, tc.err)
			}
			if strings.Contains(r.Err, "Pr0xyPa55") || strings.Contains(r.Err, "wr0ng-Secret9") {
				t.Errorf("the message shows the proxy password: %s", r.Err)
			}
			got := px.requests()[before:]
			if tc.seen == "" && len(got) > 0 || tc.seen != "" && (len(got) != 1 || got[0] != tc.seen) {
				t.Errorf("proxy saw %q, want %q", got, tc.seen)
			}
			switch {
			case tc.cause == "" && strings.HasPrefix(tc.url, "https"):
				if r.Phases.TLS <= 0 || r.CertExpiry.IsZero() {
					t.Errorf("no origin tls phase or certificate through the tunnel: %+v", r.Phases)
				}
			case tc.cause == "":
				// Only the proxy spoke TLS: its handshake is in connect,
				// and its certificate is not the origin's.
				if r.Phases.TLS != 0 || !r.CertExpiry.IsZero() || r.Phases.Connect <= 0 {
					t.Errorf("http origin via an https proxy: phases %+v cert expiry %v, want connect only", r.Phases, r.CertExpiry)
				}
			case strings.Contains(tc.err, "http.proxy_url"):
				if !r.CertExpiry.IsZero() {
					t.Errorf("the proxy's certificate is reported as the origin's: %v", r.CertExpiry)
				}
			}
		})
	}
}

// TestProxyURLSchemesConfig: the schemes, proxy_tls and SOCKS5 login
// limits are checked at load, with errors that never show the password.
func TestProxyURLSchemesConfig(t *testing.T) {
	long := strings.Repeat("u", 256)
	for _, tc := range []struct {
		spec     checks.HTTPSpec
		sentinel error
		want     string
	}{
		{checks.HTTPSpec{ProxyURL: "socks4://u:Hunter2pw@127.0.0.1:1080"}, checks.ErrBadURL,
			`http.proxy_url: "socks4://127.0.0.1:1080": scheme "socks4": want http://, https://, socks5:// or socks5h:// (SOCKS4 is not supported)`},
		{checks.HTTPSpec{ProxyURL: "ftp://proxy.example:21"}, checks.ErrBadURL, `http.proxy_url: "ftp://proxy.example:21": scheme "ftp": want http://, https://, socks5:// or socks5h://`},
		{checks.HTTPSpec{ProxyURL: "socks5://:Hunter2pw@127.0.0.1:1080"}, checks.ErrBadURL, `http.proxy_url: "socks5://127.0.0.1:1080": a SOCKS5 login needs a user (RFC 1929)`},
		{checks.HTTPSpec{ProxyURL: "socks5h://" + long + ":Hunter2pw@127.0.0.1:1080"}, checks.ErrBadURL, `a SOCKS5 user and password are at most 255 bytes each (RFC 1929)`},
		{checks.HTTPSpec{ProxyURL: "http://proxy.example:3128", ProxyTLS: &checks.TLSOptions{}}, checks.ErrConflict,
			`http.proxy_tls: applies to an https:// http.proxy_url only (the TLS with the origin is http.tls)`},
		{checks.HTTPSpec{ProxyURL: "https://u:Hunter2pw@proxy.example", ProxyTLS: &checks.TLSOptions{CAFile: "/nonexistent/ca.pem"}}, checks.ErrCAFile, `http.proxy_tls.ca_file: `},
	} {
		tc.spec.URL = "https://example.com/"
		_, err := checks.NewHTTP(tc.spec, checks.Expect{}, checks.Options{})
		if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "Hunter2pw") {
			t.Errorf("%s: err %v\nwant %v with %s", tc.spec.ProxyURL, err, tc.sentinel, tc.want)
		}
	}
	for _, ok := range []string{"https://proxy.example", "socks5://u:p@127.0.0.1", "SOCKS5H://127.0.0.1:1080"} {
		if _, err := checks.NewHTTP(checks.HTTPSpec{URL: "https://example.com/", ProxyURL: ok}, checks.Expect{}, checks.Options{}); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	spec := checks.HTTPSpec{ProxyURL: "https://proxy.example", ProxyTLS: &checks.TLSOptions{InsecureSkipVerify: true}}
	if err := spec.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	if w := spec.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "proxy_tls.insecure_skip_verify: true") {
		t.Errorf("warnings %q", w)
	}
}
