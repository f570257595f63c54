package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestEjectionRefusedShownInAPI: an origin that max_ejected keeps in
// service although verdicts or a passive rule would take it out says so in
// GET /api/v1/origins (ejection_refused), which used to show it available
// with no reason at all; the note goes when the condition ends.
func TestEjectionRefusedShownInAPI(t *testing.T) {
	const window = time.Second
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 3, SuccessRateStdev: -1, Window: window}
	h := start(t, cfg, nil, true)
	refused := func() string { return h.p.Origins()[0].EjectionRefused }

	a.mode.Store(mode503)
	for i := 0; i < 4; i++ {
		h.do("GET", "/", "")
	}
	if got := refused(); !strings.HasPrefix(got, "not taken out: max_ejected 50% reached: passive: consecutive_5xx (") {
		t.Errorf("passive refusal: ejection_refused %q", got)
	}
	a.mode.Store(modeOK)
	eventually(t, "the passive note to go once the origin answers well", func() bool {
		h.do("GET", "/", "")
		return refused() == ""
	})

	now := time.Now()
	pl := h.pool("web")
	pl.applyVerdicts([]reporting.Verdict{verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now)}, now)
	if o := h.p.Origins()[0]; o.VerdictDown || !strings.HasPrefix(o.EjectionRefused, "not taken out: max_ejected 50% reached: verdicts: ") ||
		!strings.Contains(o.EjectionRefused, "healthz") {
		t.Errorf("verdict refusal: verdict_down %v, ejection_refused %q", o.VerdictDown, o.EjectionRefused)
	}
	pl.applyVerdicts([]reporting.Verdict{verdict("o0", "healthz", "eu", reporting.StateHealthy, now)}, now)
	if got := refused(); got != "" {
		t.Errorf("after a healthy verdict: ejection_refused %q", got)
	}
}
