package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestLastResortAcrossReloadEndsOnce: a last-resort incident open at a
// reload, ended by a request that arrived before the reload (its body still
// uploading, so it runs on the previous generation of the pool) and by new
// requests, is logged as over once (was: once by each generation).
func TestLastResortAcrossReloadEndsOnce(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.Pools[0].MaxEjected = 100
	cfg.Pools[0].Origins[0].MaxConns = 1
	h, logs := startCapturing(t, cfg, EngineFast)
	old := h.pool("web")
	now := time.Now()
	old.applyVerdicts([]reporting.Verdict{verdict("o1", "healthz", "eu", reporting.StateUnhealthy, now)}, now)
	o0 := h.origin("web", "o0")
	o0.inflight.Store(1) // o0 busy at max_conns 1 (as a long request would hold it)
	if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok b" {
		t.Fatalf("last resort: %d %q", code, body)
	}
	// Request A: arrives now, its body is still uploading over the reload.
	c, err := net.Dial("tcp", h.front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\na")
	time.Sleep(300 * time.Millisecond)
	if err := h.p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	o0.inflight.Store(0) // o0's long request ended
	io.WriteString(c, "bcde")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("request A (old pool): %d %q", resp.StatusCode, rb)
	}
	if code, body, _ := h.do("GET", "/", ""); code != 200 {
		t.Fatalf("after: %d %q", code, body)
	}
	began := logs.lines("pool has no available origin")
	ended := logs.lines("last resort over")
	if len(began) != 1 || len(ended) != 1 {
		t.Errorf("one incident across a reload: want 1 begin and 1 end line, got:\n%s\n%s", strings.Join(began, "\n"), strings.Join(ended, "\n"))
	}
}
