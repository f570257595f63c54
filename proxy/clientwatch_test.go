package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestClientGoneDuringTryFreesOrigin: a client that leaves while the origin
// has not answered yet gets its try aborted well before try_timeout: the
// origin sees its connection closed, the max_conns slot is free again, the
// request counts as 499 under origin "none", and the origin is charged
// nothing (no try-failed line, no timeout). GET goes through the fast path's
// inline exchange, POST through http.Transport; both engines.
func TestClientGoneDuringTryFreesOrigin(t *testing.T) {
	for _, engineName := range bothEngines {
		for _, req := range []string{
			"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n",
			"POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		} {
			method := req[:4]
			t.Run(engineName+"/"+method, func(t *testing.T) {
				b := newBackend(t, "a")
				b.mode.Store(modeHang)
				cfg := pool1(PolicyFirst, urls(b)...)
				cfg.Pools[0].Retry.TryTimeout = 20 * time.Second
				cfg.Pools[0].Retry.Budget = 30 * time.Second
				cfg.Pools[0].Origins[0].MaxConns = 1
				h, logs := startCapturing(t, cfg, engineName)
				o := h.pool("web").origins[0]
				c, err := net.Dial("tcp", h.front.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(c, req)
				eventually(t, "the request reached the origin", func() bool { return b.hits.Load() == 1 })
				if n := o.inflight.Load(); n != 1 {
					t.Fatalf("in flight at the origin: %d, want 1", n)
				}
				left := time.Now()
				c.Close()
				eventually(t, "the origin's connection closed", func() bool { return b.abandoned.Load() == 1 })
				if d := time.Since(left); d > 3*clientWatchInterval+time.Second {
					t.Errorf("the try was aborted %v after the client left, want within %v", d, 3*clientWatchInterval)
				}
				eventually(t, "the max_conns slot freed", func() bool { return o.inflight.Load() == 0 })
				eventually(t, "the request counted as 499", func() bool {
					v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"origin": noOrigin, "code": "499"})
					return v == 1
				})
				if got := logs.lines("try failed"); len(got) != 0 {
					t.Errorf("the origin was charged for the client leaving: %q", got)
				}
				if n := o.stats.timeouts.Load() + o.stats.connErrors.Load(); n != 0 {
					t.Errorf("the origin has %d failures recorded, want 0", n)
				}
				// The slot is usable: a new request reaches the origin.
				b.mode.Store(modeOK)
				if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
					t.Errorf("next request: %d %q, want 200 from a", code, body)
				}
			})
		}
	}
}

// TestClientWatchKeepsWaitingClients: clients that wait for a slow origin
// (longer than the watcher's interval) are not taken for gone, including one
// with a second request pipelined behind the first; both get their answers.
func TestClientWatchKeepsWaitingClients(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * clientWatchInterval)
		io.WriteString(w, "slow "+r.URL.Path)
	}))
	defer slow.Close()
	cfg := pool1(PolicyFirst, slow.URL)
	cfg.Pools[0].Retry.TryTimeout = 10 * time.Second
	h, logs := startCapturing(t, cfg, EngineFast)
	c, err := net.Dial("tcp", h.front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pipelineTwo(t, c)
	if got := logs.lines("client closed"); len(got) != 0 {
		t.Errorf("a waiting client was taken for gone: %q", got)
	}
}

// pipelineTwo sends GET /1 and GET /2 pipelined on c and checks that each
// gets 200 with the slow origin's body ("slow /1", "slow /2"), in order.
func pipelineTwo(t *testing.T, c net.Conn) {
	t.Helper()
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
	for _, want := range []string{"slow /1", "slow /2"} {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("waiting for %q: %v", want, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != want {
			t.Fatalf("got %d %q, want 200 %q", resp.StatusCode, body, want)
		}
	}
}
