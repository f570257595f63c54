package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTunnelIdleTimeout: a WebSocket tunnel holds its origin's in-flight
// count (max_conns) while open; one through which nothing goes either way
// for tunnel_idle_timeout is closed, so idle tunnels cannot hold an origin
// full forever, while a tunnel with traffic stays open. Both engines.
func TestTunnelIdleTimeout(t *testing.T) {
	for _, engine := range bothEngines {
		t.Run(engine, func(t *testing.T) {
			// The origin upgrades and echoes every line until the tunnel closes.
			origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Upgrade") == "" {
					io.WriteString(w, "plain")
					return
				}
				websocketEcho(w, "", 0)
			}))
			defer origin.Close()
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.Pools[0].TunnelIdleTimeout = 600 * time.Millisecond
			cfg.Pools[0].Origins[0].MaxConns = 1
			h := startWith(t, cfg, nil, false, engine)
			o := h.pool("web").origins[0]
			open := func() (net.Conn, *bufio.Reader) {
				c, err := net.Dial("tcp", h.front.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
				br := bufio.NewReader(c)
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
					t.Fatalf("upgrade: %v %v", resp, err)
				}
				return c, br
			}

			// Busy: a line every 200ms for 1.6s keeps the tunnel open.
			c, br := open()
			for i := 0; i < 8; i++ {
				time.Sleep(200 * time.Millisecond)
				io.WriteString(c, "ping\n")
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
					t.Fatalf("busy tunnel, line %d: %q %v", i, line, err)
				}
			}
			if code, body, _ := h.do("GET", "/", ""); code != http.StatusServiceUnavailable || !strings.Contains(body, "at its max_conns") {
				t.Errorf("a request while the tunnel holds the only slot: %d %q, want 503 naming max_conns", code, body)
			}
			c.Close()
			eventually(t, "the slot freed after the client closed", func() bool { return o.inflight.Load() == 0 })

			// Idle: closed after tunnel_idle_timeout, the slot freed.
			c, br = open()
			defer c.Close()
			start := time.Now()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := br.ReadByte(); err == nil {
				t.Fatal("the idle tunnel sent a byte")
			}
			if d := time.Since(start); d < 500*time.Millisecond || d > 3*time.Second {
				t.Errorf("idle tunnel closed after %v, want about 600ms", d)
			}
			eventually(t, "the slot freed after the idle close", func() bool { return o.inflight.Load() == 0 })
			if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "plain" {
				t.Errorf("after the idle tunnel closed: %d %q, want 200", code, body)
			}
		})
	}
}
