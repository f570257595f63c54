package proxy

import (
	"strings"
	"testing"
	"time"
)

// TestPassiveReturnWhileVerdictDownLogged: when a passive ejection ends
// while the canaries' verdict still keeps the origin out, the log says so
// instead of "origin returned after ejection".
func TestPassiveReturnWhileVerdictDownLogged(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	h, logs := startCapturing(t, pool1(PolicyFirst, urls(a, b)...), EngineFast)
	p := h.pool("web")
	o := p.origins[0]
	now := time.Now()
	p.eject(o, "consecutive_5xx", now, func() string { return "test" })
	if !o.has(flagPassive) {
		t.Fatal("the origin was not ejected")
	}
	o.set(flagVerdict, "canaries: unhealthy", now)
	p.evaluate(now.Add(24 * time.Hour)) // sends the return probe, which a passes
	eventually(t, "the passive ejection ending", func() bool { return !o.has(flagPassive) })
	if got := logs.lines("origin returned after ejection"); len(got) != 0 {
		t.Errorf("logged a return for an origin still out: %q", got)
	}
	if got := logs.lines("passive ejection ended; origin still out"); len(got) != 1 || !strings.Contains(got[0], "still=verdict_down") {
		t.Errorf("want one still-out line naming verdict_down, got %q", got)
	}
}

// TestVerdictClearWhilePassiveEjectedLogged: verdicts that clear an origin
// still passively ejected log that it is still out, naming why.
func TestVerdictClearWhilePassiveEjectedLogged(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	h, logs := startCapturing(t, pool1(PolicyFirst, urls(a, b)...), EngineFast)
	p := h.pool("web")
	o := p.origins[0]
	now := time.Now()
	o.set(flagVerdict, "canaries: unhealthy", now)
	p.eject(o, "consecutive_5xx", now, func() string { return "test" })
	p.applyVerdicts(nil, now) // no verdict any more: unknown clears the flag
	if o.has(flagVerdict) {
		t.Fatal("the verdict flag was not cleared")
	}
	if got := logs.lines("verdicts cleared origin; origin still out"); len(got) != 1 || !strings.Contains(got[0], "still=passive_ejected") {
		t.Errorf("want one still-out line naming passive_ejected, got %q (all: %q)", got, logs.lines("verdicts cleared"))
	}
}
