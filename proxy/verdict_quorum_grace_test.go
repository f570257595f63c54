package proxy

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestVerdictQuorumStartGrace: a proxy reading two canaries (eu, us;
// verdicts.quorum 2) over HTTP, started beside them, where us has no
// verdicts yet for its first 300 ms (its first runs still to come) or
// answers 503 for them (still starting): a normal start logs neither the
// warning that the quorum exceeds the regions reporting nor "quorum met
// again". Was: the warning with regions=eu, then "met again" on us's
// next read. A canary that never reports is still warned about, once
// the pool's max_age has passed since start, not before.
func TestVerdictQuorumStartGrace(t *testing.T) {
	const warning = "verdicts.quorum exceeds the regions that report for the pool"
	const met = "verdicts.quorum met again"
	verdictOf := func(region string) []reporting.Verdict {
		now := time.Now()
		return []reporting.Verdict{{Check: "healthz", Target: "o0", Region: region, State: reporting.StateHealthy, OK: true,
			At: now, Expires: now.Add(time.Minute)}}
	}
	for _, c := range []struct {
		name string
		mode int32 // how us answers before its verdicts come (canaryOK: an empty list)
	}{
		{"no verdicts yet", canaryOK},
		{"503 at first", canary503},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := newBackend(t, "a"), newBackend(t, "b")
			var usReady atomic.Bool
			eu := newVerdictCanary(t, func() []reporting.Verdict { return verdictOf("eu") })
			us := newVerdictCanary(t, func() []reporting.Verdict {
				if !usReady.Load() {
					return nil
				}
				return verdictOf("us")
			})
			us.mode.Store(c.mode)
			cfg := pool1(PolicyRoundRobin, urls(a, b)...)
			cfg.VerdictPoll = 20 * time.Millisecond
			cfg.Pools[0].Verdicts.Quorum = 2
			logs := &tryLogs{}
			startLog(t, cfg, Sources{eu.source(), us.source()}, true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
			eventually(t, "eu read", func() bool { return eu.lastAt.Load() != 0 })
			time.Sleep(300 * time.Millisecond) // many polls of both
			us.mode.Store(canaryOK)
			usReady.Store(true)
			eventually(t, "us read", func() bool { return us.lastAt.Load() != 0 })
			time.Sleep(200 * time.Millisecond)
			if l := logs.lines("verdicts.quorum"); len(l) != 0 {
				t.Fatalf("a normal start: want no quorum line, got %q", l)
			}
		})
	}

	t.Run("a canary that never reports", func(t *testing.T) {
		a, b := newBackend(t, "a"), newBackend(t, "b")
		eu := newVerdictCanary(t, func() []reporting.Verdict { return verdictOf("eu") })
		us := newVerdictCanary(t, nil) // answers [] for ever
		cfg := pool1(PolicyRoundRobin, urls(a, b)...)
		cfg.VerdictPoll = 20 * time.Millisecond
		cfg.Pools[0].Verdicts.Quorum = 2
		cfg.Pools[0].Verdicts.MaxAge = 700 * time.Millisecond
		logs := &tryLogs{}
		started := time.Now()
		startLog(t, cfg, Sources{eu.source(), us.source()}, true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
		eventually(t, "the warning after max_age", func() bool { return len(logs.lines("level=WARN", warning)) == 1 })
		if el := time.Since(started); el < 700*time.Millisecond {
			t.Errorf("warned %v after start, before max_age (700ms)", el)
		}
		if w := logs.lines(warning)[0]; !strings.Contains(w, "regions=eu") || !strings.Contains(w, "quorum=2") {
			t.Errorf("warning: %s", w)
		}
		time.Sleep(100 * time.Millisecond)
		if n, m := len(logs.lines(warning)), len(logs.lines(met)); n != 1 || m != 0 {
			t.Fatalf("want one warning and no met line, got %d and %d", n, m)
		}
	})
}
