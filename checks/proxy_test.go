package checks_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// testProxy is a forward HTTP proxy on 127.0.0.1: CONNECT tunnels and
// absolute-form requests, with Basic proxy authentication when auth is
// set. It records what it was asked for.
type testProxy struct {
	srv  *httptest.Server
	auth string // "user:password", or "" for none

	mu   sync.Mutex
	seen []string // "CONNECT 127.0.0.1:1234", "GET http://127.0.0.1:1234/x"
}

func newTestProxy(t *testing.T, auth string) *testProxy {
	p := &testProxy{auth: auth}
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *testProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func (p *testProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.URL.String()
	if r.Method == http.MethodConnect {
		target = r.Host
	}
	p.mu.Lock()
	p.seen = append(p.seen, r.Method+" "+target)
	p.mu.Unlock()
	if p.auth != "" && r.Header.Get("Proxy-Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte(p.auth)) {
		w.Header().Set("Proxy-Authenticate", `Basic realm="proxy"`)
		w.WriteHeader(http.StatusProxyAuthRequired)
		return
	}
	if r.Method != http.MethodConnect {
		r.RequestURI = ""
		r.Header.Del("Proxy-Authorization")
		resp, err := (&http.Transport{}).RoundTrip(r)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		return
	}
	up, err := net.DialTimeout("tcp", r.Host, 2*time.Second)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	defer up.Close()
	w.WriteHeader(http.StatusOK)
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	go func() { io.Copy(up, brw); up.(*net.TCPConn).CloseWrite() }()
	io.Copy(c, up)
}

// TestProxyURL: with http.proxy_url an https check goes through a CONNECT
// tunnel (TLS end to end, verified against the origin's name) and an http
// check as an absolute-form request, both carrying the proxy credentials
// of the URL; a proxy that refuses the tunnel fails the run with cause
// connect, one that does not listen with connect_refused, and neither
// message shows the password.
func TestProxyURL(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain ok") }))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure ok") }))
	defer secure.Close()
	ca := httptestCAFile(t, secure)
	px := newTestProxy(t, "probe:Pr0xyPa55")
	proxyAddr := strings.TrimPrefix(px.srv.URL, "http://")
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()

	cases := []struct {
		name, url, proxy string
		body             string
		cause            checks.Cause
		err              string
		seen             string
	}{
		{"https via CONNECT", secure.URL + "/", "http://probe:Pr0xyPa55@" + proxyAddr, "secure ok", "", "",
			"CONNECT " + strings.TrimPrefix(secure.URL, "https://")},
		{"http via absolute form", plain.URL + "/x", "http://probe:Pr0xyPa55@" + proxyAddr, "plain ok", "", "",
			"GET " + plain.URL + "/x"},
		{"wrong password", secure.URL + "/", "http://probe:wrong-Secret9@" + proxyAddr, "", checks.CauseConnect,
			"connect: proxy " + proxyAddr + " answered CONNECT with 407 Proxy Authentication Required",
			"CONNECT " + strings.TrimPrefix(secure.URL, "https://")},
		{"proxy down", secure.URL + "/", "http://probe:Pr0xyPa55@" + deadAddr, "", checks.CauseConnectRefused,
			"(http.proxy_url " + deadAddr + ")", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(px.requests())
			e := checks.Expect{}
			if tc.body != "" {
				e.Body.Contains = []string{tc.body}
			}
			h, err := checks.NewHTTP(checks.HTTPSpec{URL: tc.url, ProxyURL: tc.proxy, TLS: checks.TLSOptions{CAFile: ca}}, e,
				checks.Options{Timeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r := h.Run(context.Background(), checks.Target{})
			if r.Cause != tc.cause || !strings.Contains(r.Err, tc.err) {
				t.Fatalf("cause %q err %q, want %q containing %q", r.Cause, r.Err, tc.cause, tc.err)
			}
			if strings.Contains(r.Err, "Pr0xyPa55") || strings.Contains(r.Err, "wrong-Secret9") {
				t.Errorf("error shows the proxy password: %s", r.Err)
			}
			got := px.requests()[before:]
			if tc.seen == "" && len(got) > 0 || tc.seen != "" && (len(got) != 1 || got[0] != tc.seen) {
				t.Errorf("proxy saw %q, want %q", got, tc.seen)
			}
			if tc.cause == "" && strings.HasPrefix(tc.url, "https") && r.Phases.TLS <= 0 {
				t.Errorf("no tls phase through the tunnel: %+v", r.Phases)
			}
		})
	}
}

// TestProxyURLSilentConnect: a proxy that accepts the connection but never
// answers the CONNECT fails the run with cause connect_timeout naming the
// proxy, not as an origin that did not answer.
func TestProxyURLSilentConnect(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); c.SetDeadline(time.Now().Add(5 * time.Second)); io.Copy(io.Discard, c) }()
		}
	}()
	h, err := checks.NewHTTP(checks.HTTPSpec{URL: "https://127.0.0.1:1/", ProxyURL: "http://" + ln.Addr().String()}, checks.Expect{},
		checks.Options{Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r := h.Run(context.Background(), checks.Target{})
	if want := "connect: proxy " + ln.Addr().String() + " did not answer CONNECT within 300ms"; r.Cause != checks.CauseConnectTimeout || r.Err != want {
		t.Errorf("cause %q err %q, want connect_timeout %q", r.Cause, r.Err, want)
	}
}

// TestProxyURLConfig: a bad proxy_url is a config error naming the key
// that shows the URL without its password.
func TestProxyURLConfig(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"socks4://u:Hunter2pw@127.0.0.1:1080", `proxy_url: "socks4://127.0.0.1:1080": scheme "socks4": want http://, https://, socks5:// or socks5h://`},
		{"127.0.0.1:3128", `proxy_url: "127.0.0.1:3128": want scheme://[user:password@]host:port`},
		{"http://u:Hunter2pw@proxy.example:99999", `proxy_url: "http://proxy.example:99999": port "99999": want a number from 1 to 65535`},
		{"http://proxy.example:3128/path", `proxy_url: "http://proxy.example:3128/path": want no path or query`},
	} {
		_, err := checks.NewHTTP(checks.HTTPSpec{URL: "https://example.com/", ProxyURL: tc.url}, checks.Expect{}, checks.Options{})
		if !errors.Is(err, checks.ErrBadURL) || !strings.Contains(err.Error(), "http."+tc.want) || strings.Contains(err.Error(), "Hunter2pw") {
			t.Errorf("%s: err %v\nwant http.%s", tc.url, err, tc.want)
		}
	}
}
