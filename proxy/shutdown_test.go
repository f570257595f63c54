package proxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// On shutdown an answer in flight on a keep-alive connection says
// "Connection: close" (the client must not send another request there), and
// WebSocket tunnels, which the servers' Shutdown does not see, get the grace
// period and are then closed, so Run returns.
func TestShutdownClosesKeepAliveAndTunnels(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) { testShutdownClosesKeepAliveAndTunnels(t, engineName) })
	}
}

func testShutdownClosesKeepAliveAndTunnels(t *testing.T, engineName string) {
	old := shutdownGrace
	shutdownGrace = 700 * time.Millisecond
	defer func() { shutdownGrace = old }()

	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" {
			time.Sleep(300 * time.Millisecond) // in flight when the shutdown begins
			io.WriteString(w, "slow answer")
			return
		}
		websocketEcho(w, "echo: ", 0) // until the proxy closes the tunnel
	}))
	defer origin.Close()
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
	addr := p.Addrs()[0].String()

	ws, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(ws, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	wsr := bufio.NewReader(ws)
	if resp, err := http.ReadResponse(wsr, nil); err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	io.WriteString(ws, "one\n")
	if line, _ := wsr.ReadString('\n'); line != "echo: one\n" {
		t.Fatalf("tunnel: %q", line)
	}

	ka, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ka.Close()
	ka.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(ka, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(100 * time.Millisecond)
	began := time.Now()
	cancel()

	resp, err := http.ReadResponse(bufio.NewReader(ka), nil)
	if err != nil {
		t.Fatalf("the in-flight request got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "slow answer" || !resp.Close {
		t.Fatalf("in-flight answer during shutdown: %d %q Connection=%q, want 200 and Connection: close",
			resp.StatusCode, body, resp.Header.Get("Connection"))
	}
	// The tunnel still works during the grace period...
	io.WriteString(ws, "two\n")
	if line, _ := wsr.ReadString('\n'); line != "echo: two\n" {
		t.Fatalf("tunnel during the grace period: %q", line)
	}
	// ...and is closed at its end.
	if _, err := wsr.ReadString('\n'); err == nil {
		t.Fatal("the tunnel got data after the shutdown, want it closed")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return: the WebSocket tunnel kept it open")
	}
	if d := time.Since(began); d < 500*time.Millisecond || d > 3*time.Second {
		t.Fatalf("shutdown took %v, want about the 700ms grace", d)
	}
}
