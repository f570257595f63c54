package proxy

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQueueTimeoutCutByBudgetIs503: a request that waits in the max_conns
// queue until retry.budget runs out (shorter than queue_timeout) asked no
// origin: it is a queue timeout like one queue_timeout ends, answered 503
// naming max_conns, counted in vigil_proxy_queue_timeouts_total, its access
// log line at 503 naming the full origin and the warning logged; it got a
// 504 "no origin answered in time" that the counter never saw.
func TestQueueTimeoutCutByBudgetIs503(t *testing.T) {
	// The origin answers /hold's head at once and its body only when the
	// test ends: the request holds the origin's one slot all along, and
	// retry.budget (which ends at the head) does not cut it.
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
	path := filepath.Join(t.TempDir(), "access.log")
	cfg := pool1(PolicyFirst, srv.URL)
	cfg.AccessLog = path
	cfg.Pools[0].Origins[0].MaxConns = 1
	cfg.Pools[0].QueueTimeout = 5 * time.Second
	cfg.Pools[0].Retry.Budget = 300 * time.Millisecond
	cfg.Pools[0].Retry.TryTimeout = 300 * time.Millisecond
	cfg.Pools[0].ConnectTimeout = 200 * time.Millisecond
	var logs syncBuf
	h := startLog(t, cfg, nil, true, testEngine(), slog.New(slog.NewTextHandler(&logs, nil)))
	hold, err := http.Get(h.front.URL + "/hold")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { close(release); hold.Body.Close() })
	eventually(t, "the origin's one slot taken", func() bool { return h.origin("web", "o0").full() })
	began := time.Now()
	code, body, _ := h.do("GET", "/second", "")
	waited := time.Since(began)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "max_conns") {
		t.Fatalf("after %s in the queue: %d %q, want 503 naming max_conns", waited, code, body)
	}
	if waited < 280*time.Millisecond || waited > 2*time.Second {
		t.Fatalf("503 after %s, want after retry.budget (300ms), before queue_timeout (5s)", waited)
	}
	if v, _ := h.metric("vigil_proxy_queue_timeouts_total", map[string]string{"pool": "web"}); v != 1 {
		t.Fatalf("vigil_proxy_queue_timeouts_total = %v, want 1", v)
	}
	if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"pool": "web", "origin": "none", "code": "503"}); v != 1 {
		t.Fatalf(`vigil_proxy_requests_total{origin="none",code="503"} = %v, want 1`, v)
	}
	if v, _ := h.metric("vigil_proxy_requests_total", map[string]string{"pool": "web", "origin": "none", "code": "504"}); v != 0 {
		t.Fatalf(`vigil_proxy_requests_total{origin="none",code="504"} = %v, want 0`, v)
	}
	eventually(t, "the 503's access log line", func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), `"path":"/second"`)
	})
	b, _ := os.ReadFile(path)
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"path":"/second"`) {
			line = l
		}
	}
	if !strings.Contains(line, `"status":503`) || !strings.Contains(line, `"upstreams":[{"origin":"o0","cause":"max_conns"}]`) {
		t.Fatalf("access log line is not a 503 naming the full origin: %s", line)
	}
	l := logs.String()
	if !strings.Contains(l, "at its max_conns; answered 503") || !strings.Contains(l, "origins=o0") || !strings.Contains(l, "queue_timeout=5s") {
		t.Fatalf("no log line for the max_conns 503:\n%s", l)
	}
}
