package proxy

import (
	"testing"
	"time"
)

// TestConsecutiveDetailByCause: the consecutive_5xx rule's ejection detail
// says what failed in the run that ejected, by cause (as
// vigil_proxy_tries_total names them); a success ends the run and its
// counts. Failures recorded without a cause read as before.
func TestConsecutiveDetailByCause(t *testing.T) {
	const (
		ok      = ""
		noCause = "(observe)" // pl.observe(o, true, …): no cause known
	)
	for _, tc := range []struct {
		name  string
		tries []string
		want  string
	}{
		{"mixed", []string{CauseTimeout, CauseTimeout, CauseStatus5xx, CauseTimeout, CauseStatus5xx},
			"5 consecutive failed tries (3 timeout, 2 status_5xx), consecutive_5xx 5"},
		{"a success ends the run", []string{CauseConnectRefused, CauseConnectRefused, ok,
			CauseConnectRefused, CauseReset, CauseReset, CauseReset, CauseReset},
			"5 consecutive failed tries (1 connect_refused, 4 reset), consecutive_5xx 5"},
		{"causes unknown", []string{noCause, noCause, noCause, noCause, noCause},
			"5 consecutive failed tries (5xx, connection error or timeout), consecutive_5xx 5"},
		{"some causes unknown", []string{noCause, CauseStatus5xx, CauseStatus5xx, noCause, CauseStatus5xx},
			"5 consecutive failed tries (3 status_5xx, 2 other), consecutive_5xx 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := pool1(PolicyFirst, "http://127.0.0.1:1", "http://127.0.0.1:2")
			cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 5}
			h := start(t, cfg, nil, false)
			pl, o := h.pool("web"), h.origin("web", "o0")
			now := time.Now().UnixNano()
			for _, c := range tc.tries {
				if c == noCause {
					pl.observe(o, true, time.Millisecond, now)
				} else {
					pl.observeCause(o, c, time.Millisecond, now)
				}
			}
			st := adminOrigins(t, h.p)[0]
			if !st.PassiveEjected || st.Why["passive"] != ReasonConsecutive5xx || st.EjectionDetail != tc.want {
				t.Fatalf("ejected %v by %q, detail %q; want %s with %q", st.PassiveEjected, st.Why["passive"], st.EjectionDetail, ReasonConsecutive5xx, tc.want)
			}
		})
	}
}
