package proxy

import (
	"log/slog"
	"testing"
	"time"
)

// TestPassiveRefusalLoggedPerIncident: when max_ejected keeps a failing origin
// in service (here the only origin of a pool with the default 50%), the
// refusal is logged once per incident of that origin (was: once per pool
// until the next reload), and vigil_proxy_ejections_refused_total counts
// every refused ejection: with consecutive_5xx 3, each failed try from the
// third in a row on.
func TestPassiveRefusalLoggedPerIncident(t *testing.T) {
	const window = time.Second // buckets of 100ms, evaluated every 100ms
	a := newBackend(t, "a")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 3, SuccessRateStdev: -1, Window: window}
	logs := &tryLogs{}
	h := startLog(t, cfg, nil, true, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	refused := func() float64 {
		v, ok := h.metric("vigil_proxy_ejections_refused_total", map[string]string{"pool": "web", "origin": "o0", "reason": ReasonConsecutive5xx})
		if !ok {
			t.Fatal("no vigil_proxy_ejections_refused_total{reason=consecutive_5xx} series")
		}
		return v
	}
	if v := refused(); v != 0 {
		t.Fatalf("refused before any failure: %v", v)
	}
	incident := func(n int) {
		t.Helper()
		a.mode.Store(mode503)
		before := a.hits.Load()
		for i := 0; i < n; i++ {
			if code, _, _ := h.do("GET", "/", ""); code != 503 {
				t.Fatalf("request %d: %d, want the origin's 503", i, code)
			}
		}
		if h.origin("web", "o0").has(flagPassive) {
			t.Fatal("the only origin was ejected despite max_ejected 50%")
		}
		if tries := a.hits.Load() - before; tries < int64(n) {
			t.Fatalf("origin got %d tries, want at least %d", tries, n)
		}
	}

	incident(6)
	want := float64(a.hits.Load() - 2) // every failed try from the third on
	if v := refused(); v != want {
		t.Errorf("after the first incident: refused_total = %v, want %v", v, want)
	}
	if got := logs.lines("ejection refused by max_ejected", "origin=o0"); len(got) != 1 {
		t.Fatalf("first incident: %d refusal lines, want 1: %q", len(got), got)
	}

	// Recovered: healthy answers for longer than the window's last two
	// buckets end the incident.
	a.mode.Store(modeOK)
	for i := 0; i < 5; i++ {
		if code, _, _ := h.do("GET", "/", ""); code != 200 {
			t.Fatalf("healthy request %d: %d", i, code)
		}
		time.Sleep(window / 10)
	}
	hitsOK := a.hits.Load()

	incident(4)
	want += float64(a.hits.Load() - hitsOK - 2)
	if v := refused(); v != want {
		t.Errorf("after the second incident: refused_total = %v, want %v", v, want)
	}
	if got := logs.lines("ejection refused by max_ejected", "origin=o0"); len(got) != 2 {
		t.Fatalf("two incidents: %d refusal lines, want 2: %q", len(got), got)
	}
}
