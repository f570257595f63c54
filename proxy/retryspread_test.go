package proxy

import (
	"fmt"
	"testing"
)

// TestRetriesSkipAdjacentDeadOrigins: of a round-robin (and a least_conn)
// pool of 20 origins, 5 listed next to each other refuse connections (a
// rack or zone down) and passive detection is off, so nothing takes them
// out: every request still gets its 200 within retry.tries 3. A retry
// that took the next origin in order (round robin's sequence) went to the
// second and third dead origin of the run and answered 502.
func TestRetriesSkipAdjacentDeadOrigins(t *testing.T) {
	for _, policy := range []string{PolicyRoundRobin, PolicyLeastConn} {
		t.Run(policy, func(t *testing.T) {
			var bs []*backend
			for i := range 20 {
				bs = append(bs, newBackend(t, fmt.Sprintf("b%d", i)))
			}
			cfg := pool1(policy, urls(bs...)...)
			cfg.Pools[0].Passive.Consecutive5xx = -1
			cfg.Pools[0].Retry.Tries = 3
			h := start(t, cfg, nil, false)
			for i := 5; i < 10; i++ {
				bs[i].srv.Close() // connection refused from now on
			}
			failed := 0
			for n := range 300 {
				if code, body, _ := h.do("GET", fmt.Sprintf("/r%d", n), ""); code != 200 {
					failed++
					if failed <= 3 {
						t.Errorf("request %d: %d %q", n, code, body)
					}
				}
			}
			if failed > 0 {
				t.Fatalf("%d of 300 requests failed with 15 healthy origins untried", failed)
			}
			for i := 5; i < 10; i++ {
				if !h.origin("web", fmt.Sprintf("o%d", i)).Available() {
					t.Fatalf("o%d taken out: the test wants the dead origins in the pool", i)
				}
			}
		})
	}
}
