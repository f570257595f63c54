package proxy

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestSpoolMetrics: request bodies request_buffering received whole into
// body_temp_dir are counted, with their bytes, in
// vigil_proxy_request_bodies_spooled_total and …_spooled_bytes_total, and
// a body the proxy could not store (the directory gone: 503) in
// vigil_proxy_request_body_spool_errors_total; a body within
// max_buffered_body counts in none. All three exist at 0 from the start.
// Before, spooling left no trace in the metrics and a failing
// body_temp_dir showed only as 503s of origin "none".
func TestSpoolMetrics(t *testing.T) {
	og := newSpoolOrigin(t)
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := pool1(PolicyRoundRobin, og.srv.URL)
	cfg.BodyTempDir = dir
	cfg.Pools[0].Retry.MaxBufferedBody = 1 << 10
	h := start(t, cfg, nil, false)
	web := map[string]string{"pool": "web"}
	val := func(name string) float64 {
		t.Helper()
		v, ok := h.metric(name, web)
		if !ok {
			t.Fatalf("%s{pool=\"web\"} does not exist", name)
		}
		return v
	}
	const (
		spooled = "vigil_proxy_request_bodies_spooled_total"
		bytes   = "vigil_proxy_request_bodies_spooled_bytes_total"
		errs    = "vigil_proxy_request_body_spool_errors_total"
	)
	for _, name := range []string{spooled, bytes, errs} {
		if v := val(name); v != 0 {
			t.Fatalf("%s = %v before any request, want 0", name, v)
		}
	}
	for _, n := range []int{200000, 5000} {
		if code, _, _ := h.do("POST", "/up", strings.Repeat("x", n)); code != 200 {
			t.Fatalf("POST of %d bytes: %d", n, code)
		}
	}
	if code, _, _ := h.do("POST", "/up", strings.Repeat("x", 1000)); code != 200 { // buffered, not spooled
		t.Fatalf("POST of 1000 bytes: %d", code)
	}
	if s, b, e := val(spooled), val(bytes), val(errs); s != 2 || b != 205000 || e != 0 {
		t.Fatalf("after two spooled bodies (200000 and 5000 bytes) and one buffered: spooled %v, bytes %v, errors %v; want 2, 205000, 0", s, b, e)
	}
	os.Remove(dir)
	if code, _, _ := h.do("POST", "/up", strings.Repeat("x", 200000)); code != http.StatusServiceUnavailable {
		t.Fatalf("POST with body_temp_dir gone: %d, want 503", code)
	}
	if s, b, e := val(spooled), val(bytes), val(errs); s != 2 || b != 205000 || e != 1 {
		t.Fatalf("after a body that could not be stored: spooled %v, bytes %v, errors %v; want 2, 205000, 1", s, b, e)
	}
}

// TestQueueMetrics: requests waiting for a max_conns slot show in
// vigil_proxy_queue_waiting while they wait, and those that got 503 when
// queue_timeout ran out are counted in vigil_proxy_queue_timeouts_total;
// both exist at 0 from the start. Before, such a 503 showed only as
// vigil_proxy_requests_total{origin="none",code="503"}, like any other.
func TestQueueMetrics(t *testing.T) {
	a := newBackend(t, "a")
	a.mode.Store(modeHang)
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].Origins[0].MaxConns = 1
	cfg.Pools[0].QueueTimeout = 1500 * time.Millisecond
	cfg.Pools[0].Retry.TryTimeout = 4 * time.Second // frees the held slot
	h := start(t, cfg, nil, false)
	web := map[string]string{"pool": "web"}
	for _, name := range []string{"vigil_proxy_queue_timeouts_total", "vigil_proxy_queue_waiting"} {
		if v, ok := h.metric(name, web); !ok || v != 0 {
			t.Fatalf("%s{pool=\"web\"} = %v (exists %v) before any request, want 0", name, v, ok)
		}
	}
	go h.do("GET", "/hold", "") // takes the only slot until try_timeout
	eventually(t, "the slot taken", func() bool { return a.hits.Load() == 1 })
	const n = 3
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i], _, _ = h.do("GET", "/", "") }()
	}
	eventually(t, "3 requests waiting", func() bool {
		v, _ := h.metric("vigil_proxy_queue_waiting", web)
		return v == n
	})
	wg.Wait()
	for _, c := range codes {
		if c != http.StatusServiceUnavailable {
			t.Fatalf("codes %v, want 503 for each", codes)
		}
	}
	if v, _ := h.metric("vigil_proxy_queue_timeouts_total", web); v != n {
		t.Fatalf("vigil_proxy_queue_timeouts_total = %v, want %d", v, n)
	}
	if v, _ := h.metric("vigil_proxy_queue_waiting", web); v != 0 {
		t.Fatalf("vigil_proxy_queue_waiting = %v after the waits ended, want 0", v)
	}
}

// TestPerClientRefusedMetric: the connections max_conns_per_client resets
// at accept are counted in vigil_proxy_client_connections_refused_total
// {reason="per_client"} (0 from the start); another address's are not.
// Before, only a log line a minute said so.
func TestPerClientRefusedMetric(t *testing.T) {
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.MaxClientConns = 20
	cfg.MaxConnsPerClient = 2
	reg := prometheus.NewRegistry()
	p, err := New(cfg, nil, testLogger(t), WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, reg: reg}
	const name = "vigil_proxy_client_connections_refused_total"
	perClient := map[string]string{"reason": "per_client"}
	if v, ok := h.metric(name, perClient); !ok || v != 0 {
		t.Fatalf("%s{reason=\"per_client\"} = %v (exists %v) at start, want 0", name, v, ok)
	}
	addr := runProxy(t, p)
	var conns []net.Conn
	for range 5 {
		conns = append(conns, dialFrom(t, "127.0.0.1", addr))
	}
	served := 0
	for _, c := range conns {
		if get(c, time.Second) {
			served++
		}
	}
	if !get(dialFrom(t, "127.0.0.2", addr), 2*time.Second) {
		t.Fatal("another address was not served")
	}
	if served != 2 {
		t.Fatalf("%d of 5 connections from one address served, want 2", served)
	}
	eventually(t, "3 refusals counted", func() bool { v, _ := h.metric(name, perClient); return v == 3 })
	time.Sleep(100 * time.Millisecond)
	if v, _ := h.metric(name, perClient); v != 3 {
		t.Fatalf("%s = %v, want 3", name, v)
	}
}
