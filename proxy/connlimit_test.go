package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMaxClientConns: with max_client_conns: 2, two open keep-alive client
// connections hold both slots; a third connection is not served (it waits
// in the accept queue) until one of them closes, and then it is. The gauge
// counts the open connections and the counter the waits, on both engines.
// Was: no bound, so slow or idle clients could hold memory without limit.
func TestMaxClientConns(t *testing.T) {
	a := newBackend(t, "a")
	for _, engineName := range bothEngines {
		t.Run(engineName, func(t *testing.T) {
			cfg := pool1(PolicyFirst, a.srv.URL)
			cfg.Engine = engineName
			cfg.MaxClientConns = 2
			reg := prometheus.NewRegistry()
			p, err := New(cfg, nil, testLogger(t), WithRegistry(reg))
			if err != nil {
				t.Fatal(err)
			}
			addr := runProxy(t, p)
			h := &harness{t: t, reg: reg}
			get := func(c net.Conn, br *bufio.Reader) error {
				c.SetDeadline(time.Now().Add(700 * time.Millisecond))
				if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					return err
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				return nil
			}
			var conns []net.Conn
			var readers []*bufio.Reader
			for i := 0; i < 3; i++ {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				conns, readers = append(conns, c), append(readers, bufio.NewReader(c))
			}
			for i := 0; i < 2; i++ {
				if err := get(conns[i], readers[i]); err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
			}
			if err := get(conns[2], readers[2]); err == nil {
				t.Fatal("a third connection was served while max_client_conns (2) were open")
			}
			if v, _ := h.metric("vigil_proxy_client_connections", nil); v != 2 {
				t.Errorf("vigil_proxy_client_connections = %v, want 2", v)
			}
			if v, _ := h.metric("vigil_proxy_client_connections_limited_total", nil); v < 1 {
				t.Errorf("vigil_proxy_client_connections_limited_total = %v, want ≥ 1", v)
			}
			conns[0].Close()
			// The third connection's request was sent; its answer comes
			// once a slot is free.
			conns[2].SetDeadline(time.Now().Add(3 * time.Second))
			resp, err := http.ReadResponse(readers[2], nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("after a slot freed, the waiting connection got %v %v, want 200", resp, err)
			}
		})
	}
}

// TestMaxClientConnsBothListeners: with max_client_conns: 1 and both
// listeners, plain clients one after another are all served: a listener
// waiting in accept(2) holds no slot (was: the TLS listener's pending
// accept took the slot the first plain client freed, and the second plain
// client waited on an idle proxy).
func TestMaxClientConnsBothListeners(t *testing.T) {
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.MaxClientConns = 1
	certFile, keyFile, _ := selfSigned(t)
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	p, err := New(cfg, nil, testLogger(t), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	addr := runProxyOn(t, p, 2)[0]
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(2 * time.Second))
		io.WriteString(c, "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("plain client %d: %v %v, want 200", i, resp, err)
		}
	}
}
