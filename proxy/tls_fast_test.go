package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// tlsFront is a proxy run with a TLS listener and the engine left to its
// default (fast).
type tlsFront struct {
	h     *harness
	addr  string // the TLS listener
	roots *x509.CertPool
}

func startTLSFront(t *testing.T, cfg Config) *tlsFront {
	t.Helper()
	certFile, keyFile, roots := selfSigned(t)
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	reg := prometheus.NewRegistry()
	p, err := New(cfg, nil, testLogger(t), WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	addrs := runProxyOn(t, p, 2)
	return &tlsFront{h: &harness{t: t, p: p, reg: reg}, addr: addrs[1], roots: roots}
}

// dial opens a TLS connection offering ALPN protos (none: no ALPN).
func (f *tlsFront) dial(t *testing.T, protos ...string) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", f.addr, &tls.Config{RootCAs: f.roots, NextProtos: protos})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (f *tlsFront) refused(code string) float64 {
	v, _ := f.h.metric("vigil_proxy_refused_total", map[string]string{"code": code})
	return v
}

// closedAfter reports whether c is closed after the answer just read: the
// next read ends (EOF or a reset), rather than waiting for another answer.
func closedAfter(t *testing.T, c net.Conn, br *bufio.Reader) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := br.ReadByte()
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// TestTLSListenerStrictFraming: on the default engine the TLS listener's
// HTTP/1.1 connections (ALPN http/1.1, or no ALPN) are framed as strictly
// as the plain listener's: a request with both Content-Length and
// Transfer-Encoding (the body of the one hides a second request from the
// other) or with a repeated Content-Length, even an equal one, is refused
// with 400 on a kept-alive connection, which then closes; no origin sees
// it, and the refusal is counted. A well-formed request before it reached
// the origin over the same connection, told the scheme was https.
func TestTLSListenerStrictFraming(t *testing.T) {
	a := newBackend(t, "a")
	f := startTLSFront(t, pool1(PolicyFirst, a.srv.URL))
	smuggled := "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, alpn := range [][]string{{"http/1.1"}, nil} {
		for _, tc := range []struct{ name, raw string }{
			{"Content-Length and Transfer-Encoding", "POST /cl-te HTTP/1.1\r\nHost: x\r\nContent-Length: " +
				strconv.Itoa(len(smuggled)) + "\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled},
			{"equal repeated Content-Length", "POST /dup HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello"},
		} {
			name := tc.name + " (ALPN " + strings.Join(alpn, ",") + ")"
			c := f.dial(t, alpn...)
			if got, want := c.ConnectionState().NegotiatedProtocol, strings.Join(alpn, ""); got != want {
				t.Fatalf("%s: ALPN %q, want %q", name, got, want)
			}
			br := bufio.NewReader(c)
			resp, body := roundTrip(t, c, br, "GET /first HTTP/1.1\r\nHost: x\r\nForwarded: for=192.0.2.1;proto=http\r\n\r\n")
			if resp.StatusCode != 200 || body != "ok a" || resp.Close {
				t.Fatalf("%s: first request: %d %q (Connection: close %v), want 200 \"ok a\" on a kept connection",
					name, resp.StatusCode, body, resp.Close)
			}
			a.mu.Lock()
			proto, fwd := a.last.Get("X-Forwarded-Proto"), a.last.Get("Forwarded")
			a.mu.Unlock()
			if proto != "https" || !strings.Contains(fwd, "proto=https") {
				t.Errorf("%s: the origin got X-Forwarded-Proto %q, Forwarded %q; want https", name, proto, fwd)
			}
			hits, refused := a.hits.Load(), f.refused("400")

			resp, body = roundTrip(t, c, br, tc.raw)
			if resp.StatusCode != http.StatusBadRequest || !resp.Close {
				t.Errorf("%s: got %d %q (Connection: close %v), want 400 and Connection: close",
					name, resp.StatusCode, body, resp.Close)
				continue
			}
			if !closedAfter(t, c, br) {
				t.Errorf("%s: the connection stayed open after the 400", name)
			}
			if n := a.hits.Load() - hits; n != 0 {
				t.Errorf("%s: the origin got %d requests from it, want 0", name, n)
			}
			if got := f.refused("400") - refused; got != 1 {
				t.Errorf("%s: vigil_proxy_refused_total{code=\"400\"} rose by %v, want 1", name, got)
			}
		}
	}
}

// TestTLSListenerRefusalsCounted: on the default engine, what the TLS
// listener's HTTP/1.1 connections get refused is answered and counted in
// vigil_proxy_refused_total as on the plain listener, and so is plain HTTP
// sent to the TLS port.
func TestTLSListenerRefusalsCounted(t *testing.T) {
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].Hosts = []string{"x"}
	cfg.MaxHeaderBytes = 1 << 10
	f := startTLSFront(t, cfg)
	for _, tc := range []struct {
		name, raw string
		code      int
	}{
		{"malformed header line", "GET / HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n", 400},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"head over max_header_bytes", "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 2<<10) + "\r\n\r\n", 431},
		{"unknown transfer coding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
		{"unknown expectation", "GET / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n", 417},
		{"HTTP/2.0 request line", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
		{"no pool for the host", "GET / HTTP/1.1\r\nHost: nowhere.test\r\n\r\n", 421},
	} {
		code := strconv.Itoa(tc.code)
		before := f.refused(code)
		c := f.dial(t, "http/1.1")
		resp, _ := roundTrip(t, c, bufio.NewReader(c), tc.raw)
		c.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: got %d, want %d", tc.name, resp.StatusCode, tc.code)
		}
		if got := f.refused(code) - before; got != 1 {
			t.Errorf("%s: vigil_proxy_refused_total{code=%q} rose by %v, want 1", tc.name, code, got)
		}
	}

	before := f.refused("400")
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, body := roundTrip(t, c, bufio.NewReader(c), "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "HTTP request to an HTTPS server") {
		t.Errorf("plain HTTP to the TLS port: %d %q, want 400 saying so", resp.StatusCode, body)
	}
	if got := f.refused("400") - before; got != 1 {
		t.Errorf("plain HTTP to the TLS port: vigil_proxy_refused_total{code=\"400\"} rose by %v, want 1", got)
	}
	if n := a.hits.Load(); n != 0 {
		t.Errorf("the origin got %d requests, want 0", n)
	}
}

// TestTLSListenerProtocols: on the default engine an HTTP client gets
// HTTP/2 from the TLS listener when it offers it (net/http's HTTP/2 server,
// as before) and HTTP/1.1 otherwise; origins are told https either way.
func TestTLSListenerProtocols(t *testing.T) {
	a := newBackend(t, "a")
	f := startTLSFront(t, pool1(PolicyFirst, a.srv.URL))
	for _, tc := range []struct {
		name  string
		tr    *http.Transport
		major int
	}{
		{"HTTP/2", &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.roots}, ForceAttemptHTTP2: true}, 2},
		{"HTTP/1.1", &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.roots},
			TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}, 1},
	} {
		client := &http.Client{Timeout: 10 * time.Second, Transport: tc.tr}
		for i := 0; i < 2; i++ { // the second over the kept connection
			resp, err := client.Get("https://" + f.addr + "/p")
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok a" || resp.ProtoMajor != tc.major {
				t.Fatalf("%s: %s %q over %s, want 200 \"ok a\" over HTTP/%d", tc.name, resp.Status, body, resp.Proto, tc.major)
			}
			a.mu.Lock()
			proto := a.last.Get("X-Forwarded-Proto")
			a.mu.Unlock()
			if proto != "https" {
				t.Errorf("%s: the origin got X-Forwarded-Proto %q, want https", tc.name, proto)
			}
		}
		tc.tr.CloseIdleConnections()
	}
}

// TestTLSListenerWebSocket: a WebSocket upgrade over the TLS listener's
// HTTP/1.1 reaches the origin told https, gets its 101, and the tunnel
// carries bytes both ways.
func TestTLSListenerWebSocket(t *testing.T) {
	var mu sync.Mutex
	var proto string
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		proto = r.Header.Get("X-Forwarded-Proto")
		mu.Unlock()
		websocketEcho(w, "echo: ", 2)
	}))
	defer origin.Close()
	f := startTLSFront(t, pool1(PolicyFirst, origin.URL))
	c := f.dial(t, "http/1.1")
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade over TLS: %v %v, want 101", resp, err)
	}
	for _, line := range []string{"one\n", "two\n"} {
		io.WriteString(c, line)
		if got, _ := br.ReadString('\n'); got != "echo: "+line {
			t.Fatalf("through the tunnel: %q, want %q", got, "echo: "+line)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if proto != "https" {
		t.Errorf("the origin got X-Forwarded-Proto %q, want https", proto)
	}
}

// TestTLSListenerClientGone: a TLS client that leaves (its close_notify
// alert, then the end of the stream) while the origin has not answered gets
// its try aborted well before try_timeout, as on the plain listener; a TLS
// client still waiting, with a second request pipelined behind the first,
// is not taken for gone.
func TestTLSListenerClientGone(t *testing.T) {
	b := newBackend(t, "a")
	b.mode.Store(modeHang)
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.Pools[0].Retry.TryTimeout = 20 * time.Second
	cfg.Pools[0].Retry.Budget = 30 * time.Second
	f := startTLSFront(t, cfg)
	c := f.dial(t, "http/1.1")
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	eventually(t, "the request reached the origin", func() bool { return b.hits.Load() == 1 })
	left := time.Now()
	c.Close()
	eventually(t, "the origin's connection closed", func() bool { return b.abandoned.Load() == 1 })
	if d := time.Since(left); d > 3*clientWatchInterval+time.Second {
		t.Errorf("the try was aborted %v after the client left, want within %v", d, 3*clientWatchInterval)
	}
	eventually(t, "the request counted as 499", func() bool {
		v, _ := f.h.metric("vigil_proxy_requests_total", map[string]string{"origin": noOrigin, "code": "499"})
		return v == 1
	})

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * clientWatchInterval)
		io.WriteString(w, "slow "+r.URL.Path)
	}))
	defer slow.Close()
	cfg = pool1(PolicyFirst, slow.URL)
	cfg.Pools[0].Retry.TryTimeout = 10 * time.Second
	f = startTLSFront(t, cfg)
	c = f.dial(t, "http/1.1")
	pipelineTwo(t, c)
}

// TestTLSListenerTimeouts: read_header_timeout cuts off a TLS client that
// stalls in its request head, and idle_timeout one that sends no next
// request, without an answer, as on the plain listener.
func TestTLSListenerTimeouts(t *testing.T) {
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.ReadHeaderTimeout = 300 * time.Millisecond
	cfg.IdleTimeout = 300 * time.Millisecond
	f := startTLSFront(t, cfg)

	c := f.dial(t, "http/1.1")
	start := time.Now()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n")
	if !closedAfter(t, c, bufio.NewReader(c)) {
		t.Fatal("a client stalled in its head still connected after 5s, want cut off after read_header_timeout 300ms")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stalled head cut off after %v, want about 300ms", d)
	}

	c = f.dial(t, "http/1.1")
	br := bufio.NewReader(c)
	if resp, body := roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "ok a" {
		t.Fatalf("request: %d %q", resp.StatusCode, body)
	}
	start = time.Now()
	if !closedAfter(t, c, br) {
		t.Fatal("an idle connection still open after 5s, want closed after idle_timeout 300ms")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("idle connection closed after %v, want about 300ms", d)
	}
}

// TestTLSListenerShutdown: when Run's context ends, requests in flight on
// the TLS listener over HTTP/1.1 (answered with Connection: close) and over
// HTTP/2 get their answers, an idle HTTP/1.1 connection is closed, and Run
// returns.
func TestTLSListenerShutdown(t *testing.T) {
	var slowIn atomic.Int32
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			slowIn.Add(1)
			time.Sleep(300 * time.Millisecond) // in flight when the shutdown begins
		}
		io.WriteString(w, "slow answer")
	}))
	defer origin.Close()
	certFile, keyFile, roots := selfSigned(t)
	cfg := pool1(PolicyFirst, origin.URL)
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	p, err := New(cfg, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	eventually(t, "listening", func() bool { return len(p.Addrs()) == 2 })
	addr := p.Addrs()[1].String()
	dial := func(proto string) *tls.Conn {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{proto}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}

	idle := dial("http/1.1")
	idleR := bufio.NewReader(idle)
	idle.SetDeadline(time.Now().Add(10 * time.Second))
	if resp, _ := roundTrip(t, idle, idleR, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("first request: %d (Connection: close %v)", resp.StatusCode, resp.Close)
	}
	h1 := dial("http/1.1")
	io.WriteString(h1, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	h2c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	type result struct {
		resp *http.Response
		body string
		err  error
	}
	h2res := make(chan result, 1)
	go func() {
		resp, err := h2c.Get("https://" + addr + "/slow")
		if err != nil {
			h2res <- result{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		h2res <- result{resp, string(b), err}
	}()
	eventually(t, "both slow requests at the origin", func() bool { return slowIn.Load() == 2 })
	cancel()

	resp, err := http.ReadResponse(bufio.NewReader(h1), nil)
	if err != nil {
		t.Fatalf("the in-flight HTTP/1.1 request got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "slow answer" || !resp.Close {
		t.Errorf("in-flight HTTP/1.1 answer during shutdown: %d %q Connection: close %v, want 200 and Connection: close",
			resp.StatusCode, body, resp.Close)
	}
	r := <-h2res
	if r.err != nil || r.resp.StatusCode != 200 || r.resp.ProtoMajor != 2 || r.body != "slow answer" {
		t.Errorf("in-flight HTTP/2 request during shutdown: %+v, want 200 \"slow answer\" over HTTP/2", r)
	}
	if !closedAfter(t, idle, idleR) {
		t.Error("an idle HTTP/1.1 connection is still open during the shutdown")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
}
