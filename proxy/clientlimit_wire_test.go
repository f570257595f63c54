package proxy

import (
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMaxConnsPerClientConfig: max_conns_per_client on a running proxy:
// one address's connections past it are closed at accept, another
// address is served although max_client_conns is full of the first's.
func TestMaxConnsPerClientConfig(t *testing.T) {
	for _, engineName := range bothEngines {
		t.Run(engineName, func(t *testing.T) {
			a := newBackend(t, "a")
			cfg := pool1(PolicyFirst, a.srv.URL)
			cfg.Engine = engineName
			cfg.MaxClientConns = 6
			cfg.MaxConnsPerClient = 3
			p, err := New(cfg, nil, testLogger(t), WithRegistry(prometheus.NewRegistry()))
			if err != nil {
				t.Fatal(err)
			}
			addr := runProxy(t, p)
			var conns []net.Conn
			for i := 0; i < 6; i++ {
				conns = append(conns, dialFrom(t, "127.0.0.1", addr))
			}
			if !get(dialFrom(t, "127.0.0.2", addr), 2*time.Second) {
				t.Fatal("another address was not served")
			}
			served := 0
			for _, c := range conns {
				if get(c, time.Second) {
					served++
				}
			}
			if served != 3 {
				t.Fatalf("%d served, want 3", served)
			}
		})
	}
}
