package proxy

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// When the verdicts that held an origin out stop counting, the log line
// says why: the regions that stopped reporting (their last verdicts aged
// past max_age or expired, or are gone), named, apart from those that
// turned healthy. Was: one "verdicts cleared origin" line for both, without
// the regions or the reason it had been out.
func TestVerdictClearLogSaysWhy(t *testing.T) {
	const maxAge = 10 * time.Second
	t0 := time.Now()
	later := t0.Add(maxAge + time.Second) // eu's and us's first verdicts are stale by then
	v := func(region string, st reporting.State, at time.Time, expires time.Duration) reporting.Verdict {
		return reporting.Verdict{Check: "home", Target: "o0", Region: region, State: st,
			OK: st == reporting.StateHealthy, At: at, Expires: at.Add(expires)}
	}
	down := []reporting.Verdict{
		v("eu", reporting.StateUnhealthy, t0, time.Hour),
		v("us", reporting.StateUnhealthy, t0, time.Hour),
		v("ap", reporting.StateHealthy, t0, time.Hour),
	}
	for _, tc := range []struct {
		name  string
		after []reporting.Verdict // at later
		cause string              // in the message
		attrs []string            // in the line
		not   []string            // not in the line
	}{
		{
			name: "us stopped, eu still unhealthy",
			after: []reporting.Verdict{v("eu", reporting.StateUnhealthy, later, time.Hour), down[1],
				v("ap", reporting.StateHealthy, later, time.Hour)},
			cause: "verdicts expired, region(s) stopped reporting",
			attrs: []string{"stopped_reporting=us", "still_unhealthy=eu", "quorum=2", "max_age=10s",
				`was="unhealthy in 2 region(s), quorum 2: eu: home; us: home"`},
			not: []string{"turned_healthy", "ap"},
		},
		{
			name:  "both stopped, verdicts gone",
			after: nil,
			cause: "verdicts expired, region(s) stopped reporting",
			attrs: []string{"stopped_reporting=eu,us", "quorum=2"},
			not:   []string{"turned_healthy", "still_unhealthy"},
		},
		{
			name: "us verdict expired before max_age",
			after: []reporting.Verdict{v("eu", reporting.StateUnhealthy, later, time.Hour),
				v("us", reporting.StateUnhealthy, later.Add(-2*time.Second), time.Second)},
			cause: "verdicts expired, region(s) stopped reporting",
			attrs: []string{"stopped_reporting=us", "still_unhealthy=eu"},
		},
		{
			name: "us turned healthy",
			after: []reporting.Verdict{v("eu", reporting.StateUnhealthy, later, time.Hour),
				v("us", reporting.StateHealthy, later, time.Hour), v("ap", reporting.StateHealthy, later, time.Hour)},
			cause: "region(s) turned healthy",
			attrs: []string{"turned_healthy=us", "still_unhealthy=eu"},
			not:   []string{"stopped_reporting", "expired", "max_age", "ap"},
		},
		{
			name:  "us degraded, eu stopped",
			after: []reporting.Verdict{down[0], v("us", reporting.StateDegraded, later, time.Hour)},
			cause: "verdicts expired, region(s) stopped reporting",
			attrs: []string{"stopped_reporting=eu", "turned_healthy=us"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newBackend(t, "a"), newBackend(t, "b")
			cfg := pool1(PolicyFirst, urls(a, b)...)
			cfg.Pools[0].Verdicts.Quorum = 2
			cfg.Pools[0].Verdicts.MaxAge = maxAge
			h, logs := startCapturing(t, cfg, EngineFast)
			p := h.pool("web")
			p.applyVerdicts(down, t0)
			if st := adminOrigins(t, h.p)[0]; !st.VerdictDown {
				t.Fatalf("o0 not out with eu and us unhealthy (quorum 2): %+v", st)
			}
			p.applyVerdicts(tc.after, later)
			if st := adminOrigins(t, h.p)[0]; st.VerdictDown || !st.Available {
				t.Fatalf("o0 still out: %+v", st)
			}
			got := logs.lines("verdicts cleared origin")
			if len(got) != 1 {
				t.Fatalf("want one verdicts-cleared line, got %q", got)
			}
			line := got[0]
			if !strings.Contains(line, `msg="proxy: verdicts cleared origin: `+tc.cause+`"`) {
				t.Errorf("line does not say %q:\n%s", tc.cause, line)
			}
			for _, want := range append(tc.attrs, "origin=o0", "pool=web") {
				if !strings.Contains(line, want) {
					t.Errorf("line lacks %s:\n%s", want, line)
				}
			}
			for _, bad := range tc.not {
				if strings.Contains(line, bad) {
					t.Errorf("line has %q:\n%s", bad, line)
				}
			}
		})
	}
}

// TestVerdictClearBothCanariesDie: two canaries (eu, us), read over HTTP,
// hold an origin out with quorum 2, and both die, us a moment after eu.
// eu's last verdicts age out first and the origin returns; the line names
// both regions as stopped reporting, us by its canary not answering. Was:
// stopped_reporting=eu still_unhealthy=us, as if us's canary were up and
// still finding the origin down.
func TestVerdictClearBothCanariesDie(t *testing.T) {
	const maxAge = 600 * time.Millisecond
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	cfg.Pools[0].Verdicts.Quorum = 2
	var srcs Sources
	canaries := map[string]*verdictCanary{}
	for _, r := range []string{"eu", "us"} {
		c := newVerdictCanary(t, func() []reporting.Verdict {
			now := time.Now()
			return []reporting.Verdict{{Check: "home", Target: "o0", Region: r, State: reporting.StateUnhealthy,
				Cause: "timeout", At: now, Expires: now.Add(time.Hour)}}
		})
		canaries[r] = c
		srcs = append(srcs, c.source())
	}
	logs := &tryLogs{}
	h := startLog(t, cfg, srcs, true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
	eventually(t, "o0 out by verdicts", func() bool { return adminOrigins(t, h.p)[0].VerdictDown })

	canaries["eu"].srv.CloseClientConnections()
	canaries["eu"].srv.Close()
	time.Sleep(150 * time.Millisecond)
	canaries["us"].srv.CloseClientConnections()
	canaries["us"].srv.Close()
	eventually(t, "o0 back", func() bool { return len(logs.lines("verdicts cleared origin")) > 0 })
	line := logs.lines("verdicts cleared origin")[0]
	for _, want := range []string{`msg="proxy: verdicts cleared origin: verdicts expired, region(s) stopped reporting"`,
		"stopped_reporting=eu,us", `stopped_by="eu: max_age 600ms, us: source not answering since `, "quorum=2"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, "still_unhealthy") {
		t.Errorf("a region whose canary is dead is called still unhealthy:\n%s", line)
	}
}

// TestVerdictClearBothStoresFail: as TestVerdictClearBothCanariesDie with
// two stores (one per region) whose reads fail a moment apart: the line
// blames both sources and names both regions under expired.
func TestVerdictClearBothStoresFail(t *testing.T) {
	const maxAge = 600 * time.Millisecond
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	cfg.Pools[0].Verdicts.Quorum = 2
	eu, us := newLiveSource(reporting.StateUnhealthy, "eu"), newLiveSource(reporting.StateUnhealthy, "us")
	logs := &tryLogs{}
	h := startLog(t, cfg, Sources{eu, namedSource{"store-us", us}}, true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
	eventually(t, "o0 out by verdicts", func() bool { return adminOrigins(t, h.p)[0].VerdictDown })

	eu.setFailing(true)
	time.Sleep(150 * time.Millisecond)
	us.setFailing(true)
	eventually(t, "o0 back", func() bool { return len(logs.lines("verdicts cleared origin")) > 0 })
	line := logs.lines("verdicts cleared origin")[0]
	for _, want := range []string{"the verdict source is failing (store-under-test, store-us)", "expired=eu,us",
		`expired_by="eu: max_age 600ms, us: source not answering since `} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, "still_unhealthy") {
		t.Errorf("a region whose store fails is called still unhealthy:\n%s", line)
	}
}

// namedSource is a source under another name.
type namedSource struct {
	name string
	reporting.Source
}

func (n namedSource) String() string { return n.name }
