package canary

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// triggerCount returns vigil_passive_triggers_total of target and reason
// in reg, and whether the series exists; with reason "" whether any series
// of target exists.
func triggerCount(t *testing.T, reg *prometheus.Registry, target, reason string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "vigil_passive_triggers_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["target"] == target && (reason == "" || l["reason"] == reason) {
				return m.GetCounter().GetValue(), true
			}
		}
	}
	return 0, false
}

// TestPassiveTriggerSeriesRemovedWithTarget: the trigger counter of a
// target a reload removed leaves /metrics at once (it would stay, frozen,
// for the life of the process), and the target added back starts afresh:
// counted from 0 and triggered without waiting out the min_gap of the
// removed pair's last trigger.
func TestPassiveTriggerSeriesRemovedWithTarget(t *testing.T) {
	d := checktest.NewOrigin()
	defer d.Close()
	a := checktest.NewOrigin()
	defer a.Close()
	mkCfg := func(withD bool) *Config {
		targets := map[string]string{"origin-a": a.URL()}
		names := []string{"origin-a"}
		if withD {
			targets["origin-d"] = d.URL()
			names = append(names, "origin-d")
		}
		return testConfig(t, targets, CheckConfig{Name: "asset", Tier: "deep", Targets: names, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/asset.bin"}})
	}
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := prometheus.NewRegistry()
	cfg := mkCfg(true)
	c := start(t, cfg, compile(t, cfg), Options{Registry: reg})
	trig := TriggerConfig{Poll: 20 * time.Millisecond, MinGap: time.Hour, For: 10 * time.Second}
	if err := trig.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.WatchSignals(ctx, st, trig) }()
	defer func() { cancel(); <-done }()

	if err := st.PublishSignals(ctx, []reporting.Signal{
		{Pool: "web", Origin: "origin-d", At: time.Now(), Window: 5 * time.Second, Requests: 50, Ejected: true, Reason: "consecutive 5xx"},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a trigger of origin-d counted", func() bool {
		v, _ := triggerCount(t, reg, "origin-d", "ejected")
		return v == 1
	})

	cfg = mkCfg(false)
	c.Reload(cfg, compile(t, cfg))
	if v, ok := triggerCount(t, reg, "origin-d", ""); ok {
		t.Errorf("after the reload that removed origin-d: vigil_passive_triggers_total{target=origin-d} = %v, want no series", v)
	}
	time.Sleep(10 * trig.Poll) // polls see the reload
	if _, ok := triggerCount(t, reg, "origin-d", ""); ok {
		t.Errorf("vigil_passive_triggers_total{target=origin-d} came back after the reload")
	}

	// Added back while its live traffic still says ejected: it runs now,
	// not an hour (min_gap) after the removed pair's last trigger.
	before := d.Count("GET", "/asset.bin")
	cfg = mkCfg(true)
	c.Reload(cfg, compile(t, cfg))
	waitFor(t, "origin-d added back triggered again", func() bool {
		v, _ := triggerCount(t, reg, "origin-d", "ejected")
		return v == 1 && d.Count("GET", "/asset.bin") > before
	})
}

// TestPassiveTriggerLogsOncePerEpisode: while an origin stays ejected its
// checks run again every min_gap (each run counted), but the log has one
// line when the degradation starts, naming the checks, and one when it
// ends, not a line per check per min_gap.
func TestPassiveTriggerLogsOncePerEpisode(t *testing.T) {
	bad := checktest.NewOrigin()
	defer bad.Close()
	cfg := testConfig(t, map[string]string{"bad": bad.URL()},
		CheckConfig{Name: "asset", Tier: "deep", Targets: []string{"bad"}, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/asset.bin"}},
		CheckConfig{Name: "page", Tier: "deep", Targets: []string{"bad"}, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/page"}},
		CheckConfig{Name: "home", Tier: "synthetic", Targets: []string{"bad"}, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/"}},
		CheckConfig{Name: "healthz", Tier: "shallow", Targets: []string{"bad"}, Interval: time.Hour, HTTP: &checks.HTTPSpec{Path: "/healthz"}},
	)
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	var log checktest.SyncBuffer
	reg := prometheus.NewRegistry()
	c := start(t, cfg, compile(t, cfg), Options{Registry: reg, Now: now,
		Log: slog.New(slog.NewTextHandler(&log, nil))})
	trig := TriggerConfig{Poll: 10 * time.Millisecond} // defaults: min_gap 30s, for 60s
	if err := trig.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.WatchSignals(ctx, st, trig) }()
	defer func() { cancel(); <-done }()

	publish := func(ejected bool) {
		t.Helper()
		s := reporting.Signal{Pool: "web", Origin: "bad", At: now(), Window: 5 * time.Second, Requests: 100}
		if ejected {
			s.Ejected, s.Reason = true, "consecutive 5xx"
		}
		if err := st.PublishSignals(ctx, []reporting.Signal{s}); err != nil {
			t.Fatal(err)
		}
	}
	// The origin stays ejected for 6 min_gaps: its 3 deep and synthetic
	// checks run 6 times each.
	const rounds = 6
	for i := 1; i <= rounds; i++ {
		if i > 1 {
			clock.Add(int64(trig.MinGap))
		}
		publish(true)
		waitFor(t, "the triggered runs counted", func() bool {
			v, _ := triggerCount(t, reg, "bad", "ejected")
			return v == float64(3*i)
		})
	}
	const started = `msg="live traffic degraded: running check out of cycle" check=asset,home,page target=bad reason=ejected min_gap=30s`
	if got := logLines(&log, "live traffic degraded"); len(got) != 1 {
		t.Fatalf("%d lines while the origin stayed ejected for %d min_gaps, want 1:\n%s", len(got), rounds, strings.Join(got, "\n"))
	} else if !strings.Contains(got[0], started) {
		t.Errorf("the line does not name the checks it ran, the target, reason and min_gap: %s\nwant %s", got[0], started)
	}
	if n := bad.Count("GET", "/healthz"); n > 1 {
		t.Errorf("the shallow check ran %d times", n)
	}

	// Healthy again: once min_gap has passed without degradation, one line
	// says it ended, with the runs it triggered.
	clock.Add(int64(time.Second))
	publish(false)
	time.Sleep(10 * trig.Poll)
	clock.Add(int64(trig.MinGap))
	waitFor(t, "the end of the episode logged", func() bool { return len(logLines(&log, "live traffic recovered")) > 0 })
	got := logLines(&log, "live traffic recovered")
	if len(got) != 1 || !strings.Contains(got[0], "target=bad") || !strings.Contains(got[0], "runs=18") {
		t.Errorf("want one end line for target bad with runs=18, got:\n%s", strings.Join(got, "\n"))
	}
	if v, _ := triggerCount(t, reg, "bad", "ejected"); v != 3*rounds {
		t.Errorf("vigil_passive_triggers_total = %v, want %d: every triggered run counts", v, 3*rounds)
	}
}
