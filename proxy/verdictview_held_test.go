package proxy

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// An origin the canary holds down by flap damping says so, with the end of
// the hold-down, and keeps the cause of its failing runs while its runs pass
// (a passing run's verdict has no cause of its own); the "cleared" line's
// was= keeps it too. Was: "unhealthy in 1 region(s), quorum 1: local:
// healthz" with neither cause nor hold-down.
func TestVerdictReasonHeldDown(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	// The hold-down ends half a second past a whole second, so moving it
	// onto the proxy's clock (a few ms) does not change the second shown.
	heldUntil := time.Now().Add(time.Minute).Truncate(time.Second).Add(500 * time.Millisecond)
	const (
		failing = iota
		held
		recovering
		healthy
	)
	var phase atomic.Int32
	canary := newVerdictCanary(t, func() []reporting.Verdict {
		now := time.Now()
		v := reporting.Verdict{Check: "healthz", Target: "o1", Region: "local", State: reporting.StateUnhealthy,
			At: now, Expires: now.Add(time.Minute)}
		switch phase.Load() {
		case failing:
			v.Cause, v.Err, v.StatusCode = "status", "status 503, want 200", 503
		case held:
			v.OK, v.StatusCode, v.HeldUntil = true, 200, heldUntil
		case recovering:
			v.OK, v.StatusCode, v.HeldUntil = true, 200, now.Add(-time.Second)
		case healthy:
			v.OK, v.StatusCode, v.State = true, 200, reporting.StateHealthy
		}
		return []reporting.Verdict{v}
	})
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	logs := &tryLogs{}
	h := startLog(t, cfg, canary.source(), true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))

	const prefix = "unhealthy in 1 region(s), quorum 1: local: healthz"
	for _, step := range []struct {
		phase int32
		want  string
	}{
		{failing, prefix + " (status)"},
		{held, prefix + " (status; held down by flap damping until " + heldUntil.UTC().Format("15:04:05") + "Z)"},
		{recovering, prefix + " (status; passing again after a flap hold-down)"},
	} {
		phase.Store(step.phase)
		var got string
		for i := 0; i < 500; i++ {
			if st := adminOrigins(t, h.p)[1]; st.VerdictDown {
				if got = st.Why["verdict"]; got == step.want {
					break
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got != step.want {
			t.Fatalf("/api/v1/origins why.verdict = %q, want %q", got, step.want)
		}
	}
	phase.Store(healthy)
	eventually(t, "o1 back in service", func() bool { return adminOrigins(t, h.p)[1].Available })
	line := logs.lines("verdicts cleared origin")
	if len(line) != 1 {
		t.Fatalf("want one verdicts-cleared line, got %q", line)
	}
	for _, want := range []string{`msg="proxy: verdicts cleared origin: region(s) turned healthy"`, "turned_healthy=local",
		`was="` + prefix + ` (status; passing again after a flap hold-down)"`} {
		if !strings.Contains(line[0], want) {
			t.Errorf("cleared line lacks %s:\n%s", want, line[0])
		}
	}
}
