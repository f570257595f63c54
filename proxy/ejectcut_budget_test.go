package proxy

import (
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestEjectionCutNotRefusedByRetryBudget: 40 GETs wait at a hung origin
// when it is taken out, on a proxy that served nothing before (its retry
// budget allows 10 retries then). Every cut request is sent to the next
// origin and answered 200. Was: the budget refused 30 of the resends, which
// got 502 while two healthy origins sat idle.
func TestEjectionCutNotRefusedByRetryBudget(t *testing.T) {
	hung, requests := hungOrigin(t)
	b1, b2 := newBackend(t, "b1"), newBackend(t, "b2")
	cfg := pool1(PolicyFirst, hung, b1.srv.URL, b2.srv.URL)
	cfg.Pools[0].Retry.TryTimeout = 5 * time.Second
	src := &memSource{}
	h := start(t, cfg, src, false)
	const n = 40
	codes := make(chan int, n)
	for range n {
		go func() {
			code, _, _ := h.do("GET", "/x", "")
			codes <- code
		}()
	}
	eventually(t, "every request waiting at the hung origin", func() bool { return requests.Load() == n })
	now := time.Now()
	src.set(verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now))
	h.pool("web").applyVerdicts(src.vs, now)
	bad := 0
	for range n {
		select {
		case c := <-codes:
			if c != 200 {
				bad++
			}
		case <-time.After(4 * time.Second):
			t.Fatal("a cut request was not answered within 4s")
		}
	}
	if bad != 0 {
		t.Fatalf("%d of %d requests cut at the ejection failed, want 0", bad, n)
	}
}
