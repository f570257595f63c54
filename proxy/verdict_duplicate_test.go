package proxy

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestVerdictDuplicateCanaries: a proxy reading two canaries (vigil proxy
// --verdicts-from) that give the same series (same region and vantage)
// from two instances warns, naming the region, the vantage and both
// instances, and vigil_duplicate_canaries says 2; the origin is judged as
// before (one region). Two regions: no warning, no gauge.
func TestVerdictDuplicateCanaries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		regionB string
		dup     bool
	}{
		{"same region and vantage", "eu-west", true},
		{"two regions", "us-east", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs tryLogs
			watch := reporting.NewDuplicateWatch(slog.New(slog.NewTextHandler(&logs, nil)))
			dupWatch = watch
			defer func() { dupWatch = nil }()
			canary := func(region, inst string) *verdictCanary {
				return newVerdictCanary(t, func() []reporting.Verdict {
					now := time.Now()
					return []reporting.Verdict{{Check: "healthz", Target: "o0", Region: region, Vantage: "v1",
						State: reporting.StateHealthy, OK: true, At: now, Expires: now.Add(time.Minute), Instance: inst}}
				})
			}
			a, b := canary("eu-west", "eu-1-aaaa"), canary(tc.regionB, "eu-2-bbbb")
			backend := newBackend(t, "a")
			cfg := pool1(PolicyRoundRobin, urls(backend)...)
			cfg.VerdictPoll = 20 * time.Millisecond
			h := startLog(t, cfg, Sources{a.source(), b.source()}, true, EngineFast, slog.New(slog.NewTextHandler(&logs, nil)))
			gauge := func() float64 {
				reg := prometheus.NewRegistry()
				reg.MustRegister(watch.Collector())
				mfs, _ := reg.Gather()
				for _, mf := range mfs {
					for _, m := range mf.GetMetric() {
						return m.GetGauge().GetValue()
					}
				}
				return 0
			}
			eventually(t, "both canaries read", func() bool { return a.lastAt.Load() > 0 && b.lastAt.Load() > 0 })
			if !tc.dup {
				time.Sleep(200 * time.Millisecond) // several polls
				if w := logs.lines("duplicate canaries"); len(w) > 0 || gauge() != 0 {
					t.Fatalf("two regions: want no warning and no gauge, got %v, gauge %v", w, gauge())
				}
				return
			}
			eventually(t, "the duplicate warning", func() bool { return len(logs.lines("duplicate canaries")) > 0 })
			w := logs.lines("duplicate canaries")
			for _, want := range []string{"level=WARN", "region=eu-west", "vantage=v1", "eu-1-aaaa, eu-2-bbbb", "reader=proxy"} {
				if !strings.Contains(w[0], want) {
					t.Errorf("warning lacks %q: %s", want, w[0])
				}
			}
			if g := gauge(); g != 2 {
				t.Errorf("vigil_duplicate_canaries = %v, want 2", g)
			}
			time.Sleep(100 * time.Millisecond)
			if n := len(logs.lines("duplicate canaries")); n != 1 {
				t.Errorf("%d warnings over several polls, want 1 (rate-limited)", n)
			}
			if st := adminOrigins(t, h.p); !st[0].Available {
				t.Errorf("o0 healthy in both: want available: %+v", st[0])
			}
		})
	}
}
