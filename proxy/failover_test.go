package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

func TestFailoverGETRetriedOn503(t *testing.T) {
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyFirst, urls(bad, good)...)
	cfg.Pools[0].Passive.Consecutive5xx = -1
	h := start(t, cfg, nil, false)
	code, body, _ := h.do("GET", "/x", "")
	if code != 200 || body != "ok good" {
		t.Fatalf("got %d %q, want the good origin's answer", code, body)
	}
	if bad.hits.Load() != 1 || good.hits.Load() != 1 {
		t.Fatalf("hits bad=%d good=%d, want 1 and 1", bad.hits.Load(), good.hits.Load())
	}
	if v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"cause": CauseStatus5xx}); v != 1 {
		t.Fatalf("retries_total{cause=status_5xx} = %v, want 1", v)
	}
}

func TestFailoverPOSTNotRetriedOn503(t *testing.T) {
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyFirst, urls(bad, good)...)
	cfg.Pools[0].Passive.Consecutive5xx = -1
	h := start(t, cfg, nil, false)
	// An allow-list: WebDAV's methods, a lower-case "post" (which some
	// frameworks upper-case) and unknown methods are not replayed either.
	notSafe := []string{"POST", "PUT", "PATCH", "LOCK", "MOVE", "post", "PURGE"}
	for _, m := range notSafe {
		code, _, _ := h.do(m, "/order", "item=1")
		if code != 503 {
			t.Fatalf("%s: got %d, want the origin's 503 passed through", m, code)
		}
	}
	if bad.hits.Load() != int64(len(notSafe)) || good.hits.Load() != 0 {
		t.Fatalf("hits bad=%d good=%d: a non-idempotent request was replayed", bad.hits.Load(), good.hits.Load())
	}
	// DELETE is idempotent (RFC 9110 §9.2.2): it moves on.
	if code, body, _ := h.do("DELETE", "/order/1", ""); code != 200 || body != "ok good" {
		t.Fatalf("DELETE: %d %q, want it moved to the good origin", code, body)
	}
	bad.hits.Store(0)
	good.hits.Store(0)
	// With an Idempotency-Key the POST is replay-safe.
	code, body, _ := h.do("POST", "/order", "item=1", "Idempotency-Key", "k1")
	if code != 200 || body != "ok good" || good.body != "item=1" {
		t.Fatalf("POST with Idempotency-Key: %d %q (good saw body %q)", code, body, good.body)
	}
}

func TestFailoverPOSTRetriedOnRefused(t *testing.T) {
	good := newBackend(t, "good")
	cfg := pool1(PolicyFirst, deadURL(t), good.srv.URL)
	h := start(t, cfg, nil, false)
	long := strings.Repeat("x", 200<<10) // larger than max_buffered_body: streamed
	for _, body := range []string{"small=1", long} {
		code, resp, _ := h.do("POST", "/order", body)
		if code != 200 || resp != "ok good" {
			t.Fatalf("got %d %q, want the POST moved to the good origin", code, resp)
		}
		if good.body != body {
			t.Fatalf("good origin received %d bytes, want %d", len(good.body), len(body))
		}
	}
	if v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"cause": CauseConnectRefused}); v != 2 {
		t.Fatalf("retries_total{cause=connect_refused} = %v, want 2", v)
	}
}

func TestFailover502WhenAllFail(t *testing.T) {
	cfg := pool1(PolicyRoundRobin, deadURL(t), deadURL(t), deadURL(t))
	h := start(t, cfg, nil, false)
	code, body, _ := h.do("GET", "/", "")
	if code != http.StatusBadGateway {
		t.Fatalf("got %d %q, want 502", code, body)
	}
	if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": noOrigin, "code": "502"}); v != 1 {
		t.Fatalf("requests_total{origin=none,code=502} = %v", v)
	}
}

func TestFailover504AfterBudget(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	for _, x := range []*backend{a, b, c} {
		x.mode.Store(modeHang)
	}
	cfg := pool1(PolicyRoundRobin, urls(a, b, c)...)
	cfg.Pools[0].Retry = RetryConfig{Tries: 3, TryTimeout: 100 * time.Millisecond, Budget: 250 * time.Millisecond}
	cfg.Pools[0].ConnectTimeout = 100 * time.Millisecond
	h := start(t, cfg, nil, false)
	code, body, _ := h.do("GET", "/", "")
	if code != http.StatusGatewayTimeout {
		t.Fatalf("got %d %q, want 504", code, body)
	}
	// The budget (250ms) allows at most 3 tries of 100ms; no origin twice.
	for _, x := range []*backend{a, b, c} {
		if n := x.hits.Load(); n > 1 {
			t.Fatalf("origin %s tried %d times in one request", x.name, n)
		}
	}
	if v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"cause": CauseTimeout}); v < 1 {
		t.Fatalf("retries_total{cause=timeout} = %v, want ≥ 1", v)
	}
	// A POST that timed out is not replayed.
	before := hitsOf(a, b, c)
	code, _, _ = h.do("POST", "/", "x=1")
	after := hitsOf(a, b, c)
	sent := 0
	for i := range after {
		sent += int(after[i] - before[i])
	}
	if code != http.StatusGatewayTimeout || sent != 1 {
		t.Fatalf("POST after timeout: %d, sent to %d origins, want 504 and 1", code, sent)
	}
}

func TestNoRetryAfterStreamingBegan(t *testing.T) {
	var firstHits, secondHits int
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		firstHits++
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		conn, _, _ := http.NewResponseController(w).Hijack()
		conn.Close()
	}))
	defer broken.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secondHits++
		io.WriteString(w, "ok")
	}))
	defer other.Close()
	h := start(t, pool1(PolicyFirst, broken.URL, other.URL), nil, false)
	code, body, _ := h.do("GET", "/", "")
	if code != 0 {
		t.Fatalf("client got %d %q; want a broken response (transport error)", code, body)
	}
	if firstHits != 1 || secondHits != 0 {
		t.Fatalf("hits %d/%d: retried after response bytes reached the client", firstHits, secondHits)
	}
	eventually(t, "in-flight count back to 0 after the aborted answer", func() bool {
		return h.origin("web", "o0").inflight.Load() == 0
	})
}

func TestLastResortWhenAllUnavailable(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.Pools[0].MaxEjected = 100
	src := &memSource{}
	h := start(t, cfg, src, false)
	now := time.Now()
	src.set(verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now), verdict("o1", "healthz", "eu", reporting.StateUnhealthy, now))
	h.pool("web").applyVerdicts(src.vs, now)
	if h.origin("web", "o0").Available() || h.origin("web", "o1").Available() {
		t.Fatal("both origins should be verdict-down")
	}
	code, body, _ := h.do("GET", "/", "")
	if code != 200 {
		t.Fatalf("got %d %q, want an answer from an unavailable origin as last resort", code, body)
	}
	// Drained origins are never tried, even as last resort.
	h.p.Drain("o0", "x")
	h.p.Drain("o1", "x")
	if code, _, _ := h.do("GET", "/", ""); code != http.StatusServiceUnavailable {
		t.Fatalf("all drained: got %d, want 503", code)
	}
}

func TestOpenProxyRefused(t *testing.T) {
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].Hosts = []string{"www.example.com", "*.cdn.example.com"}
	h := start(t, cfg, nil, false)
	raw := func(req string) string {
		c, err := net.Dial("tcp", h.front.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Status
	}
	tests := []struct{ name, req, want string }{
		{"absolute other host", "GET http://evil.example.net/ HTTP/1.1\r\nHost: evil.example.net\r\n\r\n", "400"},
		{"absolute other host, served Host header", "GET http://evil.example.net/ HTTP/1.1\r\nHost: www.example.com\r\n\r\n", "400"},
		{"connect", "CONNECT evil.example.net:443 HTTP/1.1\r\nHost: evil.example.net:443\r\n\r\n", "405"},
		{"unknown host", "GET / HTTP/1.1\r\nHost: other.example.org\r\n\r\n", "421"},
		{"served host", "GET / HTTP/1.1\r\nHost: www.example.com\r\n\r\n", "200"},
		{"served wildcard", "GET / HTTP/1.1\r\nHost: img.cdn.example.com\r\n\r\n", "200"},
		{"absolute served host", "GET http://www.example.com/ HTTP/1.1\r\nHost: www.example.com\r\n\r\n", "200"},
		{"absolute served host without a path", "GET http://www.example.com HTTP/1.1\r\nHost: www.example.com\r\n\r\n", "200"},
		{"trace", "TRACE / HTTP/1.1\r\nHost: www.example.com\r\n\r\n", "405"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := raw(tt.req); !strings.HasPrefix(got, tt.want) {
				t.Fatalf("got %q, want %s", got, tt.want)
			}
		})
	}
	if n := a.hits.Load(); n != 4 {
		t.Fatalf("origin saw %d requests, want only the 4 served ones", n)
	}
}

func TestHopByHopHeaders(t *testing.T) {
	var got http.Header
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		got.Set("Host", r.Host)
		w.Header().Set("Connection", "X-Private")
		w.Header().Set("X-Private", "secret")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Public", "yes")
		io.WriteString(w, "ok")
	}))
	defer origin.Close()
	h := start(t, pool1(PolicyFirst, origin.URL), nil, false)
	code, _, rh := h.do("GET", "/", "",
		"Connection", "X-Custom-Hop, keep-alive",
		"X-Custom-Hop", "1",
		"Keep-Alive", "timeout=9",
		"Proxy-Authorization", "Basic Zm9vOmJhcg==",
		"Proxy-Connection", "keep-alive",
		"Te", "trailers, deflate",
		"X-Forwarded-For", "203.0.113.9",
		"X-Forwarded-Proto", "https",
		"X-Forwarded-Port", "8443",
		"X-Forwarded-Prefix", "/evil",
		"X-Forwarded-Ssl", "on",
		"X-Forwarded-Scheme", "https",
		"X-Url-Scheme", "https",
		"Front-End-Https", "on",
		"X-Keep", "kept")
	if code != 200 {
		t.Fatal(code)
	}
	for _, k := range []string{"X-Custom-Hop", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "Upgrade"} {
		if v := got.Get(k); v != "" {
			t.Errorf("origin received hop-by-hop %s: %q", k, v)
		}
	}
	if got.Get("Te") != "trailers" {
		t.Errorf("Te: %q, want only \"trailers\"", got.Get("Te"))
	}
	if got.Get("X-Keep") != "kept" {
		t.Error("end-to-end header lost")
	}
	if xff := got.Get("X-Forwarded-For"); xff != "203.0.113.9, 127.0.0.1" {
		t.Errorf("X-Forwarded-For %q", xff)
	}
	for _, k := range []string{"X-Forwarded-Port", "X-Forwarded-Prefix", "X-Forwarded-Ssl", "X-Forwarded-Scheme", "X-Url-Scheme", "Front-End-Https"} {
		if v := got.Get(k); v != "" {
			t.Errorf("client-sent %s %q reached the origin", k, v)
		}
	}
	if got.Get("X-Forwarded-Proto") != "http" {
		t.Errorf("X-Forwarded-Proto %q: a client must not set it", got.Get("X-Forwarded-Proto"))
	}
	front := strings.TrimPrefix(h.front.URL, "http://")
	if got.Get("X-Forwarded-Host") != front || got.Get("Host") != front {
		t.Errorf("X-Forwarded-Host %q, Host %q, want %q", got.Get("X-Forwarded-Host"), got.Get("Host"), front)
	}
	if rh.Get("X-Private") != "" || rh.Get("Keep-Alive") != "" || rh.Get("X-Public") != "yes" {
		t.Errorf("response headers: %v", rh)
	}
}

func TestRequestLimits(t *testing.T) {
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.MaxBody = 1 << 10
	h := start(t, cfg, nil, false)
	if code, _, _ := h.do("POST", "/", strings.Repeat("x", 2<<10)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("got %d, want 413", code)
	}
	// Chunked (unknown length) bodies are bounded too.
	req, _ := http.NewRequest("POST", h.front.URL, io.MultiReader(strings.NewReader(strings.Repeat("y", 3<<10))))
	req.ContentLength = -1
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked: got %d, want 413", resp.StatusCode)
	}
	if a.hits.Load() != 0 {
		t.Fatal("an oversized body reached the origin")
	}
}

func TestSSEFlushed(t *testing.T) {
	release := make(chan struct{})
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, "data: second\n\n")
	}))
	defer origin.Close()
	defer close(release)
	h := start(t, pool1(PolicyFirst, origin.URL), nil, false)
	resp, err := h.client.Get(h.front.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("first event not delivered before the stream ended: %q %v", line, err)
	}
}

func TestWebSocketUpgrade(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "no upgrade", 400)
			return
		}
		websocketEcho(w, "echo: ", 1)
	}))
	defer origin.Close()
	h := start(t, pool1(PolicyFirst, origin.URL), nil, false)
	c, err := net.Dial("tcp", h.front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(c, "hello\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "echo: hello\n" {
		t.Fatalf("got %q %v", line, err)
	}
}

func TestRoutingByHostAndPrefix(t *testing.T) {
	api, web, img := newBackend(t, "api"), newBackend(t, "web"), newBackend(t, "img")
	cfg := Config{Pools: []PoolConfig{
		{Name: "web", Origins: []OriginConfig{{URL: web.srv.URL}}},
		{Name: "api", PathPrefix: "/api", Origins: []OriginConfig{{URL: api.srv.URL}}},
		{Name: "img", Hosts: []string{"img.example.com"}, Origins: []OriginConfig{{URL: img.srv.URL}}},
	}}
	h := start(t, cfg, nil, false)
	tests := []struct{ host, path, want string }{
		{"", "/", "ok web"},
		{"", "/api", "ok api"},
		{"", "/api/v1/x", "ok api"},
		{"", "/apix", "ok web"},
		{"img.example.com", "/api/x", "ok img"},
		{"img.example.com.", "/x", "ok img"}, // the fully qualified name
		// Routing matches the path with dot segments resolved and slashes
		// merged, as an origin resolves it: a prefix cannot be escaped.
		{"", "/api/../name", "ok web"},
		{"", "/api/%2e%2e/name", "ok web"},
		{"", "/name/../api/x", "ok api"},
		{"", "/./api/x", "ok api"},
		{"", "//api/x", "ok api"},
		{"", "/api;v=1/x", "ok api"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", h.front.URL+tt.path, nil)
		if tt.host != "" {
			req.Host = tt.host
		}
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != tt.want {
			t.Errorf("%s%s: got %q, want %q", tt.host, tt.path, b, tt.want)
		}
	}
	// A dot segment made by dropping path parameters ("/api/..;/admin",
	// also written with %3B) means /admin to Tomcat and /api/../admin to
	// nginx: refused, never routed by a guess.
	for _, p := range []string{"/api/..;/name", "/api/..%3B/name", "/name/.;x/api/y"} {
		req, _ := http.NewRequest("GET", h.front.URL+p, nil)
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.HasPrefix(string(b), "ok") {
			t.Errorf("%s: got %d %q, want 400", p, resp.StatusCode, b)
		}
	}
	// Empty labels are no host name ("..example.com" would match
	// "*.example.com").
	for _, host := range []string{"..img.example.com", ".img.example.com", "img..example.com"} {
		req, _ := http.NewRequest("GET", h.front.URL+"/", nil)
		req.Host = host
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("Host %q: got %d, want 400", host, resp.StatusCode)
		}
	}
}

func TestMetricsExistAtZero(t *testing.T) {
	a := newBackend(t, "a")
	h := start(t, pool1(PolicyFirst, a.srv.URL), nil, false)
	for _, c := range retryCauses {
		if v, ok := h.metric("vigil_proxy_retries_total", map[string]string{"pool": "web", "cause": c}); !ok || v != 0 {
			t.Errorf("retries_total{cause=%s}: %v %v", c, v, ok)
		}
	}
	for _, r := range ejectionReasons {
		if v, ok := h.metric("vigil_proxy_ejections_total", map[string]string{"origin": "o0", "reason": r}); !ok || v != 0 {
			t.Errorf("ejections_total{reason=%s}: %v %v", r, v, ok)
		}
	}
	if v, ok := h.metric("vigil_proxy_origin_available", map[string]string{"origin": "o0"}); !ok || v != 1 {
		t.Errorf("origin_available: %v %v", v, ok)
	}
	if _, ok := h.metric("vigil_proxy_requests_total", map[string]string{"origin": noOrigin, "code": "502"}); !ok {
		t.Error("requests_total{origin=none,code=502} missing")
	}
	h.do("GET", "/", "")
	if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": "o0", "code": "200"}); v != 1 {
		t.Errorf("requests_total{o0,200} = %v", v)
	}
	_ = fmt.Sprint()
}

func TestFailoverPOSTRetriedOnTLSFailure(t *testing.T) {
	// An https origin whose certificate nobody trusts: the handshake fails
	// before any request byte is sent, so even a POST moves on.
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "should not be reached")
	}))
	defer untrusted.Close()
	good := newBackend(t, "good")
	h := start(t, pool1(PolicyFirst, untrusted.URL, good.srv.URL), nil, false)
	code, body, _ := h.do("POST", "/", "a=1")
	if code != 200 || body != "ok good" || good.posts.Load() != 1 {
		t.Fatalf("got %d %q, want the POST moved on after the TLS failure", code, body)
	}
	if v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"cause": CauseTLS}); v != 1 {
		t.Fatalf("retries_total{cause=tls} = %v, want 1", v)
	}
}

func TestClassify(t *testing.T) {
	ctx := context.Background()
	timedOut, cancel := context.WithCancelCause(ctx)
	cancel(errTryTimeout)
	tests := []struct {
		name      string
		err       error
		ctx       context.Context
		cause     string
		connLevel bool
	}{
		{"dns", &dialError{err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}, ctx, CauseDNS, true},
		{"refused", &dialError{err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, ctx, CauseConnectRefused, true},
		{"connect timeout", &dialError{err: context.DeadlineExceeded}, ctx, CauseConnectTimeout, true},
		{"connect cut by try timeout", &dialError{err: context.Canceled}, timedOut, CauseConnectTimeout, true},
		{"tls", &dialError{err: errors.New("x509: unknown authority"), tls: true}, ctx, CauseTLS, true},
		{"timeout after sending", context.Canceled, timedOut, CauseTimeout, false},
		{"reset", syscall.ECONNRESET, ctx, CauseReset, false},
		{"eof", io.ErrUnexpectedEOF, ctx, CauseReset, false},
	}
	for _, tt := range tests {
		cause, conn := classify(fmt.Errorf("wrapped: %w", tt.err), tt.ctx)
		if cause != tt.cause || conn != tt.connLevel {
			t.Errorf("%s: got %s/%v, want %s/%v", tt.name, cause, conn, tt.cause, tt.connLevel)
		}
	}
}

func TestEarlyHintsSkipped(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "final")
	}))
	defer origin.Close()
	h := start(t, pool1(PolicyFirst, origin.URL), nil, false)
	for i := 0; i < 3; i++ { // also over a reused connection
		if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "final" {
			t.Fatalf("got %d %q, want the final answer", code, body)
		}
	}
}

func TestRetryBudgetCapsRetries(t *testing.T) {
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyRoundRobin, urls(bad, good)...)
	cfg.Pools[0].Passive.Consecutive5xx = -1
	cfg.Pools[0].Passive.SuccessRateStdev = -1
	h := start(t, cfg, nil, false)
	const n = 200
	passed503 := 0
	for i := 0; i < n; i++ {
		if code, _, _ := h.do("GET", "/", ""); code == 503 {
			passed503++
		}
	}
	retries, _ := h.metric("vigil_proxy_retries_total", map[string]string{"cause": CauseStatus5xx})
	denied, _ := h.metric("vigil_proxy_retry_budget_exhausted_total", map[string]string{"pool": "web"})
	// Half the requests meet the bad origin first; 20% of 200 + 10 may retry.
	if retries > 10+0.2*n+1 || retries < 10 {
		t.Fatalf("retries %v, want about 10 + 20%% of %d", retries, n)
	}
	if denied == 0 || passed503 == 0 {
		t.Fatalf("budget never refused a retry (denied %v, 503s passed %d)", denied, passed503)
	}
}

func TestFastPathKeepAlive(t *testing.T) {
	var conns atomic.Int64
	origin := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			w.Write([]byte("part1"))
			w.(http.Flusher).Flush()
			w.Write([]byte("part2"))
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "closing")
		default:
			io.WriteString(w, "body of "+r.Method)
		}
	}))
	origin.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	origin.Start()
	defer origin.Close()
	h := start(t, pool1(PolicyFirst, origin.URL), nil, false)
	steps := []struct{ method, path, want string }{
		{"HEAD", "/", ""}, {"GET", "/", "body of GET"}, {"GET", "/chunked", "part1part2"},
		{"HEAD", "/x", ""}, {"GET", "/y?q=1", "body of GET"}, {"GET", "/close", "closing"}, {"GET", "/", "body of GET"},
	}
	for _, s := range steps {
		code, body, _ := h.do(s.method, s.path, "")
		if code != 200 || body != s.want {
			t.Fatalf("%s %s: %d %q, want %q", s.method, s.path, code, body, s.want)
		}
	}
	// One connection until the origin closed it, then one more.
	if n := conns.Load(); n != 2 {
		t.Fatalf("origin saw %d connections, want 2 (keep-alive reuse, new one after Connection: close)", n)
	}
}

// TestMaxConns: an origin at its max_conns takes no new try — the next
// request goes to another origin — and when every origin is full the client
// gets 503 at once instead of piling onto an overloaded origin.
func TestMaxConns(t *testing.T) {
	slow, other := newBackend(t, "slow"), newBackend(t, "other")
	slow.mode.Store(modeHang)
	cfg := pool1(PolicyFirst, urls(slow, other)...)
	cfg.Pools[0].Origins[0].MaxConns = 1
	cfg.Pools[0].Retry.TryTimeout = 2 * time.Second
	cfg.Pools[0].Retry.Budget = 2 * time.Second
	h := start(t, cfg, nil, false)
	// One request hangs on "slow" (priority 1), filling it.
	go func() { _, _, _ = h.do("GET", "/hang", "") }()
	eventually(t, "slow to hold one request", func() bool { return slow.hits.Load() == 1 })
	if st := h.p.Origins(); !st[0].Full || st[0].MaxConns != 1 {
		t.Fatalf("origin status: %+v", st[0])
	}
	// The next request skips the full origin although policy first prefers it.
	code, body, _ := h.do("GET", "/next", "")
	if code != 200 || !strings.Contains(body, "other") || slow.hits.Load() != 1 {
		t.Fatalf("with slow full: %d %q, slow hits %d; want other to answer", code, body, slow.hits.Load())
	}
	// Every origin full: 503 without touching either.
	h.p.Drain("o1", "maintenance")
	if code, _, _ := h.do("GET", "/third", ""); code != http.StatusServiceUnavailable || slow.hits.Load() != 1 {
		t.Fatalf("all full or drained: %d, slow hits %d; want 503 and no new try", code, slow.hits.Load())
	}
}

// A client cannot pass its own client address or scheme to the origin:
// underscore look-alikes of the forwarding headers (which CGI, PHP and WSGI
// origins read as the real ones) are dropped, and a chain the client named
// in Connection is not extended.
func TestForwardedHeaderSpoofing(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
	}))
	defer origin.Close()
	h := start(t, pool1(PolicyFirst, origin.URL), nil, false)
	if code, _, _ := h.do("GET", "/", "",
		"X_Forwarded_For", "6.6.6.6", "X-Forwarded_Host", "evil.example", "x_forwarded_proto", "https",
		"X_Real_IP", "6.6.6.6", "X_Custom", "kept"); code != 200 {
		t.Fatal(code)
	}
	mu.Lock()
	for k := range got {
		if strings.Contains(k, "_") && !strings.EqualFold(k, "X_Custom") {
			t.Errorf("origin received %s: %q", k, got[k])
		}
	}
	if got.Get("X_Custom") != "kept" {
		t.Error("an ordinary header with an underscore was dropped")
	}
	mu.Unlock()
	if code, _, _ := h.do("GET", "/", "", "X-Forwarded-For", "6.6.6.6", "Connection", "X-Forwarded-For"); code != 200 {
		t.Fatal(code)
	}
	mu.Lock()
	defer mu.Unlock()
	if xff := got.Get("X-Forwarded-For"); xff != "127.0.0.1" {
		t.Errorf("X-Forwarded-For %q after the client named it in Connection, want only the client address", xff)
	}
	mu.Unlock()
	// X-Real-IP is the client address; a client's Forwarded is replaced
	// by this hop's element.
	if code, _, _ := h.do("GET", "/", "", "X-Real-IP", "7.7.7.7", "Forwarded", "for=8.8.8.8;host=evil.example;proto=https"); code != 200 {
		t.Fatal(code)
	}
	mu.Lock()
	if v := got.Values("X-Real-Ip"); len(v) != 1 || v[0] != "127.0.0.1" {
		t.Errorf("X-Real-IP %q, want the client address only", v)
	}
	front := strings.TrimPrefix(h.front.URL, "http://")
	if v := got.Values("Forwarded"); len(v) != 1 || v[0] != `for=127.0.0.1;host="`+front+`";proto=http` {
		t.Errorf("Forwarded %q, want only this hop's element", v)
	}
}
