package proxy

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestConsecutiveEjectionDetailNamesCauses: the consecutive_5xx rule counts
// every failed try (timeouts, refused connections, 5xx answers); its
// ejection detail says what failed, by cause, as vigil_proxy_tries_total
// names them (was "5xx, connection error or timeout" for any of them).
func TestConsecutiveEjectionDetailNamesCauses(t *testing.T) {
	var n atomic.Int64
	release := make(chan struct{})
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 3 { // the first three outlast try_timeout
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(func() { close(release); flaky.CloseClientConnections(); flaky.Close() })
	good := newBackend(t, "good")
	cfg := pool1(PolicyFirst, flaky.URL, good.srv.URL)
	cfg.Pools[0].Retry.TryTimeout = 200 * time.Millisecond
	cfg.Pools[0].ConnectTimeout = 100 * time.Millisecond
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 5, SuccessRateStdev: -1}
	h := start(t, cfg, nil, false)
	for i := 0; i < 5; i++ { // each fails at o0, then is answered by good
		if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok good" {
			t.Fatalf("request %d: %d %q, want good's answer after failover", i, code, body)
		}
	}
	st := adminOrigins(t, h.p)[0]
	want := "5 consecutive failed tries (3 timeout, 2 status_5xx), consecutive_5xx 5"
	if !st.PassiveEjected || st.Why["passive"] != ReasonConsecutive5xx || st.EjectionDetail != want {
		t.Fatalf("ejected %v by %q, detail %q; want %s with %q", st.PassiveEjected, st.Why["passive"], st.EjectionDetail, ReasonConsecutive5xx, want)
	}
}
