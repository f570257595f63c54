package canary

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// TestMachineSince: Step.Since is the time of the run that changed the
// state (of the first run for a new machine, of the run that found the
// last verdict expired), kept by runs that leave the state as it was, by
// runs the agent could not make, and by a restart (Seed); a verdict
// without it seeds an unknown since until the state changes.
func TestMachineSince(t *testing.T) {
	p := testParams() // rise 2, fall 3, interval 10s, expire_after 30s
	p.Flap.MaxChanges = 0
	type run struct {
		o     Outcome
		state reporting.State
		since int // index of the run whose time Since must be; -1: zero; -3: the previous run's expiry
	}
	U, H, D, Q := reporting.StateUnhealthy, reporting.StateHealthy, reporting.StateDegraded, reporting.StateUnknown
	for _, tc := range []struct {
		name string
		seed *reporting.Verdict // at t0, before the first run
		gap  map[int]time.Duration
		runs []run
	}{
		{name: "new machine", runs: []run{
			{Fail, Q, 0}, {Fail, Q, 0}, {Fail, U, 2}, {Fail, U, 2}, {Agent, U, 2}, {Fail, U, 2},
			{Pass, U, 2}, {Pass, H, 7}, {Pass, H, 7}, {Slow, H, 7}, {Slow, H, 7}, {Slow, D, 11}, {Slow, D, 11},
			{Pass, D, 11}, {Pass, H, 14},
		}},
		{name: "agent fault first", runs: []run{{Agent, Q, 0}, {Pass, Q, 0}, {Pass, H, 2}}},
		{name: "expired", gap: map[int]time.Duration{3: time.Minute}, runs: []run{
			{Pass, Q, 0}, {Pass, H, 1}, {Pass, H, 1}, {Pass, Q, -3}, {Pass, H, 4},
		}},
		{name: "expired while unknown keeps its since", gap: map[int]time.Duration{1: time.Minute}, runs: []run{
			{Fail, Q, 0}, {Pass, Q, 0}, {Pass, H, 2},
		}},
		{name: "seeded", seed: &reporting.Verdict{State: U, OK: false, Cause: "status", Streak: 5,
			At: t0, Expires: t0.Add(30 * time.Second), Since: t0.Add(-time.Hour)},
			runs: []run{{Fail, U, -2}, {Pass, U, -2}, {Pass, H, 2}}},
		{name: "seeded without since", seed: &reporting.Verdict{State: U, OK: false, Cause: "status", Streak: 5,
			At: t0, Expires: t0.Add(30 * time.Second)},
			runs: []run{{Fail, U, -1}, {Pass, U, -1}, {Pass, H, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(p)
			if tc.seed != nil {
				m.Seed(*tc.seed)
			}
			at := t0
			var ats []time.Time
			for i, r := range tc.runs {
				at = at.Add(p.Interval + tc.gap[i])
				ats = append(ats, at)
				s := m.Observe(at, r.o)
				var want time.Time
				switch r.since {
				case -1:
				case -2:
					want = tc.seed.Since
				case -3:
					want = ats[i-1].Add(p.ExpireAfter)
				default:
					want = ats[r.since]
				}
				if s.State != r.state || !s.Since.Equal(want) {
					t.Fatalf("run %d (%s): %s since %v, want %s since %v", i, r.o, s.State, s.Since, r.state, want)
				}
			}
		})
	}
}

// TestSinceSurvivesKill: a canary process writing into the embedded store
// sees its origin answer 503: the pair turns unhealthy, and every later
// verdict says since the run that turned it. Killed with SIGKILL and
// started again, the canary restores the pair from the store with that
// time, not the restart's; the origin healthy again, the pair's verdicts
// say since the run that turned it healthy.
func TestSinceSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary three times (-short)")
	}
	o := checktest.NewOrigin()
	defer o.Close()
	if err := o.SetMode(checktest.Mode503); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(n int64) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHistorySurvivesKill$", "-test.v=false")
		cmd.Env = append(os.Environ(), envChildDir+"="+dir, envChildOrigin+"="+o.URL())
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child said nothing: %v", err)
		}
		start := o.Count("GET", "/healthz")
		waitFor(t, "child runs", func() bool { return o.Count("GET", "/healthz") >= start+n })
		time.Sleep(300 * time.Millisecond) // a few publish batches
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		return strings.TrimSpace(line)
	}
	history := func() []reporting.Verdict {
		st, err := store.Open(dir, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		hist, err := st.History(context.Background(), reporting.HistoryQuery{Check: "home", Target: "o1",
			From: time.Now().Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return hist
	}

	if got := run(6); got != "restored 0" {
		t.Fatalf("first start: %q", got)
	}
	hist := history()
	if len(hist) < 4 || hist[len(hist)-1].State != reporting.StateUnhealthy {
		t.Fatalf("before the kill: %d verdicts, the last %+v; want unhealthy after fall (3) runs", len(hist), hist[len(hist)-1])
	}
	var down time.Time // the At of the first unhealthy verdict
	for i, v := range hist {
		if v.State == reporting.StateUnhealthy && down.IsZero() {
			down = v.At
		}
		want := hist[0].At // unknown since the first verdict
		if v.State == reporting.StateUnhealthy {
			want = down
		}
		if !v.Since.Equal(want) {
			t.Fatalf("verdict %d (%s at %s) since %v, want %v", i, v.State, v.At.Format(time.StampMilli), v.Since, want)
		}
	}
	before := len(hist)

	if got := run(6); got != "restored 1" {
		t.Fatalf("restart did not restore the pair's verdict: %q", got)
	}
	hist = history()
	if len(hist) < before+4 {
		t.Fatalf("after the restart: %d verdicts, want at least %d", len(hist), before+4)
	}
	for i, v := range hist[before:] {
		if v.State != reporting.StateUnhealthy || !v.Since.Equal(down) {
			t.Fatalf("verdict %d after the restart: %s since %v, want unhealthy since %v (before the kill)",
				i, v.State, v.Since, down)
		}
	}
	before = len(hist)

	if err := o.SetMode(checktest.ModeOK); err != nil {
		t.Fatal(err)
	}
	run(6)
	hist = history()
	var up time.Time
	for i, v := range hist[before:] {
		if v.State == reporting.StateHealthy && up.IsZero() {
			up = v.At
		}
		want := down
		if v.State == reporting.StateHealthy {
			want = up
		}
		if !v.Since.Equal(want) {
			t.Fatalf("verdict %d after the origin recovered: %s since %v, want %v", i, v.State, v.Since, want)
		}
	}
	if up.IsZero() {
		t.Fatalf("the pair did not turn healthy after its origin did: %+v", hist[len(hist)-1])
	}
}

// TestVerdictsAPISince: GET /api/v1/verdicts says since when each pair
// has been in its state ("since", RFC 3339), from the canary's memory and
// from the store alike: the run that turned the pair unhealthy, kept by
// the runs after it, then the run that turned it healthy.
func TestVerdictsAPISince(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	if err := o.SetMode(checktest.Mode503); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := testConfig(t, map[string]string{"o1": o.URL()},
		CheckConfig{Name: "home", Targets: []string{"o1"}, Rise: 2, Fall: 2, Interval: time.Hour,
			HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	c, err := New(cfg, compile(t, cfg), Options{Sink: st, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	fromStore := httptest.NewServer(c.Handler(st))
	defer fromStore.Close()
	fromMemory := httptest.NewServer(c.Handler(nil))
	defer fromMemory.Close()
	since := func(srv *httptest.Server) (string, string) {
		t.Helper()
		code, body := do(t, "GET", srv.URL+"/api/v1/verdicts", "", "")
		var vs []map[string]any
		if err := json.Unmarshal([]byte(body), &vs); code != 200 || err != nil || len(vs) != 1 {
			t.Fatalf("GET /api/v1/verdicts: %d %s (%v)", code, body, err)
		}
		s, _ := vs[0]["since"].(string)
		return vs[0]["state"].(string), s
	}
	trigger := func() reporting.Verdict {
		t.Helper()
		v, err := c.Trigger("home", "o1")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	check := func(when string, state reporting.State, want time.Time) {
		t.Helper()
		for name, srv := range map[string]*httptest.Server{"store": fromStore, "memory": fromMemory} {
			gotState, got := since(srv)
			if gotState != string(state) || got != want.UTC().Format(time.RFC3339Nano) {
				t.Errorf("%s, from %s: %s since %q, want %s since %q", when, name, gotState, got, state, want.UTC().Format(time.RFC3339Nano))
			}
		}
	}
	first := trigger()
	check("first run", reporting.StateUnknown, first.At)
	down := trigger()
	check("fall (2) failures", reporting.StateUnhealthy, down.At)
	trigger()
	trigger()
	check("two more failures", reporting.StateUnhealthy, down.At)
	if err := o.SetMode(checktest.ModeOK); err != nil {
		t.Fatal(err)
	}
	trigger()
	check("one pass", reporting.StateUnhealthy, down.At)
	up := trigger()
	check("rise (2) passes", reporting.StateHealthy, up.At)
}

// TestVerdictsAPIExpiredSince: a verdict that expired reads unknown in GET
// /api/v1/verdicts, since it expired, not since the state it reported.
func TestVerdictsAPIExpiredSince(t *testing.T) {
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	expired := reporting.Verdict{Check: "home", Target: "o1", Region: "other", Vantage: "v9", State: reporting.StateUnhealthy,
		Streak: 7, At: now.Add(-2 * time.Minute), Expires: now.Add(-time.Minute), Since: now.Add(-time.Hour)}
	fresh := expired
	fresh.Target, fresh.At, fresh.Expires = "o2", now.Add(-time.Second), now.Add(time.Minute)
	if err := st.Publish(context.Background(), []reporting.Verdict{expired, fresh}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, map[string]string{"o1": "http://127.0.0.1:1"},
		CheckConfig{Name: "home", Targets: []string{"o1"}, Interval: time.Hour, HTTP: &checks.HTTPSpec{}})
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler(st))
	defer srv.Close()
	code, body := do(t, "GET", srv.URL+"/api/v1/verdicts", "", "")
	var vs []map[string]any
	if err := json.Unmarshal([]byte(body), &vs); code != 200 || err != nil || len(vs) != 2 {
		t.Fatalf("GET /api/v1/verdicts: %d %s (%v)", code, body, err)
	}
	for _, v := range vs {
		want, wantState := fresh.Since, "unhealthy"
		if v["target"] == "o1" {
			want, wantState = expired.Expires, "unknown"
		}
		if v["state"] != wantState || v["since"] != want.Format(time.RFC3339Nano) {
			t.Errorf("%s: %s since %v, want %s since %s", v["target"], v["state"], v["since"], wantState, want.Format(time.RFC3339Nano))
		}
	}
}
