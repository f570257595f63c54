package proxy

import (
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// The published signal says whether the proxy has the origin out of
// rotation for any reason (Out, OutBy), as /api/v1/origins does, while
// Ejected stays the passive detector's alone: the canary's passive triggers
// run an origin's checks on Ejected, and an origin out by the canaries' own
// verdicts, or drained, must not set them off. Was: Ejected only, so the
// Ejections panel showed an origin out by verdicts or drained as in
// rotation.
func TestSignalSaysOutForAnyReason(t *testing.T) {
	bs := []*backend{newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c"), newBackend(t, "d")}
	cfg := pool1(PolicyRoundRobin, urls(bs...)...)
	cfg.SignalWindow = 50 * time.Millisecond
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Region, cfg.Vantage = "eu-west", "proxy-1"
	// Two of the three origins not drained go out: past max_ejected 50%.
	cfg.Pools[0].MaxEjected = 100
	src := &memSource{}
	src.set(reporting.Verdict{Check: "home", Target: "o0", Region: "eu", State: reporting.StateUnhealthy,
		At: time.Now(), Expires: time.Now().Add(time.Hour)})
	h := start(t, cfg, src, true)
	if !h.p.Drain("o1", "maintenance") {
		t.Fatal("Drain(o1) found no origin")
	}
	pl := h.pool("web")
	pl.eject(pl.origins[2], ReasonConsecutive5xx, time.Now(), func() string { return "5 consecutive failed tries" })
	eventually(t, "o0 out by verdicts", func() bool { return h.p.Origins()[0].VerdictDown })

	api := map[string]OriginStatus{}
	for _, st := range adminOrigins(t, h.p) {
		api[st.Name] = st
	}
	want := map[string]struct {
		ejected, out bool
		outBy        string
		reason       string
	}{
		"o0": {false, true, "verdict_down", ""},
		"o1": {false, true, "drained", ""},
		"o2": {true, true, "passive_ejected", ReasonConsecutive5xx},
		"o3": {false, false, "", ""},
	}
	for name, w := range want {
		if api[name].Available == w.out {
			t.Fatalf("/api/v1/origins %s: available %v, want %v: %+v", name, api[name].Available, !w.out, api[name])
		}
	}
	// The first window after the three were taken out.
	since := time.Now()
	latest := map[string]reporting.Signal{}
	eventually(t, "a signal per origin from after the setup", func() bool {
		for _, s := range h.signals.all() {
			if s.At.After(since) {
				latest[s.Origin] = s
			}
		}
		return len(latest) == len(want)
	})
	for name, w := range want {
		s := latest[name]
		if s.Ejected != w.ejected || s.Out != w.out || s.OutBy != w.outBy || s.Reason != w.reason {
			t.Errorf("signal for %s: ejected %v out %v out_by %q reason %q; want ejected %v out %v out_by %q reason %q",
				name, s.Ejected, s.Out, s.OutBy, s.Reason, w.ejected, w.out, w.outBy, w.reason)
		}
	}
}
