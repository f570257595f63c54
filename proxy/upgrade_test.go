package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUpgradeOnlyWebSocket: the proxy passes only WebSocket upgrades
// through, with both engines. A request to upgrade to anything else (h2c
// here) reaches the origin as an ordinary request without Upgrade and
// Connection: Upgrade, so an origin willing to switch never gets the chance
// to hand the client a raw tunnel; and a 101 the client did not ask for is a
// 502, not a tunnel.
func TestUpgradeOnlyWebSocket(t *testing.T) {
	for _, engine := range []string{EngineFast, EngineStdlib} {
		t.Run(engine, func(t *testing.T) {
			var mu sync.Mutex
			var seen []http.Header
			// The origin switches protocols for any Upgrade it is offered
			// (and, on /always, even when none is offered), then echoes one line.
			origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Header.Clone())
				mu.Unlock()
				up := r.Header.Get("Upgrade")
				if up == "" && r.URL.Path == "/always" {
					up = "h2c"
				}
				if up == "" {
					io.WriteString(w, "plain answer")
					return
				}
				conn, brw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "+up+"\r\nConnection: Upgrade\r\n\r\n")
				line, _ := brw.ReadString('\n')
				io.WriteString(conn, "echo: "+line)
			}))
			defer origin.Close()
			h := startWith(t, pool1(PolicyFirst, origin.URL), nil, false, engine)
			last := func() http.Header {
				mu.Lock()
				defer mu.Unlock()
				if len(seen) == 0 {
					return nil
				}
				return seen[len(seen)-1]
			}

			// exchange sends raw, reads the answer, and if it is a 101 sends
			// a line through the tunnel and returns what came back.
			exchange := func(t *testing.T, raw string) (int, string) {
				t.Helper()
				c, err := net.Dial("tcp", h.front.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				io.WriteString(c, raw)
				br := bufio.NewReader(c)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				if resp.StatusCode != http.StatusSwitchingProtocols {
					b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
					resp.Body.Close()
					return resp.StatusCode, string(b)
				}
				io.WriteString(c, "hello\n")
				line, _ := br.ReadString('\n')
				return resp.StatusCode, line
			}

			t.Run("h2c is forwarded as a plain request", func(t *testing.T) {
				code, body := exchange(t, "GET /x HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
				if code != 200 || body != "plain answer" {
					t.Errorf("h2c upgrade request: %d %q, want 200 \"plain answer\"", code, body)
				}
				got := last()
				if got == nil {
					t.Fatal("origin saw no request")
				}
				if v := got.Get("Upgrade"); v != "" {
					t.Errorf("origin saw Upgrade: %q", v)
				}
				if v := got.Values("Connection"); len(v) > 0 && strings.Contains(strings.ToLower(strings.Join(v, ",")), "upgrade") {
					t.Errorf("origin saw Connection: %q", v)
				}
				if v := got.Get("Http2-Settings"); v != "" {
					t.Errorf("origin saw HTTP2-Settings (named in Connection): %q", v)
				}
			})

			t.Run("made-up protocol is forwarded as a plain request", func(t *testing.T) {
				code, body := exchange(t, "GET /x HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: tcp-tunnel/1\r\n\r\n")
				if code != 200 || body != "plain answer" {
					t.Errorf("tcp-tunnel upgrade request: %d %q, want 200 \"plain answer\"", code, body)
				}
				if got := last(); got == nil || got.Get("Upgrade") != "" {
					t.Errorf("origin saw Upgrade: %v", got)
				}
			})

			t.Run("unrequested 101 is a 502", func(t *testing.T) {
				code, body := exchange(t, "GET /always HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
				if code == http.StatusSwitchingProtocols || code != http.StatusBadGateway {
					t.Errorf("origin switching to h2c: %d %q, want 502", code, body)
				}
			})

			t.Run("WebSocket in any case still upgrades", func(t *testing.T) {
				code, line := exchange(t, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: WebSocket\r\n\r\n")
				if code != http.StatusSwitchingProtocols || line != "echo: hello\n" {
					t.Errorf("websocket upgrade: %d %q, want 101 and the echo", code, line)
				}
				if got := last(); got == nil || !strings.EqualFold(got.Get("Upgrade"), "websocket") {
					t.Errorf("origin saw Upgrade %v, want websocket", got)
				}
			})
		})
	}
}
