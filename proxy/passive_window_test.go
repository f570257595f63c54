package proxy

import (
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Failures older than passive.window leave it: an origin that failed a burst
// of requests (below min_requests), then was idle for longer than the window
// and came back healthy is not ejected by the failure_rate rule for the old
// failures, with the evaluator running as in production.
func TestPassiveStaleFailuresLeaveWindow(t *testing.T) {
	const window = time.Second
	b := newBackend(t, "a")
	b.mode.Store(mode503)
	cfg := pool1(PolicyFirst, b.srv.URL)
	cfg.Pools[0].MaxEjected = units.Percent(100) // the only origin may be ejected
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: -1, SuccessRateStdev: -1,
		FailureRate: 25, MinRequests: 20, Window: window}
	h := start(t, cfg, nil, true)

	// 19 failures: one short of min_requests, so no rule applies yet.
	for i := 0; i < 19; i++ {
		if code, _, _ := h.do("GET", "/", ""); code != 503 {
			t.Fatalf("request %d: got %d, want the origin's 503", i, code)
		}
	}
	failedAt := time.Now()
	if st := adminOrigins(t, h.p)[0]; st.PassiveEjected {
		t.Fatalf("ejected below min_requests: %+v", st)
	}

	// Idle for a window and a half: the failures are out of the window. (The
	// half puts the healthy requests below in other buckets of the window's
	// ring than the failures, so they do not overwrite them.)
	time.Sleep(time.Until(failedAt.Add(window + window/2)))
	b.mode.Store(modeOK)
	for i := 0; i < 20; i++ {
		if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
			t.Fatalf("healthy request %d: got %d %q, want 200 %q", i, code, body, "ok a")
		}
	}
	// Several evaluations (every window/10) see 20 requests in the window:
	// all of them successes.
	time.Sleep(5 * window / 10)
	if st := adminOrigins(t, h.p)[0]; st.PassiveEjected {
		t.Fatalf("ejected for failures older than the window: why %q, detail %q", st.Why["passive"], st.EjectionDetail)
	}
	if v, _ := h.metric("vigil_proxy_ejections_total", map[string]string{"origin": "o0", "reason": ReasonFailureRate}); v != 0 {
		t.Fatalf("ejections_total{reason=failure_rate} = %v, want 0", v)
	}
}
