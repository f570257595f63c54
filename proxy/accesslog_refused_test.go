package proxy

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestAccessLogEngineRefusals: a request an engine refuses while parsing
// it (a malformed header, plain HTTP sent to the TLS port) gets an access
// log line naming the client, the status and why, on both engines and both
// listeners, as nginx logs its 400s. These requests never reach the router,
// so without this line a scanner or a broken client left no trace but a
// counter.
func TestAccessLogEngineRefusals(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			a := newBackend(t, "a")
			certFile, keyFile, _ := selfSigned(t)
			cfg := pool1(PolicyFirst, a.srv.URL)
			cfg.Engine = engineName
			cfg.Listen = "127.0.0.1:0"
			cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
			path := filepath.Join(t.TempDir(), "access.log")
			cfg.AccessLog = path
			p, err := New(cfg, nil, testLogger(t), WithRegistry(prometheus.NewRegistry()))
			if err != nil {
				t.Fatal(err)
			}
			addrs := runProxyOn(t, p, 2)
			send := func(c net.Conn, req string) (string, string) {
				t.Helper()
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(c, req)
				b, _ := io.ReadAll(c)
				return string(b), c.LocalAddr().String()
			}
			dial := func(addr string) net.Conn {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			bad := "GET / HTTP/1.1\r\nHost: www.example.test\r\nNo-Colon-Here\r\n\r\n"
			ans1, from1 := send(dial(addrs[0]), bad)
			tc := tls.Client(dial(addrs[1]), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
			ans2, from2 := send(tc, bad)
			ans3, from3 := send(dial(addrs[1]), "GET / HTTP/1.1\r\nHost: www.example.test\r\n\r\n")
			for i, ans := range []string{ans1, ans2, ans3} {
				if !strings.Contains(ans, " 400 ") {
					t.Fatalf("answer %d: %q, want a 400", i+1, ans)
				}
			}
			p.closeAccessLog()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if len(lines) != 3 {
				t.Fatalf("%d lines, want 3:\n%s", len(lines), b)
			}
			for i, want := range []struct {
				remote string
				tls    bool
			}{{from1, false}, {from2, true}, {from3, true}} {
				var m map[string]any
				if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
					t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, lines[i])
				}
				reason, _ := m["refused"].(string)
				if m["remote"] != want.remote || m["tls"] != want.tls || m["status"] != 400.0 || reason == "" || m["bytes"].(float64) <= 0 {
					t.Errorf("refusal %d (from %s, tls %v): %s", i+1, want.remote, want.tls, lines[i])
				}
				if _, ok := m["pool"]; ok {
					t.Errorf("refusal %d has a pool: %s", i+1, lines[i])
				}
			}
		})
	}
}
