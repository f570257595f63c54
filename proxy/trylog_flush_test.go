package proxy

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTryFailedLogBurstAccounted: the lines the rate limit leaves out of a
// burst of failed tries that then stops are logged once the burst is over
// ("lines left out by the rate limit", suppressed=N), so the log accounts
// for every failed try. Their count used to wait for the next line of the
// same origin and cause, which after a short outage never came: 12 failed
// tries read as 2.
func TestTryFailedLogBurstAccounted(t *testing.T) {
	cfg := pool1(PolicyFirst, deadURL(t))
	h, logs := startCapturing(t, cfg, EngineFast)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.p.evaluateLoop(ctx) }()
	defer func() { cancel(); <-done }()
	const n = 40
	for i := 0; i < n; i++ {
		if code, _, _ := h.do("GET", "/", ""); code != http.StatusBadGateway {
			t.Fatalf("request %d: %d, want 502", i, code)
		}
	}
	sum := func() int {
		total := 0
		for _, l := range append(logs.lines(`msg="proxy: try failed"`, "cause=connect_refused"),
			logs.lines(`msg="proxy: lines left out by the rate limit"`, "cause=connect_refused")...) {
			_, v, _ := strings.Cut(l, "suppressed=")
			k, _ := strconv.Atoi(strings.Fields(v + " ")[0])
			if strings.Contains(l, "try failed") {
				k++
			}
			total += k
		}
		return total
	}
	deadline := time.Now().Add(5 * time.Second)
	for sum() != n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := sum(); got != n {
		t.Fatalf("the log accounts for %d failed tries of %d:\n%s", got, n, strings.Join(logs.lines("proxy:"), "\n"))
	}
	if l := logs.lines(`msg="proxy: lines left out by the rate limit"`); len(l) != 1 || !strings.Contains(l[0], "level=WARN") ||
		!strings.Contains(l[0], "pool=web") || !strings.Contains(l[0], "origin=o0") {
		t.Errorf("flush lines: %q, want one warning naming the pool and origin", l)
	}
}
