package proxy

import (
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestEjectionCutIsImmediate: on the fast engine, GETs waiting at a hung
// origin are answered by the next origin within a scheduling delay of the
// origin's ejection: the ejection wakes the engine's watcher rather than
// leaving the cut to its next 0.5 s tick. Four fresh proxies, so a tick
// that happens to fall just after the ejection cannot pass the test for
// all of them (each would, by chance, with probability 0.3).
func TestEjectionCutIsImmediate(t *testing.T) {
	const bound = 150 * time.Millisecond
	for round := range 4 {
		hung, requests := hungOrigin(t)
		b1 := newBackend(t, "b1")
		cfg := pool1(PolicyFirst, hung, b1.srv.URL)
		cfg.Pools[0].Retry.TryTimeout = 5 * time.Second
		src := &memSource{}
		h := startWith(t, cfg, src, false, EngineFast)
		const n = 3
		done := make(chan time.Time, n)
		codes := make(chan int, n)
		for range n {
			go func() {
				code, _, _ := h.do("GET", "/x", "")
				codes <- code
				done <- time.Now()
			}()
		}
		eventually(t, "every GET waiting at the hung origin", func() bool { return requests.Load() == n })
		now := time.Now()
		src.set(verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now))
		h.pool("web").applyVerdicts(src.vs, now)
		ejected := time.Now()
		for range n {
			select {
			case at := <-done:
				if code := <-codes; code != 200 {
					t.Fatalf("round %d: a GET got %d, want 200 from b1", round, code)
				}
				if took := at.Sub(ejected); took > bound {
					t.Fatalf("round %d: a GET waiting at the ejected origin was answered %s after the ejection, want within %s", round, took.Round(time.Millisecond), bound)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: a GET never ended", round)
			}
		}
	}
}
