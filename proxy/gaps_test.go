package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// netFront is one listener a Run-started proxy serves with net/http.
type netFront struct {
	name string
	dial func(t *testing.T) net.Conn
}

// runFronts starts cfg with Run on a plain listener with the given engine and
// a TLS listener, and returns the harness (for metrics), the fronts and the
// proxy.
func runFronts(t *testing.T, cfg Config, engineName string) (*harness, map[string]netFront) {
	t.Helper()
	certFile, keyFile, roots := selfSigned(t)
	cfg.Engine = engineName
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	reg := prometheus.NewRegistry()
	p, err := New(cfg, nil, testLogger(t), WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	addrs := runProxyOn(t, p, 2)
	plain, tlsAddr := addrs[0], addrs[1]
	fronts := map[string]netFront{
		engineName: {name: engineName, dial: func(t *testing.T) net.Conn {
			c, err := net.Dial("tcp", plain)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		"tls": {name: "tls", dial: func(t *testing.T) net.Conn {
			c, err := tls.Dial("tcp", tlsAddr, &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		"tls-plain": {name: "tls-plain", dial: func(t *testing.T) net.Conn {
			c, err := net.Dial("tcp", tlsAddr)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
	}
	return &harness{t: t, p: p, reg: reg}, fronts
}

// roundTrip writes raw on c and reads one answer with its body.
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader, raw string) (*http.Response, string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to %q: %v", raw[:min(len(raw), 40)], err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestRefusedCountedOnNetHTTP: on the stdlib engine and on the TLS
// listener, the requests net/http refuses itself before the proxy's handler
// runs (malformed head 400, head over max_header_bytes 431, unknown transfer
// coding 501, unknown expectation 417, plain HTTP sent to the TLS port 400)
// are counted in vigil_proxy_refused_total, also on a kept-alive connection
// after a first request was answered; the origin's own 4xx answers are not.
func TestRefusedCountedOnNetHTTP(t *testing.T) {
	a := newBackend(t, "a")
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An origin's 400 in the same form as net/http's own refusals.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "400 Bad Request")
	}))
	defer bad.Close()
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].Hosts = []string{"x"}
	cfg.Pools = append(cfg.Pools, PoolConfig{Name: "bad", Hosts: []string{"bad.test"}, Origins: []OriginConfig{{Target: "b", URL: bad.URL}}})
	cfg.MaxHeaderBytes = 1 << 10
	h, fronts := runFronts(t, cfg, EngineStdlib)

	refused := func(code string) float64 {
		v, _ := h.metric("vigil_proxy_refused_total", map[string]string{"code": code})
		return v
	}
	want := map[string]float64{}
	check := func(step string) {
		t.Helper()
		for _, code := range []string{"400", "417", "421", "431", "501"} {
			if got := refused(code); got != want[code] {
				t.Errorf("%s: vigil_proxy_refused_total{code=%q} = %v, want %v", step, code, got, want[code])
			}
		}
	}
	huge := "X-Big: " + strings.Repeat("b", 8<<10) + "\r\n"
	for _, name := range []string{EngineStdlib, "tls"} {
		f := fronts[name]
		for _, tc := range []struct {
			name, raw string
			code      int
		}{
			{"malformed header line", "GET / HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n", 400},
			{"malformed request line", "GET /\r\n\r\n", 400},
			{"head over max_header_bytes", "GET / HTTP/1.1\r\nHost: x\r\n" + huge + "\r\n", 431},
			{"unknown transfer coding", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
			{"unknown expectation", "GET / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n", 417},
		} {
			c := f.dial(t)
			resp, _ := roundTrip(t, c, bufio.NewReader(c), tc.raw)
			c.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("%s %s: got %d, want %d", name, tc.name, resp.StatusCode, tc.code)
			}
			want[resp.Status[:3]]++
			check(name + " " + tc.name)
		}

		// A kept-alive connection: answered requests (one of them the
		// origin's own 400, not counted), then one net/http refuses.
		c := f.dial(t)
		br := bufio.NewReader(c)
		if resp, body := roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "ok a" {
			t.Fatalf("%s: first request: %d %q", name, resp.StatusCode, body)
		}
		if resp, _ := roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: bad.test\r\n\r\n"); resp.StatusCode != http.StatusBadRequest || resp.Close {
			t.Fatalf("%s: origin's 400: got %d (Connection: close %v), want 400 on a kept connection", name, resp.StatusCode, resp.Close)
		}
		check(name + " origin's own 400")
		if resp, _ := roundTrip(t, c, br, "GET /y HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n"); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: later malformed head: got %d, want 400", name, resp.StatusCode)
		}
		want["400"]++
		c.Close()
		check(name + " kept-alive")

		// The router's refusal is counted once (by the router).
		c = f.dial(t)
		if resp, _ := roundTrip(t, c, bufio.NewReader(c), "GET /x HTTP/1.1\r\nHost: nowhere.test\r\n\r\n"); resp.StatusCode != http.StatusMisdirectedRequest {
			t.Fatalf("%s: unknown host: got %d, want 421", name, resp.StatusCode)
		}
		c.Close()
		want["421"]++
		check(name + " router's 421")
	}

	// Plain HTTP to the TLS port.
	c := fronts["tls-plain"].dial(t)
	resp, _ := roundTrip(t, c, bufio.NewReader(c), "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("plain HTTP to the TLS port: got %d, want 400", resp.StatusCode)
	}
	want["400"]++
	check("plain HTTP to the TLS port")

	text := h.scrape()
	for _, line := range []string{
		`vigil_proxy_refused_total{code="400"} 7`,
		`vigil_proxy_refused_total{code="417"} 2`,
		`vigil_proxy_refused_total{code="421"} 2`,
		`vigil_proxy_refused_total{code="431"} 2`,
		`vigil_proxy_refused_total{code="501"} 2`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}

// TestTLSListenerHTTP1: HTTP/1.1 on the TLS listener still tells origins the scheme was https, and WebSocket
// upgrades pass through it.
func TestTLSListenerHTTP1(t *testing.T) {
	a := newBackend(t, "a")
	_, fronts := runFronts(t, pool1(PolicyFirst, a.srv.URL), EngineFast)
	c := fronts["tls"].dial(t)
	defer c.Close()
	if st := c.(*tls.Conn).ConnectionState(); st.NegotiatedProtocol != "http/1.1" {
		t.Fatalf("ALPN %q, want http/1.1", st.NegotiatedProtocol)
	}
	br := bufio.NewReader(c)
	for i := 0; i < 2; i++ {
		if resp, body := roundTrip(t, c, br, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 200 || body != "ok a" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
	a.mu.Lock()
	proto := a.last.Get("X-Forwarded-Proto")
	a.mu.Unlock()
	if proto != "https" {
		t.Fatalf("X-Forwarded-Proto %q, want https", proto)
	}
}

// TestOptionsAsterisk: "OPTIONS *" (RFC 9110 §9.3.7) is answered by the
// proxy with 200 and Content-Length: 0 on both engines and the TLS listener,
// without asking an origin; the asterisk-form with another method is 400.
func TestOptionsAsterisk(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			a := newBackend(t, "a")
			_, fronts := runFronts(t, pool1(PolicyFirst, a.srv.URL), engineName)
			for _, name := range []string{engineName, "tls"} {
				f := fronts[name]
				c := f.dial(t)
				resp, body := roundTrip(t, c, bufio.NewReader(c), "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")
				c.Close()
				if resp.StatusCode != 200 || resp.Header.Get("Content-Length") != "0" || body != "" {
					t.Errorf("%s: OPTIONS *: %d Content-Length=%q body %q, want 200, 0, empty",
						name, resp.StatusCode, resp.Header.Get("Content-Length"), body)
				}
				c = f.dial(t)
				resp, body = roundTrip(t, c, bufio.NewReader(c), "OPTIONS * HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
				c.Close()
				if resp.StatusCode != 200 || body != "" {
					t.Errorf("%s: OPTIONS * with a body: %d %q, want 200", name, resp.StatusCode, body)
				}
				c = f.dial(t)
				resp, _ = roundTrip(t, c, bufio.NewReader(c), "GET * HTTP/1.1\r\nHost: x\r\n\r\n")
				c.Close()
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("%s: GET *: %d, want 400", name, resp.StatusCode)
				}
			}
			// An ordinary OPTIONS still goes to the origin.
			c := fronts[engineName].dial(t)
			resp, body := roundTrip(t, c, bufio.NewReader(c), "OPTIONS /x HTTP/1.1\r\nHost: x\r\n\r\n")
			c.Close()
			if resp.StatusCode != 200 || body != "ok a" {
				t.Errorf("OPTIONS /x: %d %q, want the origin's 200", resp.StatusCode, body)
			}
			if n := a.hits.Load(); n != 1 {
				t.Errorf("origin got %d requests, want 1 (only OPTIONS /x)", n)
			}
		})
	}
}

// tcpPair returns both ends of a 127.0.0.1 TCP connection.
func tcpPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// closedByPeer reports whether c's peer closed the connection (EOF within 5s).
func closedByPeer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return err == io.EOF
}

// TestTunnelSetClosedAfterCloseAll: a tunnel added after closeAll ran (on
// net/http a connection hijacked while shutdown was closing the tunnels) is
// closed at once instead of escaping the shutdown.
func TestTunnelSetClosedAfterCloseAll(t *testing.T) {
	var ts tunnelSet
	s1, c1 := tcpPair(t)
	if !ts.add(s1) {
		t.Fatal("add before closeAll refused")
	}
	if n := ts.closeAll(); n != 1 {
		t.Fatalf("closeAll closed %d, want 1", n)
	}
	if !closedByPeer(c1) {
		t.Fatal("tunnel open before closeAll not closed")
	}
	s2, c2 := tcpPair(t)
	if ts.add(s2) {
		t.Fatal("add after closeAll accepted")
	}
	if !closedByPeer(c2) {
		t.Fatal("tunnel added after closeAll not closed")
	}
}

// TestShutdownTunnelAfterGrace: a WebSocket upgrade whose origin answers
// 101 only after the shutdown grace ended (and after Run returned) gets no
// tunnel: on net/http the connection left Shutdown's view when hijacked, and
// is closed by the closed tunnel set; the fast engine closed it with the rest
// at the end of the grace.
func TestShutdownTunnelAfterGrace(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			old := shutdownGrace
			shutdownGrace = 300 * time.Millisecond
			defer func() { shutdownGrace = old }()
			release, arrived := make(chan struct{}), make(chan struct{}, 1)
			origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				arrived <- struct{}{}
				<-release
				websocketEcho(w, "echo: ", 0)
			}))
			defer origin.Close()
			defer close(release)
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.Engine = engineName
			p, err := New(cfg, nil, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- p.Run(ctx) }()
			eventually(t, "listening", func() bool { return len(p.Addrs()) == 1 })
			ws, err := net.Dial("tcp", p.Addrs()[0].String())
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			io.WriteString(ws, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
				t.Fatal("the upgrade never reached the origin")
			}
			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return after the grace")
			}
			release <- struct{}{}
			ws.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(ws, "one\n")
			got, err := io.ReadAll(ws)
			if strings.Contains(string(got), "echo") {
				t.Fatalf("a tunnel opened after the shutdown: %q", got)
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the connection stayed open after the shutdown (read %q)", got)
			}
		})
	}
}
