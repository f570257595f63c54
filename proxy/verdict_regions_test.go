package proxy

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// liveSource is a store the canaries of some regions write to: each read
// gives, per live region, a verdict of check home on o0 dated now (a new
// run each read), and for the other regions the last one they wrote. It
// fails while failing is set, as a store that is down.
type liveSource struct {
	mu      sync.Mutex
	state   reporting.State
	live    map[string]bool
	last    map[string]time.Time
	failing bool
}

func newLiveSource(st reporting.State, regions ...string) *liveSource {
	s := &liveSource{state: st, live: map[string]bool{}, last: map[string]time.Time{}}
	for _, r := range regions {
		s.live[r] = true
	}
	return s
}

func (s *liveSource) String() string { return "store-under-test" }

func (s *liveSource) setLive(r string, live bool) { s.mu.Lock(); s.live[r] = live; s.mu.Unlock() }
func (s *liveSource) setFailing(f bool)           { s.mu.Lock(); s.failing = f; s.mu.Unlock() }

func (s *liveSource) Verdicts(_ context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing {
		return nil, errors.New("connection refused")
	}
	now := time.Now()
	var out []reporting.Verdict
	for r, live := range s.live {
		if live {
			s.last[r] = now
		}
		at := s.last[r]
		if now.Sub(at) > maxAge {
			continue
		}
		out = append(out, reporting.Verdict{Check: "home", Target: "o0", Region: r, State: s.state,
			OK: s.state == reporting.StateHealthy, Cause: "timeout", At: at, Expires: at.Add(time.Hour)})
	}
	return out, nil
}

// holdsWithin polls cond every 10ms for at most d, and says whether it held.
func holdsWithin(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func regionsGauge(t *testing.T, h *harness) float64 {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "vigil_proxy_pool_regions_reporting" {
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == "web" {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// TestRegionStopsReporting: of three regions with quorum 2, one stops
// reporting, then another. Each stop is a WARN line (once per region),
// vigil_proxy_pool_regions_reporting follows, and with fewer regions than
// the quorum /healthz warns (verdicts can take no origin out) while it
// stays 200. A region that returns gets an INFO line. Was: nothing until
// every region had stopped (the stale-verdict warning).
func TestRegionStopsReporting(t *testing.T) {
	const maxAge = 300 * time.Millisecond
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	cfg.Pools[0].Verdicts.Quorum = 2
	src := newLiveSource(reporting.StateHealthy, "eu", "us-east", "ap-south")
	logs := &tryLogs{}
	h := startLog(t, cfg, src, true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
	if !holdsWithin(3*time.Second, func() bool { return regionsGauge(t, h) == 3 }) {
		t.Errorf("vigil_proxy_pool_regions_reporting{pool=web} = %v, want 3", regionsGauge(t, h))
	}

	const stopped = "a region stopped reporting for the pool"
	src.setLive("ap-south", false)
	eventually(t, "ap-south's warning", func() bool { return len(logs.lines(stopped)) > 0 })
	line := logs.lines(stopped)[0]
	for _, want := range []string{"level=WARN", "pool=web", "region=ap-south", "reporting=2", "quorum=2", "verdicts_can_eject=true", "max_age=300ms"} {
		if !strings.Contains(line, want) {
			t.Errorf("warning lacks %q: %s", want, line)
		}
	}
	if g := regionsGauge(t, h); g != 2 {
		t.Errorf("vigil_proxy_pool_regions_reporting{pool=web} = %v, want 2", g)
	}
	if w, err := h.p.VerdictReport(); len(w) != 0 || err != nil {
		t.Errorf("two regions of quorum 2: warnings %q, err %v; want none", w, err)
	}

	src.setLive("us-east", false)
	eventually(t, "us-east's warning", func() bool { return len(logs.lines(stopped, "region=us-east")) > 0 })
	line = logs.lines(stopped, "region=us-east")[0]
	for _, want := range []string{"level=WARN", "reporting=1", "quorum=2", "verdicts_can_eject=false"} {
		if !strings.Contains(line, want) {
			t.Errorf("warning lacks %q: %s", want, line)
		}
	}
	if g := regionsGauge(t, h); g != 1 {
		t.Errorf("vigil_proxy_pool_regions_reporting{pool=web} = %v, want 1", g)
	}
	w, err := h.p.VerdictReport()
	want := "pool web: 1 region(s) report fresh verdicts (eu), fewer than verdicts.quorum 2: verdicts can take no origin out; its origins are judged by passive detection alone (no fresh verdict from ap-south, us-east)"
	if err != nil || !slices.Contains(w, want) {
		t.Errorf("one region of quorum 2: warnings %q, err %v; want %q", w, err, want)
	}
	time.Sleep(10 * cfg.VerdictPoll)
	if n := len(logs.lines(stopped)); n != 2 {
		t.Errorf("%d region warnings, want 2 (one per region):\n%s", n, logs.String())
	}

	src.setLive("ap-south", true)
	eventually(t, "ap-south back", func() bool { return len(logs.lines("a region reports for the pool again")) > 0 })
	line = logs.lines("a region reports for the pool again")[0]
	for _, want := range []string{"level=INFO", "pool=web", "region=ap-south", "reporting=2", "quorum=2"} {
		if !strings.Contains(line, want) {
			t.Errorf("recovery line lacks %q: %s", want, line)
		}
	}
	eventually(t, "the warning cleared", func() bool { w, _ := h.p.VerdictReport(); return len(w) == 0 })
	if g := regionsGauge(t, h); g != 2 {
		t.Errorf("vigil_proxy_pool_regions_reporting{pool=web} = %v, want 2", g)
	}
}

// TestVerdictsExpireWhileSourceFails: the store the verdicts are read from
// goes down while two regions hold an origin out. When their verdicts age
// out, the line that returns the origin says the verdict source is failing
// and names it, instead of saying the regions stopped reporting, and no
// region gets a stopped-reporting warning of its own: one line names the
// source. Was: "verdicts expired, region(s) stopped reporting …
// stopped_reporting=eu,us-east" although the canaries were fine.
func TestVerdictsExpireWhileSourceFails(t *testing.T) {
	const maxAge = 300 * time.Millisecond
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	cfg.Pools[0].Verdicts.Quorum = 2
	src := newLiveSource(reporting.StateUnhealthy, "eu", "us-east")
	logs := &tryLogs{}
	h := startLog(t, cfg, src, true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
	eventually(t, "o0 out by verdicts", func() bool { return adminOrigins(t, h.p)[0].VerdictDown })

	src.setFailing(true)
	eventually(t, "o0 back", func() bool { return len(logs.lines("verdicts cleared origin")) > 0 })
	line := logs.lines("verdicts cleared origin")[0]
	for _, want := range []string{`msg="proxy: verdicts cleared origin: verdicts expired: the verdict source is failing (store-under-test)"`,
		"source_failing=store-under-test", "expired=eu,us-east", "quorum=2", "max_age=300ms"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q:\n%s", want, line)
		}
	}
	if strings.Contains(line, "stopped_reporting") || strings.Contains(line, "stopped reporting") {
		t.Errorf("line blames the regions:\n%s", line)
	}
	eventually(t, "the source line", func() bool {
		return len(logs.lines("aged out while their verdict source is failing")) > 0
	})
	line = logs.lines("aged out while their verdict source is failing")[0]
	for _, want := range []string{"level=WARN", "pool=web", "source_failing=store-under-test", "regions=eu,us-east", "reporting=0"} {
		if !strings.Contains(line, want) {
			t.Errorf("source line lacks %q:\n%s", want, line)
		}
	}
	time.Sleep(5 * cfg.VerdictPoll)
	if got := logs.lines("a region stopped reporting"); len(got) != 0 {
		t.Errorf("regions blamed one by one while the source fails: %q", got)
	}
	if n := len(logs.lines("aged out while their verdict source is failing")); n != 1 {
		t.Errorf("%d source lines, want 1", n)
	}
}

// TestRegionCanaryDies: the proxy reads each region's canary over HTTP
// (--verdicts-from, one URL per canary). When one canary dies its API fails
// too: that is its region stopping, so the region's warning fires (the
// source-failing line is for stores), and /healthz keeps its own line about
// the failing source.
func TestRegionCanaryDies(t *testing.T) {
	const maxAge = 300 * time.Millisecond
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, urls(a, b)...)
	cfg.VerdictPoll = 20 * time.Millisecond
	cfg.Pools[0].Verdicts.MaxAge = maxAge
	cfg.Pools[0].Verdicts.Quorum = 2
	var srcs Sources
	canaries := map[string]*verdictCanary{}
	for _, r := range []string{"eu", "us-east", "ap-south"} {
		c := newVerdictCanary(t, func() []reporting.Verdict {
			now := time.Now()
			return []reporting.Verdict{{Check: "home", Target: "o0", Region: r, State: reporting.StateHealthy,
				OK: true, At: now, Expires: now.Add(time.Hour)}}
		})
		canaries[r] = c
		srcs = append(srcs, c.source())
	}
	logs := &tryLogs{}
	h := startLog(t, cfg, srcs, true, EngineFast, slog.New(slog.NewTextHandler(logs, nil)))
	if !holdsWithin(3*time.Second, func() bool { return regionsGauge(t, h) == 3 }) {
		t.Errorf("vigil_proxy_pool_regions_reporting{pool=web} = %v, want 3", regionsGauge(t, h))
	}

	canaries["ap-south"].srv.Close()
	eventually(t, "ap-south's warning", func() bool { return len(logs.lines("a region stopped reporting for the pool")) > 0 })
	line := logs.lines("a region stopped reporting for the pool")[0]
	for _, want := range []string{"level=WARN", "pool=web", "region=ap-south", "reporting=2", "quorum=2"} {
		if !strings.Contains(line, want) {
			t.Errorf("warning lacks %q: %s", want, line)
		}
	}
	if got := logs.lines("verdict source is failing"); len(got) != 0 {
		t.Errorf("a dead canary reported as a failing store: %q", got)
	}
	w, err := h.p.VerdictReport()
	if err != nil || len(w) != 1 || !strings.Contains(w[0], "verdict source "+canaries["ap-south"].url+" failing since") {
		t.Errorf("warnings %q, err %v; want the failing canary's line only", w, err)
	}
}
