package proxy

import (
	"strings"
	"testing"
)

// A PUT with an Idempotency-Key is replay-safe only while its body is
// buffered: one larger than retry.max_buffered_body was streamed to the first
// origin and cannot be sent again, so that origin's 503 is the answer and the
// next origin sees nothing.
func TestStreamedIdempotentPUTNotRetriedOn503(t *testing.T) {
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(mode503)
	cfg := pool1(PolicyFirst, urls(bad, good)...)
	cfg.Pools[0].Passive.Consecutive5xx = -1
	cfg.Pools[0].Retry.MaxBufferedBody = 1 << 10
	h := start(t, cfg, nil, false)

	long := strings.Repeat("x", 64<<10) // 64 KiB > max_buffered_body 1 KiB: streamed
	code, body, _ := h.do("PUT", "/doc/1", long, "Idempotency-Key", "k-streamed")
	if code != 503 || body != "down bad" {
		t.Fatalf("PUT with a streamed body: got %d %q, want the first origin's 503 %q", code, body, "down bad")
	}
	if n := bad.hits.Load(); n != 1 {
		t.Fatalf("first origin got %d tries, want exactly 1", n)
	}
	if n := good.hits.Load(); n != 0 {
		t.Fatalf("second origin got %d requests, want none: a streamed body was replayed", n)
	}
	if bad.body != long {
		t.Fatalf("first origin received %d body bytes, want %d", len(bad.body), len(long))
	}
	if v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"cause": CauseStatus5xx}); v != 0 {
		t.Fatalf("retries_total{cause=status_5xx} = %v, want 0", v)
	}

	// The same PUT with a body under the limit is buffered and moves on.
	code, body, _ = h.do("PUT", "/doc/1", "short", "Idempotency-Key", "k-buffered")
	if code != 200 || body != "ok good" || good.body != "short" {
		t.Fatalf("PUT with a buffered body: got %d %q (second origin saw body %q), want it moved to the good origin", code, body, good.body)
	}
}
