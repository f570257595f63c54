package proxy

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// One canary, quorum 2: an origin it holds unhealthy stays in service, and
// /api/v1/origins says so (verdict_below_quorum) instead of nothing; the
// quorum that only one reporting region can never meet is logged once.
func TestVerdictBelowQuorumShown(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	var healed atomic.Bool
	canary := newVerdictCanary(t, func() []reporting.Verdict {
		now := time.Now()
		vs := []reporting.Verdict{
			{Check: "healthz", Target: "o0", Region: "local", State: reporting.StateHealthy, OK: true, At: now, Expires: now.Add(time.Minute)},
			{Check: "healthz", Target: "o1", Region: "local", State: reporting.StateUnhealthy, Cause: "status", At: now, Expires: now.Add(time.Minute)},
		}
		if healed.Load() {
			vs[1].State, vs[1].OK, vs[1].Cause = reporting.StateHealthy, true, ""
		}
		return vs
	})
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.Quorum = 2
	logs := &tryLogs{}
	h := startLog(t, cfg, canary.source(), true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))

	const want = "not taken out: unhealthy in 1 region(s), quorum 2: local: healthz (status)"
	eventually(t, "o1 shows verdict_below_quorum", func() bool {
		return adminOrigins(t, h.p)[1].VerdictBelowQuorum == want
	})
	st := adminOrigins(t, h.p)
	if !st[1].Available || st[1].VerdictDown || st[1].Why != nil {
		t.Errorf("o1 below the quorum: want available, not verdict_down, no why: %+v", st[1])
	}
	if st[0].VerdictBelowQuorum != "" {
		t.Errorf("healthy o0 has verdict_below_quorum %q", st[0].VerdictBelowQuorum)
	}
	time.Sleep(100 * time.Millisecond) // several more polls: still one warning
	warn := logs.lines("level=WARN", "verdicts.quorum exceeds the regions that report for the pool")
	if len(warn) != 1 {
		t.Fatalf("want one quorum warning, got %q", warn)
	}
	for _, attr := range []string{"pool=web", "quorum=2", "regions=local"} {
		if !strings.Contains(warn[0], attr) {
			t.Errorf("warning lacks %s:\n%s", attr, warn[0])
		}
	}
	healed.Store(true)
	eventually(t, "the note clears when the region turns healthy", func() bool {
		return adminOrigins(t, h.p)[1].VerdictBelowQuorum == ""
	})
}

// A region two canaries (vantages) report from, one seeing the origin
// broken: the reason names that vantage, so the operator can tell which
// canary to look at; with one vantage per region the reason stays as it
// was ("b: asset (status)").
func TestVerdictReasonNamesVantageOfSharedRegion(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	canary := newVerdictCanary(t, func() []reporting.Verdict {
		now := time.Now()
		return []reporting.Verdict{
			{Check: "asset", Target: "o1", Region: "b", Vantage: "vm1", State: reporting.StateHealthy, OK: true, At: now, Expires: now.Add(time.Minute)},
			{Check: "asset", Target: "o1", Region: "b", Vantage: "vm2", State: reporting.StateUnhealthy, Cause: "status", At: now, Expires: now.Add(time.Minute)},
			{Check: "asset", Target: "o1", Region: "c", Vantage: "vm3", State: reporting.StateUnhealthy, Cause: "status", At: now, Expires: now.Add(time.Minute)},
		}
	})
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.Quorum = 2
	h := startLog(t, cfg, canary.source(), true, EngineFast, testLogger(t))
	const want = "unhealthy in 2 region(s), quorum 2: b: asset (status; vantage vm2); c: asset (status)"
	eventually(t, "o1 out, its reason naming vantage vm2", func() bool {
		return adminOrigins(t, h.p)[1].Why["verdict"] == want
	})
}
