package proxy

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestStaleVerdictsAreReported: a pool whose canaries stop reporting fails
// open (its verdict-down origin returns to service once the verdicts are
// older than max_age), and says so: a WARN line, a /healthz warning and
// vigil_proxy_pool_verdict_timestamp_seconds, although the source still
// answers. It was an INFO line per origin only, with /healthz "ok" and
// vigil_proxy_verdict_source_up 1. Fresh verdicts clear it.
func TestStaleVerdictsAreReported(t *testing.T) {
	const maxAge = 400 * time.Millisecond
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	src := &memSource{}
	now := time.Now()
	src.set(reporting.Verdict{Check: "asset", Target: "o0", Region: "eu", State: reporting.StateUnhealthy,
		Cause: "checksum", At: now, Expires: now.Add(time.Hour)})
	logs := &tryLogs{}
	h := startLog(t, cfg, src, true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
	eventually(t, "o0 out by verdicts", func() bool { return adminOrigins(t, h.p)[0].VerdictDown })
	if w, err := h.p.VerdictReport(); len(w) != 0 || err != nil {
		t.Fatalf("fresh verdicts: warnings %q, err %v", w, err)
	}
	stamp := func() float64 {
		mfs, err := h.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "vigil_proxy_pool_verdict_timestamp_seconds" {
				for _, m := range mf.GetMetric() {
					if m.GetLabel()[0].GetValue() == "web" {
						return m.GetGauge().GetValue()
					}
				}
			}
		}
		return 0
	}
	if got, want := stamp(), float64(now.UnixNano())/1e9; got < want-1 || got > want+1 {
		t.Errorf("vigil_proxy_pool_verdict_timestamp_seconds{pool=web} = %v, want about %v", got, want)
	}

	// The canary dies: the store still answers, with nothing new.
	eventually(t, "o0 back once its verdict is older than max_age", func() bool { return !adminOrigins(t, h.p)[0].VerdictDown })
	eventually(t, "the stale warning", func() bool { return len(logs.lines("no fresh verdict for the pool's origins")) > 0 })
	line := logs.lines("no fresh verdict for the pool's origins")[0]
	for _, want := range []string{"level=WARN", "pool=web", "newest=" + now.UTC().Format(time.RFC3339), "max_age=400ms"} {
		if !strings.Contains(line, want) {
			t.Errorf("warning lacks %q: %s", want, line)
		}
	}
	w, err := h.p.VerdictReport()
	want := fmt.Sprintf("pool web: no fresh verdict since %s (verdicts.max_age 400ms): the canaries stopped reporting its checks or cannot run them; its origins are judged by passive detection alone", now.UTC().Format(time.RFC3339))
	if err != nil || len(w) != 1 || w[0] != want {
		t.Errorf("stale: warnings %q, err %v; want %q", w, err, want)
	}
	time.Sleep(5 * cfg.VerdictPoll)
	if n := len(logs.lines("no fresh verdict for the pool's origins")); n != 1 {
		t.Errorf("%d stale warnings, want 1", n)
	}

	// The canary reports again.
	later := time.Now()
	src.set(reporting.Verdict{Check: "asset", Target: "o0", Region: "eu", State: reporting.StateHealthy,
		OK: true, At: later, Expires: later.Add(time.Hour)})
	eventually(t, "the warning cleared", func() bool { w, _ := h.p.VerdictReport(); return len(w) == 0 })
	if len(logs.lines("fresh verdicts for the pool's origins again")) != 1 {
		t.Errorf("no recovery line:\n%s", logs.String())
	}
	if got := stamp(); got < float64(later.UnixNano())/1e9-1 {
		t.Errorf("timestamp %v did not move to the new verdict (%v)", got, float64(later.UnixNano())/1e9)
	}
}
