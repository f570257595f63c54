package canary

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// memSink keeps every published verdict.
type memSink struct {
	mu sync.Mutex
	vs []reporting.Verdict
}

var _ reporting.Sink = (*memSink)(nil)

func (s *memSink) Publish(_ context.Context, v []reporting.Verdict) error {
	s.mu.Lock()
	s.vs = append(s.vs, v...)
	s.mu.Unlock()
	return nil
}

// of returns the published verdicts of one pair in order.
func (s *memSink) of(check, target string) []reporting.Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []reporting.Verdict
	for _, v := range s.vs {
		if v.Check == check && v.Target == target {
			out = append(out, v)
		}
	}
	return out
}

func testLog(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

func pct(p float64) *units.Percent { v := units.Percent(p); return &v }

// testConfig builds and validates a config with the given targets
// (name → URL) and checks; the default interval is 200ms.
func testConfig(t testing.TB, targets map[string]string, chs ...CheckConfig) *Config {
	t.Helper()
	cfg := &Config{
		Agent:    AgentConfig{Region: "test-region", Vantage: "v1", Concurrency: 16},
		Defaults: Defaults{Interval: 200 * time.Millisecond, Jitter: pct(10)},
		Checks:   chs,
	}
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cfg.Targets = append(cfg.Targets, TargetConfig{Name: n, URL: targets[n]})
	}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

func compile(t testing.TB, cfg *Config) []Pair {
	t.Helper()
	pairs, err := cfg.Compile(CompileOptions{Version: "test", DataDir: t.TempDir()})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return pairs
}

// start runs a canary until the test ends.
func start(t *testing.T, cfg *Config, pairs []Pair, o Options) *Canary {
	t.Helper()
	if o.Log == nil {
		o.Log = testLog(t)
	}
	c, err := New(cfg, pairs, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
	})
	return c
}

// waitFor polls cond until it holds; it fails the test after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func latestOf(c *Canary, check, target string) (reporting.Verdict, bool) {
	for _, v := range c.Latest() {
		if v.Check == check && v.Target == target {
			return v, true
		}
	}
	return reporting.Verdict{}, false
}

func stateIs(c *Canary, check, target string, s reporting.State) func() bool {
	return func() bool {
		v, ok := latestOf(c, check, target)
		return ok && v.State == s
	}
}

func TestRiseFallWithOrigin(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "home", Targets: []string{"o1"}, Rise: 2, Fall: 3,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	sink := &memSink{}
	c := start(t, cfg, compile(t, cfg), Options{Sink: sink})

	waitFor(t, "healthy", stateIs(c, "home", "o1", reporting.StateHealthy))
	if err := o.SetMode(checktest.Mode503); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "unhealthy", stateIs(c, "home", "o1", reporting.StateUnhealthy))
	if err := o.SetMode(checktest.ModeOK); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "healthy again", stateIs(c, "home", "o1", reporting.StateHealthy))
	waitFor(t, "verdicts published", func() bool { return len(sink.of("home", "o1")) > 0 && sinkHasHealthyAfterUnhealthy(sink) })

	// The published sequence shows the hysteresis: the first failed run
	// left the verdict healthy, only the third made it unhealthy; the
	// first pass after that left it unhealthy.
	vs := sink.of("home", "o1")
	var fails, passesAfter int
	sawDown := false
	for _, v := range vs {
		switch {
		case !sawDown && !v.OK && v.State == reporting.StateHealthy:
			fails++
		case !sawDown && v.State == reporting.StateUnhealthy:
			sawDown = true
			if fails != 2 {
				t.Errorf("unhealthy after %d healthy-but-failed runs, want 2 (fall 3)", fails)
			}
			if v.Cause != string(checks.CauseStatus) || v.StatusCode != 503 || v.Streak != 3 {
				t.Errorf("down verdict cause %q status %d streak %d, want status 503 streak 3", v.Cause, v.StatusCode, v.Streak)
			}
		case sawDown && v.OK && v.State == reporting.StateUnhealthy:
			passesAfter++
		case sawDown && v.State == reporting.StateHealthy && passesAfter != 1:
			t.Errorf("healthy after %d passes, want 2 (rise 2)", passesAfter+1)
		}
	}
	for _, v := range vs {
		if v.Region != "test-region" || v.Vantage != "v1" || v.Tier != reporting.TierDeep ||
			v.Interval != 200*time.Millisecond || !v.Expires.Equal(v.At.Add(600*time.Millisecond)) ||
			v.URL != o.URL()+"/healthz" {
			t.Fatalf("verdict labels/figures: %+v", v)
		}
	}
}

func sinkHasHealthyAfterUnhealthy(s *memSink) bool {
	down := false
	for _, v := range s.of("home", "o1") {
		if v.State == reporting.StateUnhealthy {
			down = true
		}
		if down && v.State == reporting.StateHealthy {
			return true
		}
	}
	return false
}

func TestDegradedOnSLO(t *testing.T) {
	o := checktest.NewOrigin(checktest.WithFirstByteDelay(60 * time.Millisecond))
	defer o.Close()
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "slow", Targets: []string{"o1"}, Rise: 2, Fall: 2, Interval: 300 * time.Millisecond,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}, Expect: &checks.Expect{TTFB: 20 * time.Millisecond}})
	c := start(t, cfg, compile(t, cfg), Options{})
	waitFor(t, "degraded", stateIs(c, "slow", "o1", reporting.StateDegraded))
	v, _ := latestOf(c, "slow", "o1")
	if v.OK || v.Cause != string(checks.CauseTTFB) || v.StatusCode != 200 || v.TTFB < 60*time.Millisecond {
		t.Fatalf("degraded verdict: ok %v cause %q status %d ttfb %s", v.OK, v.Cause, v.StatusCode, v.TTFB)
	}
	o.SetFirstByteDelay(0)
	waitFor(t, "healthy", stateIs(c, "slow", "o1", reporting.StateHealthy))
	if err := o.SetMode(checktest.ModeDown); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "unhealthy", stateIs(c, "slow", "o1", reporting.StateUnhealthy))
	v, _ = latestOf(c, "slow", "o1")
	if v.Cause != string(checks.CauseConnectRefused) {
		t.Fatalf("down cause %q, want connect_refused", v.Cause)
	}
}

func TestFlapHoldDownWithOrigin(t *testing.T) {
	o := checktest.NewOrigin(checktest.WithMode(checktest.ModeFlapping), checktest.WithFlapEvery(1))
	defer o.Close()
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "flappy", Targets: []string{"o1"}, Rise: 1, Fall: 1, Interval: 100 * time.Millisecond,
			Flap: &FlapConfig{MaxChanges: 3, Window: time.Minute, HoldDown: time.Hour, ExtraPasses: 1},
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	sink := &memSink{}
	c := start(t, cfg, compile(t, cfg), Options{Sink: sink})
	// Once held down, passing runs stay unhealthy.
	waitFor(t, "a passing run held unhealthy", func() bool {
		v, ok := latestOf(c, "flappy", "o1")
		return ok && v.OK && v.State == reporting.StateUnhealthy
	})
	waitFor(t, "more runs", func() bool { return len(sink.of("flappy", "o1")) >= 12 })
	// Before the hold: 3 changes were allowed. From the first passing run
	// held unhealthy on, every verdict is unhealthy.
	changes, held := 0, false
	prev := reporting.StateUnknown
	for _, v := range sink.of("flappy", "o1") {
		if held && v.State != reporting.StateUnhealthy {
			t.Fatalf("left unhealthy during the hold-down: %+v", v)
		}
		if !held && v.OK && v.State == reporting.StateUnhealthy {
			held = true
			// The 4th change starts the hold: either it was a fall to
			// unhealthy anyway (4 visible changes) or a recovery held
			// back (3 visible).
			if changes != 3 && changes != 4 {
				t.Fatalf("held down after %d changes, want after the 4th (max_changes 3)", changes)
			}
		}
		if v.State != prev && prev != reporting.StateUnknown {
			changes++
		}
		prev = v.State
	}
	if !held {
		t.Fatalf("never held down (%d changes)", changes)
	}
}

func TestExpiryToUnknown(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "c", Targets: []string{"o1"}, Rise: 1, HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	c := start(t, cfg, compile(t, cfg), Options{Now: now})
	waitFor(t, "healthy", stateIs(c, "c", "o1", reporting.StateHealthy))
	// The clock jumps past expire_after (3 × 200ms): the served state is
	// unknown, never healthy, until a fresh run.
	vs, _ := c.Verdicts(context.Background(), 0)
	if len(vs) != 1 || vs[0].State != reporting.StateHealthy {
		t.Fatalf("before: %+v", vs)
	}
	skew.Store(int64(time.Hour))
	v, _ := latestOf(c, "c", "o1")
	if got := v.Current(now()); got != reporting.StateUnknown {
		t.Fatalf("expired verdict reads %s", got)
	}
	if err := o.SetMode(checktest.ModeDown); err != nil {
		t.Fatal(err)
	}
	// The next runs start from unknown (rise 1 pass would be needed) and
	// fail; they never report healthy with the expired streak.
	waitFor(t, "unhealthy", stateIs(c, "c", "o1", reporting.StateUnhealthy))
}

func TestJitterBounds(t *testing.T) {
	const interval = 10 * time.Second
	now := t0
	buckets := make([]int, 10)
	for i := 0; i < 2000; i++ {
		key := "check" + string(rune('a'+i%26)) + "\x00t" + itoa(i)
		p := plan{interval: interval, jitter: 0.1}
		first := p.first(key, now)
		if first.Before(now) || !first.Before(now.Add(interval+interval/10)) {
			t.Fatalf("first run %s after now, want [0, 11s)", first.Sub(now))
		}
		if p2 := (plan{interval: interval}); !p2.first(key, now).Equal(now.Add(spread(key, interval))) {
			t.Fatal("spread is not deterministic")
		}
		buckets[int(p.base.Sub(now)*10/interval)]++
		base := p.base
		for j := 0; j < 5; j++ {
			next := p.advance(base)
			base = base.Add(interval)
			if next.Before(base) || !next.Before(base.Add(interval/10)) {
				t.Fatalf("run %d: %s after slot, want [0, 1s)", j, next.Sub(base))
			}
		}
	}
	for i, n := range buckets {
		if n < 100 {
			t.Fatalf("first runs not spread: decile %d has %d of 2000 (%v)", i, n, buckets)
		}
	}
	// A pair that fell far behind restarts from now instead of bursting.
	p := plan{interval: interval}
	p.first("k", now)
	late := now.Add(time.Hour)
	if next := p.advance(late); next.Before(late) || next.After(late.Add(interval)) {
		t.Fatalf("catch-up: next %s after the stall", next.Sub(late))
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// watched wraps a check and records how many runs of each target overlap
// and how many run at all at once.
type watched struct {
	inner     checks.Check
	mu        sync.Mutex
	perTarget map[string]int
	maxPer    int
	all, max  int
	runs      atomic.Int64
}

func (w *watched) Run(ctx context.Context, t checks.Target) checks.Result {
	w.mu.Lock()
	w.perTarget[t.Name]++
	w.maxPer = max(w.maxPer, w.perTarget[t.Name])
	w.all++
	w.max = max(w.max, w.all)
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.perTarget[t.Name]--
		w.all--
		w.mu.Unlock()
	}()
	w.runs.Add(1)
	return w.inner.Run(ctx, t)
}

func TestNoOverlappingRuns(t *testing.T) {
	// A slow origin, a short interval and a concurrency of 1: runs queue
	// behind each other, so scheduled runs find their pair still running.
	o := checktest.NewOrigin(checktest.WithFirstByteDelay(time.Second))
	defer o.Close()
	cfg := testConfig(t, map[string]string{"a": o.URL(), "b": o.URL(), "c": o.URL()},
		CheckConfig{Name: "slow", Targets: []string{"a", "b", "c"}, Interval: 100 * time.Millisecond,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	cfg.Agent.Concurrency = 1
	pairs := compile(t, cfg)
	w := &watched{inner: pairs[0].Probe, perTarget: map[string]int{}}
	for i := range pairs {
		pairs[i].Probe = w
	}
	c := start(t, cfg, pairs, Options{})
	waitFor(t, "skipped runs", func() bool {
		return c.Skipped("slow", "a")+c.Skipped("slow", "b")+c.Skipped("slow", "c") >= 6 && w.runs.Load() >= 6
	})
	// Triggers join a run in flight rather than starting a second one.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Trigger("slow", "a"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.maxPer != 1 {
		t.Fatalf("a pair ran %d times at once", w.maxPer)
	}
	if w.max != 1 {
		t.Fatalf("%d runs at once with concurrency 1", w.max)
	}
	v, _ := latestOf(c, "slow", "a")
	if v.Cause != string(checks.CauseTimeout) {
		t.Fatalf("cause %q, want timeout (80ms timeout vs 1s first byte)", v.Cause)
	}
}

// panicky panics on every run.
type panicky struct{}

func (panicky) Run(context.Context, checks.Target) checks.Result { panic("boom") }

func TestPanicRecovered(t *testing.T) {
	cfg := testConfig(t, map[string]string{"x": "http://127.0.0.1:1"},
		CheckConfig{Name: "p", Targets: []string{"x"}, Fall: 1, HTTP: &checks.HTTPSpec{}})
	pairs := compile(t, cfg)
	pairs[0].Probe = panicky{}
	c := start(t, cfg, pairs, Options{})
	waitFor(t, "unhealthy", stateIs(c, "p", "x", reporting.StateUnhealthy))
	v, _ := latestOf(c, "p", "x")
	if v.Cause != string(checks.CauseInternal) || v.Err != "panic: boom" {
		t.Fatalf("verdict %+v", v)
	}
	waitFor(t, "it keeps running", func() bool { v, _ := latestOf(c, "p", "x"); return v.Streak >= 3 })
}

func TestReloadKeepsState(t *testing.T) {
	o1 := checktest.NewOrigin()
	defer o1.Close()
	o2 := checktest.NewOrigin()
	defer o2.Close()
	mk := func(bURL string, rise int) *Config {
		return testConfig(t, map[string]string{"t1": o1.URL(), "t2": bURL, "gone": o1.URL()},
			CheckConfig{Name: "a", Targets: []string{"t1"}, Rise: rise, HTTP: &checks.HTTPSpec{Path: "/healthz"}},
			CheckConfig{Name: "b", Targets: []string{"t2"}, Rise: 2, HTTP: &checks.HTTPSpec{Path: "/healthz"}},
			CheckConfig{Name: "c", Targets: []string{"gone"}, HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	}
	cfg := mk(o1.URL(), 2)
	c := start(t, cfg, compile(t, cfg), Options{})
	waitFor(t, "all healthy", func() bool {
		return stateIs(c, "a", "t1", reporting.StateHealthy)() && stateIs(c, "b", "t2", reporting.StateHealthy)() &&
			stateIs(c, "c", "gone", reporting.StateHealthy)()
	})
	before, _ := latestOf(c, "a", "t1")

	// New config: a unchanged (but rise 5), b's target URL changed, c removed.
	cfg2 := mk(o2.URL(), 5)
	cfg2.Checks = cfg2.Checks[:2]
	c.Reload(cfg2, compile(t, cfg2))
	if _, ok := latestOf(c, "c", "gone"); ok {
		t.Fatal("removed pair still listed")
	}
	if _, ok := latestOf(c, "b", "t2"); ok {
		t.Fatal("changed pair kept its verdict")
	}
	// b starts again from unknown: its first verdict after the reload is
	// unknown with streak 1.
	waitFor(t, "b runs", func() bool { _, ok := latestOf(c, "b", "t2"); return ok })
	if v, _ := latestOf(c, "b", "t2"); v.State != reporting.StateUnknown || v.Streak != 1 {
		t.Fatalf("changed pair after reload: %s streak %d, want unknown 1", v.State, v.Streak)
	}
	// a keeps its state and streak: the next verdict is healthy at once
	// although rise is now 5.
	waitFor(t, "a runs again", func() bool { v, _ := latestOf(c, "a", "t1"); return v.At.After(before.At) })
	after, _ := latestOf(c, "a", "t1")
	if after.State != reporting.StateHealthy || after.Streak <= before.Streak {
		t.Fatalf("kept pair: %s streak %d (before %d)", after.State, after.Streak, before.Streak)
	}
	if n := o2.Total(); n == 0 {
		t.Fatal("changed pair does not probe its new URL")
	}
	// An invalid config is the caller's to reject; the canary reports it.
	c.SetReloadError(errors.New("checks[0].interval: must be positive"))
	if err := c.Health(); err == nil {
		t.Fatal("health ignores the reload error")
	}
	c.SetReloadError(nil)
	if err := c.Health(); err != nil {
		t.Fatalf("health after a good reload: %v", err)
	}
}

func TestTriggerUnknownPair(t *testing.T) {
	cfg := testConfig(t, map[string]string{"x": "http://127.0.0.1:1"},
		CheckConfig{Name: "p", Targets: []string{"x"}, HTTP: &checks.HTTPSpec{}})
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Trigger("p", "nope"); !errors.Is(err, ErrUnknownPair) {
		t.Fatalf("err %v", err)
	}
	// Trigger works without Run (e.g. `vigil check`-style one-offs).
	v, err := c.Trigger("p", "x")
	if err != nil || v.OK || v.Cause != string(checks.CauseConnectRefused) {
		t.Fatalf("trigger: %+v %v", v, err)
	}
}

func TestCronSchedule(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "every-second", Targets: []string{"o1"}, Cron: "* * * * * *", Rise: 1,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	if cfg.Checks[0].Schedule() == nil || cfg.Checks[0].Interval != time.Second {
		t.Fatalf("cron not compiled: interval %s", cfg.Checks[0].Interval)
	}
	sink := &memSink{}
	c := start(t, cfg, compile(t, cfg), Options{Sink: sink})
	waitFor(t, "three cron runs", func() bool { return len(sink.of("every-second", "o1")) >= 3 })
	vs := sink.of("every-second", "o1")
	// Cron runs land on whole seconds plus at most 10% jitter (and the
	// publishing delay is not in At: At is when the run finished).
	for i := 1; i < len(vs); i++ {
		if gap := vs[i].At.Sub(vs[i-1].At); gap < 500*time.Millisecond {
			t.Fatalf("cron runs %s apart, want about 1s", gap)
		}
	}
	if v, _ := latestOf(c, "every-second", "o1"); v.State != reporting.StateHealthy {
		t.Fatalf("state %s", v.State)
	}
}

func TestAdaptiveConfirmRunsSooner(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "c", Targets: []string{"o1"}, Interval: 3 * time.Second, Rise: 1, Fall: 3,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	sink := &memSink{}
	c := start(t, cfg, compile(t, cfg), Options{Sink: sink})
	if v, err := c.Trigger("c", "o1"); err != nil || v.State != reporting.StateHealthy {
		t.Fatalf("trigger: %s %v", v.State, err)
	}
	if err := o.SetMode(checktest.Mode503); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "unhealthy published", func() bool {
		vs := sink.of("c", "o1")
		return len(vs) > 0 && vs[len(vs)-1].State == reporting.StateUnhealthy
	})
	// The failures after the first one came at interval/4 (750ms), not at
	// the 3s interval (less 10% jitter: at least 2.7s apart).
	var failed []reporting.Verdict
	for _, v := range sink.of("c", "o1") {
		if !v.OK {
			failed = append(failed, v)
		}
	}
	if len(failed) < 3 {
		t.Fatalf("%d failed verdicts", len(failed))
	}
	for i := 1; i < 3; i++ {
		if gap := failed[i].At.Sub(failed[i-1].At); gap >= 2500*time.Millisecond {
			t.Fatalf("confirm run %d came %s after the previous failure, want ~750ms", i, gap)
		}
	}
}

func TestReloadIntervalChangeReplans(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	mk := func(iv time.Duration) *Config {
		return testConfig(t, map[string]string{"o1": o.URL()},
			CheckConfig{Name: "c", Targets: []string{"o1"}, Interval: iv, Rise: 1, HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	}
	cfg := mk(time.Hour)
	c := start(t, cfg, compile(t, cfg), Options{})
	if _, err := c.Trigger("c", "o1"); err != nil {
		t.Fatal(err)
	}
	before, _ := latestOf(c, "c", "o1")
	cfg2 := mk(100 * time.Millisecond)
	c.Reload(cfg2, compile(t, cfg2))
	waitFor(t, "runs at the new interval", func() bool { v, _ := latestOf(c, "c", "o1"); return v.Streak >= before.Streak+3 })
	if v, _ := latestOf(c, "c", "o1"); v.State != reporting.StateHealthy || v.Interval != 100*time.Millisecond {
		t.Fatalf("after reload: %s interval %s", v.State, v.Interval)
	}
}
