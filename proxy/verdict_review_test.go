package proxy

import (
	"log/slog"
	"strings"
	"sync/atomic"
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

// When the check that held an origin out stops reporting (its canary died:
// its last verdict expired) while another check of the same region still
// has a fresh healthy verdict, the origin's return is logged as that region
// having stopped reporting, naming the check, not as a recovery. Was: the
// region was judged by its best verdict over every counted check, so a
// dead canary read as "region(s) turned healthy". A check that does pass
// again is still a recovery.
func TestVerdictClearedByExpiredCheckNotRecovery(t *testing.T) {
	const life = 2 * time.Second // the held-down verdict's expires after t0
	var t0 time.Time             // set by each case
	held := func(vantage string) reporting.Verdict {
		return reporting.Verdict{Check: "asset", Target: "o1", Region: "local", Vantage: vantage,
			State: reporting.StateUnhealthy, Cause: "status", At: t0, Expires: t0.Add(life), HeldUntil: t0.Add(time.Minute)}
	}
	healthy := func(check, vantage string) reporting.Verdict {
		now := time.Now()
		return reporting.Verdict{Check: check, Target: "o1", Region: "local", Vantage: vantage,
			State: reporting.StateHealthy, OK: true, At: now, Expires: now.Add(time.Minute)}
	}
	for _, tc := range []struct {
		name   string
		before func() []reporting.Verdict // until o1 is out
		after  func() []reporting.Verdict // then; nil: the canary is gone
		was    string                     // o1's reason while out
		cause  string                     // in the message
		attrs  []string                   // in the line
		not    []string                   // not in the line
	}{
		{
			name: "asset expired, healthz fresh and healthy",
			before: func() []reporting.Verdict {
				return []reporting.Verdict{held(""), healthy("healthz", "")}
			},
			was:   "unhealthy in 1 region(s), quorum 1: local: asset (status; held down by flap damping until ",
			cause: "verdicts expired, region(s) stopped reporting",
			attrs: []string{"stopped_reporting=local", `stopped_by="local: asset: EXPIRES"`},
			not:   []string{"turned_healthy", "max_age="},
		},
		{
			name: "vantage vm2's asset expired, vm1's healthy",
			before: func() []reporting.Verdict {
				return []reporting.Verdict{held("vm2"), healthy("asset", "vm1")}
			},
			was:   "unhealthy in 1 region(s), quorum 1: local: asset (status; held down by flap damping until ",
			cause: "verdicts expired, region(s) stopped reporting",
			attrs: []string{"stopped_reporting=local", `stopped_by="local: asset: EXPIRES"`, "vantage vm2"},
			not:   []string{"turned_healthy"},
		},
		{
			name: "asset passes again",
			before: func() []reporting.Verdict {
				return []reporting.Verdict{held(""), healthy("healthz", "")}
			},
			after: func() []reporting.Verdict {
				return []reporting.Verdict{healthy("asset", ""), healthy("healthz", "")}
			},
			was:   "unhealthy in 1 region(s), quorum 1: local: asset (status; held down by flap damping until ",
			cause: "region(s) turned healthy",
			attrs: []string{"turned_healthy=local"},
			not:   []string{"stopped_reporting", "stopped_by"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 = time.Now() // the held verdict's date and expiry: it counts at first
			for i := range tc.attrs {
				tc.attrs[i] = strings.ReplaceAll(tc.attrs[i], "EXPIRES", "expires "+t0.Add(life).UTC().Format(heldFormat))
			}
			a, b := newBackend(t, "a"), newBackend(t, "b")
			var out atomic.Bool
			canary := newVerdictCanary(t, func() []reporting.Verdict {
				if out.Load() && tc.after != nil {
					return tc.after()
				}
				return tc.before()
			})
			cfg := pool1(PolicyRoundRobin, urls(a, b)...)
			cfg.VerdictPoll = 20 * time.Millisecond
			logs := &tryLogs{}
			h := startLog(t, cfg, canary.source(), true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
			eventually(t, "o1 out by the held-down asset verdict", func() bool {
				return adminOrigins(t, h.p)[1].VerdictDown
			})
			if why := adminOrigins(t, h.p)[1].Why["verdict"]; !strings.HasPrefix(why, tc.was) {
				t.Fatalf("o1's reason %q, want it to start %q", why, tc.was)
			}
			out.Store(true)
			if tc.after == nil {
				canary.srv.Close() // the canary dies: its last verdicts keep counting until they expire
			}
			eventually(t, "o1 back in service", func() bool {
				return len(logs.lines("verdicts cleared origin")) > 0
			})
			got := logs.lines("verdicts cleared origin")
			if len(got) != 1 {
				t.Fatalf("want one verdicts-cleared line, got %q", got)
			}
			line := got[0]
			if !strings.Contains(line, `msg="proxy: verdicts cleared origin: `+tc.cause+`"`) {
				t.Errorf("line does not say %q:\n%s", tc.cause, line)
			}
			for _, want := range append(tc.attrs, "pool=web", "origin=o1", `was="`+tc.was) {
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
