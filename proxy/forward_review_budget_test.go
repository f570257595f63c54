package proxy

import (
	"net/http"
	"testing"
	"time"
)

// TestForwardRetryBudgetCountsOnlyRetriesMade: a try that fails when no
// retry is left to make (its request's last try, or no origin left to try)
// counts nothing against retry.retry_budget (was: counted as a retry, so a
// URL slow on every origin used up the budget twice as fast, and the retry
// of a later request that needed one was refused: 504 instead of the other
// origin's answer).
func TestForwardRetryBudgetCountsOnlyRetriesMade(t *testing.T) {
	us := []string{
		sleepyOrigin(t, "a", 2*time.Second, []string{"*"}, nil),
		sleepyOrigin(t, "b", 2*time.Second, []string{"/slow"}, nil),
	}
	cfg := pool1(PolicyFirst, us...)
	pc := &cfg.Pools[0]
	pc.Passive.Consecutive5xx = -1
	pc.ConnectTimeout = 50 * time.Millisecond
	pc.Retry = RetryConfig{Tries: 3, TryTimeout: 100 * time.Millisecond, Budget: 5 * time.Second}
	h := start(t, cfg, nil, false)
	// 8 requests, 8 retries made (a to b): within the 10 always allowed.
	for i := 0; i < 8; i++ {
		if code, _, _ := h.do("GET", "/slow", ""); code != http.StatusGatewayTimeout {
			t.Fatalf("GET /slow %d: %d, want 504", i, code)
		}
	}
	if code, body, _ := h.do("GET", "/x", ""); code != 200 || body != "ok b" {
		t.Fatalf("GET /x: %d %q, want b's answer after a's timeout (the retry budget has room)", code, body)
	}
	if v, _ := h.metric("vigil_proxy_retry_budget_exhausted_total", map[string]string{"pool": "web"}); v != 0 {
		t.Errorf("retry_budget_exhausted_total = %v, want 0", v)
	}
	if v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"pool": "web", "cause": CauseTimeout}); v != 9 {
		t.Errorf("retries_total{cause=timeout} = %v, want 9", v)
	}
}
