package proxy

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestClientLeavingQueueIs499: a client that goes away while its request
// waits in the max_conns queue ends as any client that left before its
// answer does (499 under origin "none"), at once, not at queue_timeout as
// a 503 counted in vigil_proxy_queue_timeouts_total. On the fast engine,
// which reads nothing while a request waits, too.
func TestClientLeavingQueueIs499(t *testing.T) {
	for _, engine := range []string{EngineFast, EngineStdlib} {
		t.Run(engine, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			t.Cleanup(srv.Close)
			cfg := pool1(PolicyFirst, srv.URL)
			cfg.Pools[0].Origins[0].MaxConns = 1
			cfg.Pools[0].QueueTimeout = 10 * time.Second
			cfg.Pools[0].Retry.Budget = 20 * time.Second
			cfg.Pools[0].Retry.TryTimeout = 20 * time.Second
			var logs syncBuf
			h := startLog(t, cfg, nil, true, engine, slog.New(slog.NewTextHandler(&logs, nil)))
			hold, err := http.Get(h.front.URL + "/hold")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { close(release); hold.Body.Close() })
			eventually(t, "the origin's one slot taken", func() bool { return h.origin("web", "o0").full() })

			u, _ := url.Parse(h.front.URL)
			c, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "GET /queued HTTP/1.1\r\nHost: %s\r\n\r\n", u.Host)
			eventually(t, "the request queued", func() bool {
				v, _ := h.metric("vigil_proxy_queue_waiting", map[string]string{"pool": "web"})
				return v == 1
			})
			c.Close()
			left := time.Now()
			deadline := left.Add(3 * time.Second)
			for {
				v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"pool": "web", "origin": "none", "code": "499"})
				if v == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf(`3s after the client left: vigil_proxy_requests_total{origin="none",code="499"} = %v, want 1 (queue_timeout is 10s)`, v)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if v, _ := h.metric("vigil_proxy_queue_timeouts_total", map[string]string{"pool": "web"}); v != 0 {
				t.Errorf("vigil_proxy_queue_timeouts_total = %v, want 0: the client left, no queue timed out", v)
			}
			if v, _ := h.metric("vigil_proxy_queue_waiting", map[string]string{"pool": "web"}); v != 0 {
				t.Errorf("vigil_proxy_queue_waiting = %v after the client left, want 0", v)
			}
			if l := logs.String(); strings.Contains(l, "at its max_conns; answered 503") {
				t.Errorf("a 503 was logged for a client that left:\n%s", l)
			}
		})
	}
}
