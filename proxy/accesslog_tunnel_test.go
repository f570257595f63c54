package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAccessLogTunnelBytes: a WebSocket tunnel's access log line counts
// the bytes that went through it, origin to client in bytes (as nginx's
// $body_bytes_sent does) and client to origin in bytes_up, on both engines.
// Its line used to say bytes 0 whatever went through.
func TestAccessLogTunnelBytes(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				websocketEcho(w, "echo: ", 0)
			}))
			defer origin.Close()
			path := filepath.Join(t.TempDir(), "access.log")
			cfg := pool1(PolicyFirst, origin.URL)
			cfg.AccessLog = path
			h := startWith(t, cfg, nil, false, engineName)
			ws, err := net.Dial("tcp", h.front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			ws.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(ws, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			br := bufio.NewReader(ws)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("upgrade: %v %v", resp, err)
			}
			up, down := 0, 0
			for _, msg := range []string{"one\n", "two three\n", strings.Repeat("x", 5000) + "\n"} {
				io.WriteString(ws, msg)
				got, err := br.ReadString('\n')
				if err != nil || got != "echo: "+msg {
					t.Fatalf("echo of %d bytes: %d bytes, %v", len(msg), len(got), err)
				}
				up, down = up+len(msg), down+len(got)
			}
			ws.Close()
			eventually(t, "the tunnel's line", func() bool {
				b, _ := os.ReadFile(path)
				return len(b) > 0
			})
			h.p.closeAccessLog()
			b, _ := os.ReadFile(path)
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			if m["status"] != 101.0 || m["bytes"] != float64(down) || m["bytes_up"] != float64(up) {
				t.Errorf("line %s: want status 101, bytes %d, bytes_up %d", b, down, up)
			}
		})
	}
}
