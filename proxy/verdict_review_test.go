package proxy

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// A reload that raises verdicts.quorum above the regions reporting for the
// pool logs the warning, as one that makes other checks count does: the
// quorum's reach depends on the pool's config as much as on the verdicts
// read. Was: checked only when the set of verdict keys read changed, so a
// reload to quorum 2 with one reporting region said nothing and verdicts
// silently took no origin out.
func TestVerdictQuorumWarningOnReload(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	canary := newVerdictCanary(t, func() []reporting.Verdict {
		now := time.Now()
		return []reporting.Verdict{
			{Check: "healthz", Target: "o0", Region: "local", State: reporting.StateHealthy, OK: true, At: now, Expires: now.Add(time.Minute)},
			{Check: "healthz", Target: "o1", Region: "local", State: reporting.StateUnhealthy, Cause: "status", At: now, Expires: now.Add(time.Minute)},
		}
	})
	config := func(quorum int, checks ...string) Config {
		cfg := pool1(PolicyRoundRobin, urls(a, b)...)
		cfg.VerdictPoll = 20 * time.Millisecond
		cfg.Pools[0].Verdicts.Quorum = quorum
		cfg.Pools[0].Verdicts.Checks = checks
		return cfg
	}
	logs := &tryLogs{}
	h := startLog(t, config(1), canary.source(), true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
	const warning = "verdicts.quorum exceeds the regions that report for the pool"
	eventually(t, "o1 out by the canary's verdict (quorum 1)", func() bool {
		return adminOrigins(t, h.p)[1].VerdictDown
	})
	if w := logs.lines(warning); len(w) != 0 {
		t.Fatalf("quorum 1 with one region: want no warning, got %q", w)
	}

	if err := h.p.Reload(config(2)); err != nil {
		t.Fatalf("reload to quorum 2: %v", err)
	}
	eventually(t, "the quorum warning after the reload to quorum 2", func() bool {
		return len(logs.lines("level=WARN", warning)) == 1
	})
	w := logs.lines("level=WARN", warning)[0]
	for _, attr := range []string{"pool=web", "quorum=2", "regions=local"} {
		if !strings.Contains(w, attr) {
			t.Errorf("warning lacks %s:\n%s", attr, w)
		}
	}
	eventually(t, "o1 back in service, below the quorum", func() bool {
		st := adminOrigins(t, h.p)[1]
		return !st.VerdictDown && strings.HasPrefix(st.VerdictBelowQuorum, "not taken out: ")
	})

	// The same config again: nothing changed, no second line; nor over
	// several polls.
	if err := h.p.Reload(config(2)); err != nil {
		t.Fatalf("reload of the same config: %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	if n := len(logs.lines(warning)); n != 1 {
		t.Fatalf("after an unchanged reload and several polls: want still one warning, got %d", n)
	}

	// Checks that no verdict is of: no region reports, nothing to say.
	if err := h.p.Reload(config(2, "other")); err != nil {
		t.Fatalf("reload to checks [other]: %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	if n := len(logs.lines(warning)); n != 1 {
		t.Fatalf("no counted verdict: want still one warning, got %d", n)
	}
	// A reload that makes healthz count again, still quorum 2: warned anew.
	if err := h.p.Reload(config(2, "healthz")); err != nil {
		t.Fatalf("reload to checks [healthz]: %v", err)
	}
	eventually(t, "the quorum warning after the reload that makes healthz count", func() bool {
		return len(logs.lines("level=WARN", warning)) == 2
	})
}
