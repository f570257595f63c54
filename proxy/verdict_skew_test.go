package proxy

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"

	"github.com/vigil-synthetics/vigil/reporting"
)

// skewLog is a log the test reads back.
type skewLog = checktest.SyncBuffer

// startSkewLogged is start (with background loops) with the proxy's log kept
// for the test to read.
func startSkewLogged(t *testing.T, cfg Config, src reporting.Source) (*harness, *skewLog) {
	t.Helper()
	lb := &skewLog{}
	return startLog(t, cfg, src, true, testEngine(), slog.New(slog.NewTextHandler(lb, nil))), lb
}

// A verdict is fresh from max_age ago to max_age ahead: within that a
// canary's clock may be off. An unhealthy verdict dated further ahead (a
// canary whose clock is an hour fast) is ignored, with one warning naming
// the source and the skew, not one per poll.
func TestVerdictFromTheFutureIgnored(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	var ahead atomic.Int64 // how far ahead the canary dates its verdict
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "home", Target: "o0", Region: "eu",
			State: reporting.StateUnhealthy, At: time.Now().Add(time.Duration(ahead.Load()))}})
	}))
	defer canary.Close()
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = 10 * time.Second
	ahead.Store(int64(time.Hour))
	h, log := startSkewLogged(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}))

	eventually(t, "the skew warning", func() bool { return strings.Contains(log.String(), "dated in the future") })
	time.Sleep(300 * time.Millisecond) // ~15 more polls
	if st := h.p.Origins(); st[0].VerdictDown || !st[0].Available {
		t.Fatalf("an unhealthy verdict dated 1h ahead (max_age 10s) took the origin out: %+v", st[0])
	}
	if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
		t.Fatalf("GET: %d %q", code, body)
	}
	out := log.String()
	if n := strings.Count(out, "dated in the future"); n != 1 {
		t.Fatalf("%d skew warnings in ~15 polls, want 1:\n%s", n, out)
	}
	for _, want := range []string{"source=" + canary.URL + "/api/v1/verdicts", "skew_at_least=1h0m0s", "max_age=10s", "target=o0"} {
		if !strings.Contains(out, want) {
			t.Errorf("skew warning lacks %q:\n%s", want, out)
		}
	}

	// Within the tolerance (5s ahead, max_age 10s) the verdict counts.
	ahead.Store(int64(5 * time.Second))
	eventually(t, "a verdict 5s ahead to take the origin out", func() bool { return h.p.Origins()[0].VerdictDown })
	// Back beyond it: the origin returns although the canary keeps answering.
	ahead.Store(int64(time.Hour))
	eventually(t, "the origin to return", func() bool { return h.p.Origins()[0].Available })
}

// fresh is the window [now-max_age, now+max_age].
func TestVerdictFreshWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {-10 * time.Second, true}, {-11 * time.Second, false}, {10 * time.Second, true}, {11 * time.Second, false}, {365 * 24 * time.Hour, false}} {
		if got := fresh(now.Add(tc.at), now, 10*time.Second); got != tc.want {
			t.Errorf("At now%+v, max_age 10s: fresh %v, want %v", tc.at, got, tc.want)
		}
	}
}

// A canary whose clock is 20s slow dates its verdicts 20s in the past and
// has them expire 15s after that (3 intervals of 5s): on the proxy's clock
// each one would have expired before it arrived, and the origin it fails
// would never be taken out. Verdicts are aged from when the proxy first saw
// them, so it is.
func TestVerdictFromASlowClockCounts(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now().Add(-20 * time.Second)
		json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "home", Target: "o0", Region: "eu",
			State: reporting.StateUnhealthy, At: at, Expires: at.Add(15 * time.Second)}})
	}))
	defer canary.Close()
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = time.Minute
	h, _ := startSkewLogged(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}))
	eventually(t, "the slow canary's verdict to take the origin out", func() bool { return h.p.Origins()[0].VerdictDown })
	if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok b" {
		t.Fatalf("GET: %d %q, want b", code, body)
	}
}

// A canary whose clock is fast dates its verdicts ahead; when it stops, its
// last verdict ages out max_age after the proxy saw it, not max_age after
// the date it carries (which would hold the origin out for the skew longer).
func TestVerdictFromAFastClockAgesFromArrival(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	const skew, maxAge = 2500 * time.Millisecond, 3 * time.Second
	var frozen atomic.Pointer[time.Time] // the last verdict's date once the canary "stops"
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now().Add(skew)
		if f := frozen.Load(); f != nil {
			at = *f
		}
		json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "home", Target: "o0", Region: "eu",
			State: reporting.StateUnhealthy, At: at, Expires: at.Add(time.Minute)}})
	}))
	defer canary.Close()
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	h, _ := startSkewLogged(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}))
	eventually(t, "the origin to be taken out", func() bool { return h.p.Origins()[0].VerdictDown })
	stopped := time.Now()
	last := stopped.Add(skew)
	frozen.Store(&last)
	deadline := stopped.Add(maxAge + skew + 3*time.Second)
	for !h.p.Origins()[0].Available {
		if time.Now().After(deadline) {
			t.Fatalf("the origin is still out %s after its canary stopped", time.Since(stopped).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(stopped)
	if took < maxAge-500*time.Millisecond || took > maxAge+skew-800*time.Millisecond {
		t.Fatalf("the origin returned %s after its canary stopped; want about max_age (%s) from the last verdict's arrival, not max_age + the %s skew", took.Round(time.Millisecond), maxAge, skew)
	}
}

// Successive verdicts of a counted check coming further apart than max_age
// (a check run less often than max_age allows) make the origin's verdict
// stale between runs: the proxy says so once, naming the check, the gap and
// max_age.
func TestVerdictGapsLongerThanMaxAgeWarned(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	src := &memSource{}
	at := time.Now().Add(-time.Hour)
	src.set(reporting.Verdict{Check: "home", Target: "o0", Region: "eu", State: reporting.StateHealthy, At: at})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // a new verdict every 100ms, dated 3s after the one before
		defer close(done)
		for i := 0; i < 100; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			at = at.Add(3 * time.Second)
			src.set(reporting.Verdict{Check: "home", Target: "o0", Region: "eu", State: reporting.StateHealthy, At: at})
		}
	}()
	defer func() { close(stop); <-done }()
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = 2 * time.Second
	_, log := startSkewLogged(t, cfg, src)
	eventually(t, "the gap warning", func() bool { return strings.Contains(log.String(), "further apart than verdicts.max_age") })
	time.Sleep(500 * time.Millisecond)
	out := log.String()
	if n := strings.Count(out, "further apart than verdicts.max_age"); n != 1 {
		t.Errorf("%d gap warnings, want 1 (then one per 10m):\n%s", n, out)
	}
	for _, want := range []string{"check=home", "gap=3s", "max_age=2s", "pool=web"} {
		if !strings.Contains(out, want) {
			t.Errorf("gap warning lacks %q:\n%s", want, out)
		}
	}
}

// A canary whose clock is 800ms slow runs every 300ms; the pool's max_age is
// 1s. Its verdicts must count for the whole max_age from their arrival: a
// source that dropped them by their own date (older than max_age on the
// proxy's clock) lost each one 800ms early, the origin drifted back into
// service between runs (a third of the time here).
func TestSlowClockVerdictsNotDroppedEarly(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	const skew, every = 800 * time.Millisecond, 300 * time.Millisecond
	start := time.Now()
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		run := start.Add(time.Since(start).Truncate(every)) // the last run, on the true clock
		at := run.Add(-skew)
		json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "home", Target: "o0", Region: "eu",
			State: reporting.StateUnhealthy, At: at, Expires: at.Add(3 * every)}})
	}))
	defer canary.Close()
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = time.Second
	h, _ := startSkewLogged(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}))
	eventually(t, "the origin to be taken out", func() bool { return h.p.Origins()[0].VerdictDown })
	// The first verdict the proxy sees of a canary is taken as dated right
	// (it cannot know the skew yet): from the second on, each counts from
	// its arrival.
	time.Sleep(2 * every)
	back := 0
	for i := 0; i < 150; i++ { // 3s, ten runs
		if h.p.Origins()[0].Available {
			back++
		}
		time.Sleep(20 * time.Millisecond)
	}
	if back > 0 {
		t.Fatalf("the origin its canary keeps failing was back in service in %d of 150 samples", back)
	}
}

// A canary's clock that steps back (an NTP correction) dates its next
// verdicts before the last one seen: they are new verdicts, counted from
// their arrival, not older ones placed minutes in the past (which made them
// stale and put the failing origin back in service until the canary's clock
// caught up).
func TestClockStepBackVerdictsCount(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	src := &memSource{}
	unhealthy := func(at time.Time) reporting.Verdict {
		return reporting.Verdict{Check: "home", Target: "o0", Region: "eu", State: reporting.StateUnhealthy, At: at, Expires: at.Add(time.Minute)}
	}
	src.set(unhealthy(time.Now()))
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = 500 * time.Millisecond
	h, _ := startSkewLogged(t, cfg, src)
	eventually(t, "the origin to be taken out", func() bool { return h.p.Origins()[0].VerdictDown })
	step := time.Now().Add(-5 * time.Minute) // the clock steps back 5 minutes
	begin := time.Now()
	for time.Since(begin) < 2*time.Second {
		src.set(unhealthy(step.Add(time.Since(begin)))) // a run every 100ms
		time.Sleep(100 * time.Millisecond)
		if st := h.p.Origins()[0]; st.Available {
			t.Fatalf("%s after the canary's clock stepped back 5m, the origin it keeps failing is back in service", time.Since(begin).Round(time.Millisecond))
		}
	}
}

// Each pool applies its own max_age to verdicts dated ahead: with pools of
// 10s and 60s, a verdict dated 30s ahead counts in the second only (the
// sources are asked with the largest max_age).
func TestVerdictAheadPerPoolMaxAge(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	src := &memSource{}
	at := time.Now().Add(30 * time.Second)
	src.set(reporting.Verdict{Check: "home", Target: "o0", Region: "eu", State: reporting.StateUnhealthy, At: at, Expires: at.Add(time.Minute)})
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	strict := cfg.Pools[0]
	strict.Name, strict.Hosts = "strict", []string{"strict.example"}
	strict.Verdicts.MaxAge = 10 * time.Second
	cfg.Pools[0].Verdicts.MaxAge = time.Minute
	cfg.Pools = append(cfg.Pools, strict)
	h, _ := startSkewLogged(t, cfg, src)
	eventually(t, "the lenient pool to take o0 out", func() bool {
		for _, st := range h.p.Origins() {
			if st.Pool == "web" && st.Name == "o0" {
				return st.VerdictDown
			}
		}
		return false
	})
	for _, st := range h.p.Origins() {
		if st.Pool == "strict" && st.VerdictDown {
			t.Fatalf("pool strict (max_age 10s) took %s out on a verdict dated 30s ahead: %+v", st.Name, st)
		}
	}
}

// A canary whose clock is further ahead than max_age is ignored while it
// runs; when it stops, its last verdict comes within max_age ahead as time
// passes, and must still be ignored: the proxy dropped that very verdict
// before. It used to count from then on, taking the origin out about a
// skew after the canary stopped (seen with a canary 60 s fast on InfluxDB,
// whose verdicts are read up to 2 × max_age ahead).
func TestVerdictFromAStoppedFastCanaryNeverCounts(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	const skew, maxAge = 2 * time.Second, time.Second
	var frozen atomic.Pointer[time.Time]
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now().Add(skew)
		if f := frozen.Load(); f != nil {
			at = *f
		}
		json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "home", Target: "o0", Region: "eu",
			State: reporting.StateUnhealthy, At: at}})
	}))
	defer canary.Close()
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	h, log := startSkewLogged(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}))
	eventually(t, "the skew warning", func() bool { return strings.Contains(log.String(), "dated in the future") })
	stopped := time.Now()
	stop := stopped.Add(skew)
	frozen.Store(&stop)
	for end := time.Now().Add(skew + 2*maxAge); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if o := h.p.Origins()[0]; o.VerdictDown {
			t.Fatalf("%s after the fast canary stopped, its last verdict (dropped as %s ahead) took the origin out: %s",
				time.Since(stopped).Round(10*time.Millisecond), skew, o.Why["verdict"])
		}
	}
	if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok a" {
		t.Fatalf("GET: %d %q", code, body)
	}
}
