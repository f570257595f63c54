package proxy

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestSlowClientsCounted: on the fast engine's plain listener, clients that
// drip a request head slower than read_header_timeout (slowloris) are cut
// off and counted in vigil_proxy_client_connections_cut_total{reason=
// "header_timeout"}, with one log line for all of them (rate-limited, the
// rest in suppressed); connections that send nothing are counted as
// no_request, a kept-alive connection left idle past idle_timeout as idle,
// and a client closing mid-head as closed_in_head. All four are exported at
// 0 from the start. Such connections used to end with no trace at all.
func TestSlowClientsCounted(t *testing.T) {
	origin := rawResponder(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
	cfg := pool1(PolicyRoundRobin, origin)
	cfg.Engine = EngineFast
	cfg.ReadHeaderTimeout = 400 * time.Millisecond
	cfg.IdleTimeout = 400 * time.Millisecond
	logs := &checktest.SyncBuffer{}
	reg := prometheus.NewRegistry()
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(logs, nil)), WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, reg: reg}
	const name = "vigil_proxy_client_connections_cut_total"
	for _, r := range cutReasons {
		if v, ok := h.metric(name, map[string]string{"reason": r}); !ok || v != 0 {
			t.Fatalf("%s{reason=%q} = %v (exists %v) before any client, want 0", name, r, v, ok)
		}
	}
	addr := runProxy(t, p)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		return c
	}

	// 20 slowloris clients: one byte every 100 ms, never ending the head;
	// each must see its connection closed by the proxy.
	const slow = 20
	var wg sync.WaitGroup
	cutAfter := make(chan time.Duration, slow)
	for i := 0; i < slow; i++ {
		c := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-A")
			go func() { // drip until the proxy closes (bounded: 50 bytes)
				for range 50 {
					time.Sleep(100 * time.Millisecond)
					if _, err := c.Write([]byte("a")); err != nil {
						return
					}
				}
			}()
			n, err := c.Read(make([]byte, 1))
			if n != 0 || err == nil || deadlineExceeded(err) {
				t.Errorf("slow client: read %d bytes, %v; want the proxy to close the connection", n, err)
			}
			cutAfter <- time.Since(t0)
		}()
	}
	// Three that send nothing, one that leaves mid-head.
	for range 3 {
		dial()
	}
	half := dial()
	io.WriteString(half, "GET / HTTP/1.1\r\nHo")
	// One kept-alive connection that is served, then stays idle.
	idle := dial()
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := io.ReadFull(idle, make([]byte, len("HTTP/1.1 200 OK"))); err != nil {
		t.Fatalf("idle client's request: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	half.Close()

	wg.Wait()
	close(cutAfter)
	for d := range cutAfter {
		if d > 3*time.Second {
			t.Errorf("a slow client was cut after %v, want about read_header_timeout (400ms)", d)
		}
	}
	want := map[string]float64{cutHeaderTimeout: slow, cutNoRequest: 3, cutIdle: 1, cutClosedInHead: 1}
	eventually(t, "every connection counted", func() bool {
		for r, w := range want {
			if v, _ := h.metric(name, map[string]string{"reason": r}); v != w {
				return false
			}
		}
		return true
	})
	for r, w := range want {
		if v, _ := h.metric(name, map[string]string{"reason": r}); v != w {
			t.Errorf("%s{reason=%q} = %v, want %v", name, r, v, w)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "request head not whole within read_header_timeout"); n != 1 {
		t.Errorf("%d lines for %d slow clients cut off, want 1 (rate-limited):\n%s", n, slow, out)
	}
	if n := strings.Count(out, "no request within read_header_timeout"); n != 1 {
		t.Errorf("%d lines for 3 connections that sent nothing, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "read_header_timeout=400ms") {
		t.Errorf("the line does not name the timeout:\n%s", out)
	}
}
