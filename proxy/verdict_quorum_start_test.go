package proxy

import (
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Two canaries (eu, us), quorum 2, one slower to answer at start: no
// warning that the quorum exceeds the regions reporting (it was the first
// read, not every region). When one region stops reporting the warning
// comes once, and when it reports again a line says the quorum is met.
// Was: the first source to answer was judged alone (a false warning at
// every start) and nothing ever said the quorum was met again.
func TestVerdictQuorumJudgedOnceEverySourceRead(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	var euFirst atomic.Bool
	var euGone atomic.Bool
	region := func(name string) func() []reporting.Verdict {
		return func() []reporting.Verdict {
			if name == "eu" {
				if !euFirst.Swap(true) {
					time.Sleep(150 * time.Millisecond) // the slow first answer (the client waits 300ms)
				}
				if euGone.Load() {
					return nil
				}
			}
			now := time.Now()
			return []reporting.Verdict{{Check: "healthz", Target: "o0", Region: name, State: reporting.StateHealthy, OK: true,
				At: now, Expires: now.Add(time.Minute)}}
		}
	}
	eu, us := newVerdictCanary(t, region("eu")), newVerdictCanary(t, region("us"))
	cfg := pool1(PolicyRoundRobin, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.Quorum = 2
	logs := &tryLogs{}
	startLog(t, cfg, Sources{eu.source(), us.source()}, true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
	const warning = "verdicts.quorum exceeds the regions that report for the pool"
	const met = "verdicts.quorum met again"
	eventually(t, "both canaries read", func() bool { return euFirst.Load() })
	time.Sleep(500 * time.Millisecond) // the slow answer and several polls
	if w := logs.lines(warning); len(w) != 0 {
		t.Fatalf("both regions report: want no quorum warning, got %q", w)
	}

	euGone.Store(true)
	eventually(t, "the warning once eu stops reporting", func() bool { return len(logs.lines("level=WARN", warning)) == 1 })
	if w := logs.lines(warning)[0]; !strings.Contains(w, "regions=us") || !strings.Contains(w, "quorum=2") {
		t.Errorf("warning: %s", w)
	}
	euGone.Store(false)
	eventually(t, "the quorum met again once eu reports", func() bool { return len(logs.lines("level=INFO", met)) == 1 })
	if l := logs.lines(met)[0]; !strings.Contains(l, "regions=eu,us") || !strings.Contains(l, "pool=web") {
		t.Errorf("met line: %s", l)
	}
	time.Sleep(100 * time.Millisecond)
	if n, m := len(logs.lines(warning)), len(logs.lines(met)); n != 1 || m != 1 {
		t.Fatalf("want one warning and one met line, got %d and %d", n, m)
	}
}
