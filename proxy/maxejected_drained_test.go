package proxy

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// drainAPI drains (on) or undrains an origin through a real admin listener.
func drainAPI(t *testing.T, admin, name string, on bool) {
	t.Helper()
	verb := "undrain"
	if on {
		verb = "drain"
	}
	req, _ := http.NewRequest(http.MethodPost, admin+"/api/v1/origins/"+name+"/"+verb, nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d", verb, name, resp.StatusCode)
	}
}

// startDrainable is a proxy over backends named a, b, … (origins o0, o1,
// …) with consecutive_5xx 3, verdicts with quorum 1, and a real admin
// listener taking the token s3cret; its log is kept.
func startDrainable(t *testing.T, n int) (*harness, []*backend, string, *tryLogs) {
	t.Helper()
	var bs []*backend
	for i := range n {
		bs = append(bs, newBackend(t, string(rune('a'+i))))
	}
	cfg := pool1(PolicyRoundRobin, urls(bs...)...)
	cfg.AdminToken = "s3cret"
	cfg.Pools[0].Passive = PassiveConfig{Consecutive5xx: 3, Ejection: time.Minute}
	cfg.Pools[0].Verdicts = VerdictConfig{Quorum: 1, MaxAge: time.Minute}
	logs := &tryLogs{}
	h := startLog(t, cfg, nil, false, testEngine(), slog.New(slog.NewTextHandler(logs, nil)))
	admin := httptest.NewServer(h.p.AdminHandler())
	t.Cleanup(admin.Close)
	return h, bs, admin.URL, logs
}

// TestMaxEjectedDrainedNotCounted: a drained origin whose checks fail is
// verdict-down too, and used to count against max_ejected: with a of
// three drained and failing, a failing b was "not taken out: max_ejected
// 50% reached". A drained origin counts neither in the ejected origins nor
// in the origins max_ejected is a share of.
func TestMaxEjectedDrainedNotCounted(t *testing.T) {
	h, _, admin, _ := startDrainable(t, 3)
	pl := h.pool("web")
	drainAPI(t, admin, "o0", true)
	now := time.Now()
	pl.applyVerdicts([]reporting.Verdict{
		verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now),
		verdict("o1", "healthz", "eu", reporting.StateUnhealthy, now),
	}, now)
	st := originsByName(t, admin)
	if !st["o0"].VerdictDown || !st["o1"].VerdictDown || st["o1"].EjectionRefused != "" {
		t.Fatalf("o0 (drained) verdict_down=%v; o1 verdict_down=%v refused %q: want both down (the drained o0 does not count)",
			st["o0"].VerdictDown, st["o1"].VerdictDown, st["o1"].EjectionRefused)
	}
	for i := 0; i < 6; i++ {
		if code, body, _ := h.do("GET", "/", ""); body != "ok c" {
			t.Fatalf("GET %d: %d %q, want only c", i, code, body)
		}
	}
}

// TestMaxEjectedBaseExcludesDrained: max_ejected is a share of the origins
// not drained. With a and b of four drained, c and d failing both used to
// be ejected (50% of 4), leaving no origin; now one is (50% of 2), and the
// pool keeps one. With all but one origin drained, that one is never
// ejected. A drain that lowers the cap returns the origin due back first,
// logged.
func TestMaxEjectedBaseExcludesDrained(t *testing.T) {
	t.Run("two of four drained", func(t *testing.T) {
		h, bs, admin, _ := startDrainable(t, 4)
		drainAPI(t, admin, "o0", true)
		drainAPI(t, admin, "o1", true)
		bs[2].mode.Store(mode503)
		bs[3].mode.Store(mode503)
		for i := 0; i < 16; i++ {
			h.do("POST", "/", "x")
		}
		st := originsByName(t, admin)
		if n := b2i(st["o2"].PassiveEjected) + b2i(st["o3"].PassiveEjected); n != 1 {
			t.Fatalf("%d of c and d ejected, want 1 (50%% of the 2 origins not drained):\no2 %+v\no3 %+v", n, st["o2"], st["o3"])
		}
		if !st["o2"].Available && !st["o3"].Available {
			t.Fatal("no origin available")
		}
	})
	t.Run("all but one drained", func(t *testing.T) {
		h, bs, admin, _ := startDrainable(t, 3)
		drainAPI(t, admin, "o0", true)
		drainAPI(t, admin, "o1", true)
		bs[2].mode.Store(mode503)
		for i := 0; i < 6; i++ {
			h.do("POST", "/", "x")
		}
		now := time.Now()
		h.pool("web").applyVerdicts([]reporting.Verdict{verdict("o2", "healthz", "eu", reporting.StateUnhealthy, now)}, now)
		st := originsByName(t, admin)
		if !st["o2"].Available || !strings.Contains(st["o2"].EjectionRefused, "passive: consecutive_5xx") || !strings.Contains(st["o2"].EjectionRefused, "verdicts: ") {
			t.Fatalf("the one origin not drained: %+v, want kept in service, refused by max_ejected for both", st["o2"])
		}
	})
	t.Run("a drain lowers the cap", func(t *testing.T) {
		h, bs, admin, logs := startDrainable(t, 4)
		bs[2].mode.Store(mode503)
		bs[3].mode.Store(mode503)
		for i := 0; i < 24 && h.pool("web").ejectedCount() < 2; i++ {
			h.do("POST", "/", "x")
		}
		if n := h.pool("web").ejectedCount(); n != 2 {
			t.Fatalf("%d ejected, want c and d (50%% of 4)", n)
		}
		drainAPI(t, admin, "o0", true) // 50% of 3: one
		st := originsByName(t, admin)
		if n := b2i(st["o2"].PassiveEjected) + b2i(st["o3"].PassiveEjected); n != 1 || !st["o1"].Available {
			t.Fatalf("after draining o0: %d of c and d ejected, want 1:\n%+v", n, st)
		}
		if len(logs.lines("origin returned early: max_ejected counts from the origins not drained", `cause="drain of o0"`, "passive=consecutive_5xx")) != 1 {
			t.Errorf("no log line for the early return:\n%s", logs.String())
		}
	})
	t.Run("an undrain raises the count", func(t *testing.T) {
		// o0 drained and verdict-down, o1 passively ejected (50% of 2).
		// Undrained, o0 counts: 2 out of 3 is over 50%, and the verdict
		// outranks o1's passive ejection.
		h, bs, admin, logs := startDrainable(t, 3)
		pl := h.pool("web")
		drainAPI(t, admin, "o0", true)
		now := time.Now()
		down := []reporting.Verdict{verdict("o0", "healthz", "eu", reporting.StateUnhealthy, now)}
		pl.applyVerdicts(down, now)
		bs[1].mode.Store(mode503)
		for i := 0; i < 12 && !pl.origins[1].has(flagPassive); i++ {
			h.do("POST", "/", "x")
		}
		bs[1].mode.Store(modeOK)
		if st := originsByName(t, admin); !st["o0"].VerdictDown || !st["o1"].PassiveEjected {
			t.Fatalf("before the undrain: %+v", st)
		}
		drainAPI(t, admin, "o0", false)
		pl.applyVerdicts(down, now)
		st := originsByName(t, admin)
		if !st["o0"].VerdictDown || st["o0"].Available || !st["o1"].Available {
			t.Fatalf("after the undrain: o0 %+v\no1 %+v, want o0 out by its verdict, o1 back", st["o0"], st["o1"])
		}
		if len(logs.lines("origin returned early", `cause="undrain of o0"`, "origin=o1")) != 1 {
			t.Errorf("no log line for o1's early return:\n%s", logs.String())
		}
		for i := 0; i < 4; i++ {
			if _, body, _ := h.do("GET", "/", ""); body == "ok a" {
				t.Fatalf("GET %d reached the verdict-down o0", i)
			}
		}
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
