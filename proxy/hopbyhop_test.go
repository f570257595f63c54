package proxy

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest writes req on a new connection to the proxy at url and
// returns the answer's status and header.
func rawRequest(t *testing.T, url, req string) (int, http.Header) {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// TestConnectionCannotRemoveProxyFields: a client that names the fields
// the proxy sets in Connection (hop-by-hop, RFC 9110 §7.6.1) cannot take
// them from what the origin gets: the request's ID the client's answer
// carries, X-Forwarded-For, -Host, -Proto, X-Real-IP and Forwarded all
// reach the origin, on the fast path (GET) and through Go's transport
// (POST), both engines. Behind a trusted proxy, an X-Forwarded-For named
// in Connection is not believed either: X-Real-IP and X-Forwarded-For
// both say the peer (the origin got 127.0.0.1 in one and the client's
// pick in the other).
func TestConnectionCannotRemoveProxyFields(t *testing.T) {
	for _, eng := range []string{EngineFast, EngineStdlib} {
		t.Run(eng, func(t *testing.T) {
			a := newBackend(t, "a")
			cfg := pool1(PolicyFirst, a.srv.URL)
			cfg.TrustedProxies = []string{"127.0.0.1"}
			cfg.RequestIDFromClient = true
			h := startWith(t, cfg, nil, false, eng)
			const named = "X-Request-Id, X-Forwarded-For, X-Forwarded-Host, X-Forwarded-Proto, X-Real-Ip, Forwarded"
			for _, req := range []string{
				"GET / HTTP/1.1\r\nHost: www.example.test\r\nConnection: " + named + "\r\n" +
					"X-Request-Id: client-id\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\n\r\n",
				"POST / HTTP/1.1\r\nHost: www.example.test\r\nConnection: " + named + "\r\n" +
					"X-Request-Id: client-id\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nContent-Length: 2\r\n\r\nhi",
				"GET / HTTP/1.1\r\nHost: www.example.test\r\nConnection: X-Request-Id\r\n\r\n",
			} {
				code, ans := rawRequest(t, h.front.URL, req)
				if code != 200 {
					t.Fatalf("%q: %d", req, code)
				}
				a.mu.Lock()
				got := a.last.Clone()
				a.mu.Unlock()
				id := ans.Get("X-Request-Id")
				if !ridForm.MatchString(id) {
					t.Errorf("%q: answer's X-Request-Id %q, want the proxy's (a client's named in Connection is not kept)", req, id)
				}
				if v := got.Values("X-Request-Id"); len(v) != 1 || v[0] != id {
					t.Errorf("%q: origin got X-Request-Id %q, want the answer's %q", req, v, id)
				}
				for k, want := range map[string]string{
					"X-Forwarded-For":   "127.0.0.1",
					"X-Real-Ip":         "127.0.0.1",
					"X-Forwarded-Host":  "www.example.test",
					"X-Forwarded-Proto": "http",
				} {
					if v := got.Values(k); len(v) != 1 || v[0] != want {
						t.Errorf("%q: origin got %s %q, want %q", req, k, v, want)
					}
				}
				if strings.Contains(req, "Forwarded: for=") {
					if v := got.Values("Forwarded"); len(v) != 1 || v[0] != `for=127.0.0.1;host="www.example.test";proto=http` {
						t.Errorf("%q: origin got Forwarded %q, want the proxy's element", req, v)
					}
				}
			}
			// Not named in Connection, the trusted proxy's chain is believed.
			code, _ := rawRequest(t, h.front.URL, "GET / HTTP/1.1\r\nHost: www.example.test\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n")
			a.mu.Lock()
			got := a.last.Clone()
			a.mu.Unlock()
			if code != 200 || got.Get("X-Real-Ip") != "6.6.6.6" || got.Get("X-Forwarded-For") != "6.6.6.6, 127.0.0.1" {
				t.Errorf("trusted chain: %d, X-Real-IP %q, X-Forwarded-For %q", code, got.Get("X-Real-Ip"), got.Get("X-Forwarded-For"))
			}
		})
	}
}
