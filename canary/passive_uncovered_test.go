package canary

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestPassiveUncoveredOriginWarns replays the seed incident's config: the
// only check of origin sg-b is a shallow /healthz, so when the proxy's
// signals (through the real embedded store) say its live traffic degrades,
// the passive trigger has nothing to run. It says so in a WARN naming the
// pool, the origin, what degraded and what to add, once per pool × origin
// per 10 minutes, and again after that while it lasts.
func TestPassiveUncoveredOriginWarns(t *testing.T) {
	origin := checktest.NewOrigin()
	defer origin.Close()
	cfg := testConfig(t, map[string]string{"sg-b": origin.URL()},
		CheckConfig{Name: "healthz", Tier: "shallow", Targets: []string{"sg-b"}, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	var log checktest.SyncBuffer
	c := start(t, cfg, compile(t, cfg), Options{Log: slog.New(slog.NewTextHandler(&log, nil)), Now: now})
	trig := TriggerConfig{Poll: 10 * time.Millisecond}
	if err := trig.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.WatchSignals(ctx, st, trig) }()
	defer func() { cancel(); <-done }()

	const warn = "live traffic degraded on pool web origin sg-b (ejected by the proxy's passive detector: consecutive_5xx) " +
		"but no deep or synthetic check covers sg-b: only deep and synthetic checks are triggered; " +
		"add one (tier: deep) that fetches what users fetch"
	publish := func() {
		t.Helper()
		if err := st.PublishSignals(ctx, []reporting.Signal{{Pool: "web", Origin: "sg-b", Region: "eu", At: now(),
			Window: 10 * time.Second, Requests: 40, Status5xx: 5, Ejected: true, Out: true, OutBy: "passive_ejected",
			Reason: "consecutive_5xx"}}); err != nil {
			t.Fatal(err)
		}
	}
	lines := func() []string { return logLines(&log, warn) }
	publish()
	waitFor(t, "the warning about the uncovered origin", func() bool { return len(lines()) == 1 })
	got := lines()[0]
	for _, want := range []string{"level=WARN", "pool=web", "target=sg-b", "reason=ejected", `other_checks="healthz (shallow)"`} {
		if !strings.Contains(got, want) {
			t.Errorf("warning lacks %s: %s", want, got)
		}
	}
	// More degraded signals within 10 minutes: no second line.
	for i := 0; i < 5; i++ {
		clock.Add(int64(time.Minute))
		publish()
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(lines()); n != 1 {
		t.Fatalf("%d warnings within 10 minutes, want 1:\n%s", n, log.String())
	}
	// 10 minutes after the first, still degraded: warned again.
	clock.Add(int64(5 * time.Minute))
	publish()
	waitFor(t, "the second warning 10 minutes later", func() bool { return len(lines()) == 2 })
	if n := origin.Count("GET", "/healthz"); n > 1 {
		t.Errorf("the shallow check ran %d times: the trigger runs deep and synthetic checks only", n)
	}
}
