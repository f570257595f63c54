package proxy

import (
	"testing"
	"time"
)

// TestPassiveWindowRulesNeedRecentFailures: the failure_rate, success_rate
// and latency_p95 rules eject only an origin failing now. Origin o0 fails (or
// answers slowly) while below min_requests, then recovers; once healthy
// traffic brings it to min_requests its window is far over the rule's limit,
// with the failures all older than the window's last two buckets: it is not
// ejected. One more failure and it is. An origin that keeps failing is
// ejected as before.
func TestPassiveWindowRulesNeedRecentFailures(t *testing.T) {
	const (
		window = 3 * time.Second // buckets of 300ms, evaluated every 300ms
		bad    = 10              // failures (slow answers) of o0, below min_requests
	)
	for _, tc := range []struct {
		name, reason string
		badMode      int32
		passive      PassiveConfig
	}{
		{"failure_rate", ReasonFailureRate, mode503,
			PassiveConfig{SuccessRateStdev: -1, FailureRate: 25}},
		{"success_rate", ReasonSuccessRate, mode503,
			PassiveConfig{SuccessRateStdev: 1.9}},
		{"latency_p95", ReasonLatencyP95, modeSlow, // 50ms answers
			PassiveConfig{SuccessRateStdev: -1, LatencyP95: 20 * time.Millisecond}},
	} {
		for _, keepsFailing := range []bool{false, true} {
			name := tc.name + "/recovered"
			if keepsFailing {
				name = tc.name + "/keeps_failing"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
				cfg := pool1(PolicyRoundRobin, urls(a, b, c)...)
				pc := tc.passive
				pc.Consecutive5xx, pc.MinRequests, pc.Window, pc.Ejection = -1, 20, window, time.Minute
				// The success-rate rule's own volume (default 100) set to
				// min_requests: the same traffic reaches every rule.
				pc.SuccessRateMinRequests = pc.MinRequests
				cfg.Pools[0].Passive = pc
				h := start(t, cfg, nil, true)
				// drive sends GETs (round robin over the three origins) until
				// a has had n requests in all, or until a is ejected (it then
				// gets none: the checks after drive judge whether it should
				// have been).
				drive := func(n int64) {
					t.Helper()
					for i := 0; a.hits.Load() < n; i++ {
						if i%8 == 7 && adminOrigins(t, h.p)[0].PassiveEjected {
							return
						}
						if i > 20*int(n) {
							t.Fatalf("origin a got %d requests, want %d", a.hits.Load(), n)
						}
						h.do("GET", "/", "")
					}
				}
				ejected := func() bool { return adminOrigins(t, h.p)[0].PassiveEjected }

				a.mode.Store(tc.badMode)
				drive(bad) // below min_requests: no rule judges a yet
				if ejected() {
					t.Fatal("ejected below min_requests")
				}
				// Let the failures fall out of the window's last two buckets
				// (not out of the window).
				time.Sleep(window / 10 * 3)
				if keepsFailing {
					a.mode.Store(modePartial) // every 5th request fails
					if tc.badMode == modeSlow {
						a.mode.Store(modeSlow)
					}
				} else {
					a.mode.Store(modeOK)
				}
				drive(bad + 12) // 22 requests in the window, 10 of them bad or more
				if keepsFailing {
					eventually(t, "origin a, still failing, ejected by "+tc.reason, ejected)
					if st := adminOrigins(t, h.p)[0]; st.Why["passive"] != tc.reason {
						t.Fatalf("ejected by %q (%s), want %s", st.Why["passive"], st.EjectionDetail, tc.reason)
					}
					return
				}
				time.Sleep(window / 10 * 3) // at least two evaluations
				if st := adminOrigins(t, h.p)[0]; st.PassiveEjected {
					t.Fatalf("recovered origin ejected on old failures: %s (%s)", st.Why["passive"], st.EjectionDetail)
				}
				// The window still holds the old failures: a new one ejects.
				a.mode.Store(tc.badMode)
				drive(bad + 13)
				eventually(t, "origin a ejected on failing again", ejected)
				if st := adminOrigins(t, h.p)[0]; st.Why["passive"] != tc.reason {
					t.Fatalf("ejected by %q (%s), want %s", st.Why["passive"], st.EjectionDetail, tc.reason)
				}
			})
		}
	}
}
