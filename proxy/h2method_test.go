package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHTTP2MalformedMethodRefused: an HTTP/2 :method that is not a token
// ("GET /x HTTP/1.1", "G@T") gets 400 before routing and is not a failure
// of any origin (was: 502 after every origin was tried, each charged a
// failed try, so 30 such streams ejected a healthy origin).
func TestHTTP2MalformedMethodRefused(t *testing.T) {
	bs := []*backend{newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")}
	cfg := pool1(PolicyRoundRobin, urls(bs...)...)
	cfg.Pools[0].Passive.Consecutive5xx = 2
	h, _, addr, roots := runTLSProxyReg(t, cfg)
	for i := 0; i < 10; i++ {
		method := []string{"GET /x HTTP/1.1", "G@T"}[i%2]
		_, fr := h2Open(t, addr, roots, [][2]string{{":method", method}, {":scheme", "https"}, {":authority", "x"}, {":path", "/m"}})
		if status, _ := h2Answer(t, fr); status != "400" {
			t.Fatalf(":method %q: %s, want 400", method, status)
		}
	}
	for _, o := range h.p.Origins() {
		if !o.Available || o.PassiveEjected {
			t.Errorf("origin %s out after malformed methods: %+v", o.Name, o.Why)
		}
	}
	if n := h.metricSum("vigil_proxy_tries_total"); n != 0 {
		t.Errorf("%v tries counted against origins for requests no origin got", n)
	}
	if v, _ := h.metric("vigil_proxy_refused_total", map[string]string{"code": "400"}); v != 10 {
		t.Errorf("vigil_proxy_refused_total{code=400} = %v, want 10", v)
	}
	for _, b := range bs {
		if n := b.hits.Load(); n != 0 {
			t.Errorf("origin %s got %d requests", b.name, n)
		}
	}
}

// TestHTTP2ContentLengthChecked: an HTTP/2 request whose content-length is
// not one number, or announces a body its stream does not carry, gets 400
// (RFC 9113 §8.1.1; nginx too) instead of reaching the origin as an empty
// POST.
func TestHTTP2ContentLengthChecked(t *testing.T) {
	b := newBackend(t, "a")
	_, _, addr, roots := runTLSProxyReg(t, pool1(PolicyFirst, b.srv.URL))
	for _, cl := range []string{"5", "abc", "-1", "+5", " 5"} {
		_, fr := h2Open(t, addr, roots, [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "x"}, {":path", "/p"}, {"content-length", cl}})
		if status, _ := h2Answer(t, fr); status != "400" {
			t.Errorf("POST with content-length %q and no body: %s, want 400", cl, status)
		}
	}
	if n := b.posts.Load(); n != 0 {
		t.Errorf("origin got %d POSTs", n)
	}
	_, fr := h2Open(t, addr, roots, [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "x"}, {":path", "/p"}, {"content-length", "0"}})
	if status, _ := h2Answer(t, fr); status != "200" {
		t.Errorf("POST with content-length 0: %s, want 200", status)
	}
}

// TestAbsoluteTargetWithUserinfoRefused: "GET http://user:pw@host/" gets
// 400 (RFC 9110 §4.2.4, nginx too) on both engines, as a Host with
// userinfo does; the origin gets nothing.
func TestAbsoluteTargetWithUserinfoRefused(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		b := newBackend(t, "a")
		cfg := pool1(PolicyFirst, b.srv.URL)
		cfg.Pools[0].Hosts = []string{"www.example.test"}
		h := startWith(t, cfg, nil, false, engineName)
		c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET http://user:pw@www.example.test/abs HTTP/1.1\r\nHost: www.example.test\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		if resp.StatusCode != 400 || b.hits.Load() != 0 {
			t.Errorf("%s: %d %q, origin hits %d; want 400 and none", engineName, resp.StatusCode, body, b.hits.Load())
		}
	}
}

// TestRewriteHeadersDropped: X-Original-URL and X-Rewrite-URL, which IIS
// and Symfony take the request path from, never reach origins from a
// client: they would reach a path that path_prefix routing never sent there.
func TestRewriteHeadersDropped(t *testing.T) {
	b := newBackend(t, "a")
	h := start(t, pool1(PolicyFirst, b.srv.URL), nil, false)
	if code, _, _ := h.do("GET", "/public", "", "X-Original-URL", "/admin", "X-Rewrite-URL", "/admin", "X_Original_URL", "/admin"); code != 200 {
		t.Fatalf("GET: %d", code)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.last {
		n := strings.ToLower(strings.ReplaceAll(k, "_", "-"))
		if n == "x-original-url" || n == "x-rewrite-url" {
			t.Errorf("origin got %s: %q", k, b.last[k])
		}
	}
}
