// Package storetest holds the contract every vigil verdict store passes —
// the embedded SQLite store and InfluxDB run the same cases.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Store is what a verdict store implements: write and read verdicts, history,
// rollups and signals.
type Store interface {
	reporting.Sink
	reporting.HistorySource
	reporting.SignalSink
	reporting.SignalSource
}

// Flusher is implemented by stores whose Publish returns before the data is
// readable (InfluxDB's outbox); the contract calls Flush after publishing.
type Flusher interface {
	Flush(ctx context.Context) error
}

// RunContract runs every case against a fresh store from open. open must
// return an empty store and register its own cleanup. The cases use the real
// clock with timestamps in the last hour, and never write two verdicts of one
// series with the same At (InfluxDB would merge them into one point).
func RunContract(t *testing.T, open func(t *testing.T) Store) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"LatestPerSeries", testLatestPerSeries},
		{"LateArrivalKeepsNewest", testLateArrival},
		{"MaxAge", testMaxAge},
		{"MultiRegion", testMultiRegion},
		{"HistoryOrderAndFilters", testHistory},
		{"HistoryRunFilter", testHistoryRunFilter},
		{"Rollups", testRollups},
		{"RollupTTFBTimeouts", testRollupTTFBTimeouts},
		{"SignalsRoundTrip", testSignals},
		{"VerdictJSONRoundTrip", testJSONRoundTrip},
		{"SinceRoundTrip", testSince},
		{"EmptyStore", testEmpty},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, open(t))
		})
	}
}

// base is "now" for a case, truncated to the millisecond so every backend
// can represent it exactly.
func base() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

const ms = time.Millisecond

// sample returns a verdict with every field set; durations are exact in
// binary milliseconds so the *_ms float wire form round-trips exactly.
func sample(check, target, region, vantage string, at time.Time, i int) reporting.Verdict {
	ok := i%4 != 3
	v := reporting.Verdict{
		Check: check, Target: target, Tier: reporting.TierDeep, Region: region, Vantage: vantage,
		State: reporting.StateHealthy, OK: ok, StatusCode: 200,
		TTFB:     time.Duration(40+i)*ms + 250*time.Microsecond,
		Duration: time.Duration(90+i)*ms + 500*time.Microsecond,
		DNS:      2*ms + 250*time.Microsecond, Connect: 3 * ms, TLS: 7*ms + 750*time.Microsecond,
		Transfer: 12 * ms, Streak: i + 1, Interval: 30 * time.Second,
		At: at, Expires: at.Add(90 * time.Second),
		URL:        "https://" + target + ".example/healthz",
		CertExpiry: at.Add(40 * 24 * time.Hour).Truncate(time.Second),
		Proto:      "HTTP/2.0",
	}
	if i%2 == 1 {
		v.Proto = "HTTP/1.1"
	}
	// One canary instance per vantage, and the time the state began;
	// every fifth verdict has neither, as those of versions before them.
	if i%5 != 4 {
		v.Instance = vantage + "-0a1b2c3d"
		v.Since = at.Add(-time.Duration(i+1) * time.Minute)
	}
	if !ok {
		v.State = reporting.StateUnhealthy
		v.Cause = "status"
		v.Err = fmt.Sprintf(`status 503, want 200 (run %d, "quoted", comma,=space)`, i)
		v.StatusCode = 503
		v.Artifact = "artifacts/" + check + "/run.png"
		// held down by flap damping: a restarted canary restores this
		v.HeldUntil = at.Add(5 * time.Minute)
	}
	return v
}

func publish(t *testing.T, s Store, vs ...reporting.Verdict) {
	t.Helper()
	if err := s.Publish(context.Background(), vs); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	flush(t, s)
}

func flush(t *testing.T, s Store) {
	t.Helper()
	if f, ok := s.(Flusher); ok {
		if err := f.Flush(context.Background()); err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
}

// norm makes verdicts comparable with reflect.DeepEqual: UTC times without
// a monotonic reading.
func norm(v reporting.Verdict) reporting.Verdict {
	v.At = v.At.Round(0).UTC()
	v.Expires = v.Expires.Round(0).UTC()
	if !v.CertExpiry.IsZero() {
		v.CertExpiry = v.CertExpiry.Round(0).UTC()
	}
	if !v.HeldUntil.IsZero() {
		v.HeldUntil = v.HeldUntil.Round(0).UTC()
	}
	if !v.Since.IsZero() {
		v.Since = v.Since.Round(0).UTC()
	}
	if v.At.Equal(time.Unix(0, 0)) {
		v.At = time.Time{}
	}
	return v
}

func sortVerdicts(vs []reporting.Verdict) {
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Key() < vs[j].Key() })
}

func equalVerdicts(t *testing.T, what string, got, want []reporting.Verdict) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d verdicts, want %d\ngot:  %+v\nwant: %+v", what, len(got), len(want), got, want)
	}
	for i := range got {
		g, w := norm(got[i]), norm(want[i])
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: verdict %d differs\ngot:  %+v\nwant: %+v", what, i, g, w)
		}
	}
}

func testLatestPerSeries(t *testing.T, s Store) {
	now := base()
	var all, want []reporting.Verdict
	for si, series := range [][2]string{{"home", "origin-a"}, {"home", "origin-b"}, {"api", "origin-a"}} {
		var last reporting.Verdict
		for i := 0; i < 4; i++ {
			v := sample(series[0], series[1], "eu-west", "canary-1", now.Add(-time.Duration(40-i*10-si)*time.Second), i)
			all = append(all, v)
			last = v
		}
		want = append(want, last)
	}
	// Two batches, interleaved series.
	publish(t, s, all[:5]...)
	publish(t, s, all[5:]...)
	got, err := s.Verdicts(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	sortVerdicts(got)
	sortVerdicts(want)
	equalVerdicts(t, "Verdicts(0)", got, want)
}

func testLateArrival(t *testing.T, s Store) {
	now := base()
	newer := sample("home", "origin-a", "eu-west", "", now.Add(-5*time.Second), 1)
	older := sample("home", "origin-a", "eu-west", "", now.Add(-50*time.Second), 3)
	publish(t, s, newer)
	publish(t, s, older)
	got, err := s.Verdicts(context.Background(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	equalVerdicts(t, "latest after a late older verdict", got, []reporting.Verdict{newer})
}

func testMaxAge(t *testing.T, s Store) {
	now := base()
	stale := sample("home", "origin-a", "eu-west", "", now.Add(-30*time.Minute), 0)
	fresh := sample("home", "origin-b", "eu-west", "", now.Add(-10*time.Second), 0)
	publish(t, s, stale, fresh)
	got, err := s.Verdicts(context.Background(), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	equalVerdicts(t, "Verdicts(5m)", got, []reporting.Verdict{fresh})
	got, err = s.Verdicts(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	sortVerdicts(got)
	equalVerdicts(t, "Verdicts(0)", got, []reporting.Verdict{stale, fresh})
}

func testMultiRegion(t *testing.T, s Store) {
	now := base()
	var want []reporting.Verdict
	i := 0
	for _, rv := range [][2]string{{"eu-west", "canary-1"}, {"eu-west", "canary-2"}, {"us-east", "canary-1"}, {"ap-south", "canary-1"}} {
		old := sample("home", "origin-a", rv[0], rv[1], now.Add(-time.Duration(60+i)*time.Second), 0)
		v := sample("home", "origin-a", rv[0], rv[1], now.Add(-time.Duration(10+i)*time.Second), i)
		if rv[0] == "us-east" {
			v.State, v.OK, v.Cause, v.StatusCode = reporting.StateUnhealthy, false, "timeout", 0
		}
		publish(t, s, old, v)
		want = append(want, v)
		i++
	}
	got, err := s.Verdicts(context.Background(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sortVerdicts(got)
	sortVerdicts(want)
	equalVerdicts(t, "Verdicts across regions and vantages", got, want)
}

func testHistory(t *testing.T, s Store) {
	now := base()
	start := now.Add(-20 * time.Minute)
	var a, b []reporting.Verdict
	var batch []reporting.Verdict
	for i := 0; i < 10; i++ {
		va := sample("home", "origin-a", "eu-west", "canary-1", start.Add(time.Duration(i)*time.Minute), i)
		a = append(a, va)
		batch = append(batch, va)
		if i < 5 {
			vb := sample("home", "origin-a", "us-east", "canary-1", start.Add(time.Duration(i)*time.Minute+30*time.Second), i)
			b = append(b, vb)
			batch = append(batch, vb)
		}
	}
	other := sample("api", "origin-b", "eu-west", "canary-1", start.Add(90*time.Second), 0)
	batch = append(batch, other)
	// Publish newest first: the store orders by At, not by arrival.
	for i := len(batch) - 1; i >= 0; i-- {
		publish(t, s, batch[i])
	}
	ctx := context.Background()
	tests := []struct {
		name string
		q    reporting.HistoryQuery
		want []reporting.Verdict
	}{
		{"check+target+region", reporting.HistoryQuery{Check: "home", Target: "origin-a", Region: "eu-west"}, a},
		{"region only", reporting.HistoryQuery{Region: "us-east"}, b},
		{"check only", reporting.HistoryQuery{Check: "api"}, []reporting.Verdict{other}},
		{"window", reporting.HistoryQuery{Check: "home", Region: "eu-west", From: start.Add(2 * time.Minute), To: start.Add(5 * time.Minute)}, a[2:6]},
		{"limit keeps the newest", reporting.HistoryQuery{Check: "home", Region: "eu-west", Limit: 3}, a[7:]},
		{"no match", reporting.HistoryQuery{Check: "nope"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.History(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			equalVerdicts(t, "History", got, tc.want)
		})
	}
	// Everything, in time order.
	got, err := s.History(ctx, reporting.HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(batch) {
		t.Fatalf("History{} returned %d verdicts, want %d", len(got), len(batch))
	}
	for i := 1; i < len(got); i++ {
		if got[i].At.Before(got[i-1].At) {
			t.Fatalf("History{} not in time order at %d: %s before %s", i, got[i].At, got[i-1].At)
		}
	}
}

func testRollups(t *testing.T, s Store) {
	m0 := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	var vs []reporting.Verdict
	var sum time.Duration
	// Minute m0: 20 runs, TTFB 10..200 ms shuffled, runs 3,7,11 failed, 11 and 15 unhealthy.
	order := []int{7, 3, 19, 0, 12, 5, 16, 9, 1, 14, 18, 2, 11, 6, 17, 10, 4, 13, 8, 15}
	for n, i := range order {
		v := sample("home", "origin-a", "eu-west", "canary-1", m0.Add(time.Duration(n)*2*time.Second+time.Second), i)
		v.TTFB = time.Duration(i+1) * 10 * ms
		v.OK, v.State, v.Cause = true, reporting.StateHealthy, ""
		switch i {
		case 3, 7:
			v.OK, v.Cause = false, "status"
			v.State = reporting.StateDegraded
		case 11:
			v.OK, v.Cause = false, "status"
			v.State = reporting.StateUnhealthy
		case 15:
			v.State = reporting.StateUnhealthy
		}
		sum += v.TTFB
		vs = append(vs, v)
	}
	// Minute m0+1: 2 runs. Another region in m0 (filtered out below).
	m1a := sample("home", "origin-a", "eu-west", "canary-1", m0.Add(time.Minute+10*time.Second), 0)
	m1b := sample("home", "origin-a", "eu-west", "canary-1", m0.Add(time.Minute+40*time.Second), 1)
	m1a.TTFB, m1b.TTFB = 5*ms, 300*ms
	// m1b only failed its latency objective: it counts as available
	// (reporting.Verdict.Unavailable), so minute m0+1 has no failed run.
	m1a.OK, m1b.OK, m1b.Cause = true, false, reporting.CauseTTFB
	m1a.State, m1b.State = reporting.StateHealthy, reporting.StateDegraded
	// Two runs in m0+1 the agent could not make (reporting.Verdict.AgentFault:
	// no file descriptor, no browser) are not runs of the target: the
	// minute still has 2 runs, none failed or unhealthy.
	ag1 := sample("home", "origin-a", "eu-west", "canary-1", m0.Add(time.Minute+20*time.Second), 2)
	ag2 := sample("home", "origin-a", "eu-west", "canary-1", m0.Add(time.Minute+25*time.Second), 3)
	ag1.OK, ag1.Cause, ag1.State, ag1.TTFB = false, reporting.CauseAgent, reporting.StateUnhealthy, 0
	ag2.OK, ag2.Cause, ag2.State, ag2.TTFB = false, reporting.CauseBrowserUnavailable, reporting.StateHealthy, 0
	us := sample("home", "origin-a", "us-east", "canary-1", m0.Add(20*time.Second), 0)
	vs = append(vs, m1a, m1b, ag1, ag2, us)
	publish(t, s, vs[:12]...)
	publish(t, s, vs[12:]...)

	got, err := s.Rollups(context.Background(), reporting.HistoryQuery{
		Check: "home", Target: "origin-a", Region: "eu-west", From: m0, To: m0.Add(2*time.Minute - time.Nanosecond),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []reporting.Rollup{
		{Check: "home", Target: "origin-a", Region: "eu-west", Minute: m0, Total: 20, Failed: 3, Unhealthy: 2,
			TTFBSum: sum, TTFBMax: 200 * ms, TTFBP95: 190 * ms},
		{Check: "home", Target: "origin-a", Region: "eu-west", Minute: m0.Add(time.Minute), Total: 2, Failed: 0, Unhealthy: 0,
			TTFBSum: 305 * ms, TTFBMax: 300 * ms, TTFBP95: 300 * ms},
	}
	if len(got) != len(want) {
		t.Fatalf("Rollups: got %d rows, want %d: %+v", len(got), len(want), got)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Check != w.Check || g.Target != w.Target || g.Region != w.Region || !g.Minute.Equal(w.Minute) ||
			g.Total != w.Total || g.Failed != w.Failed || g.Unhealthy != w.Unhealthy {
			t.Fatalf("rollup %d:\ngot:  %+v\nwant: %+v", i, g, w)
		}
		if !near(g.TTFBSum, w.TTFBSum, 0.0001) || !near(g.TTFBMax, w.TTFBMax, 0.0001) {
			t.Fatalf("rollup %d TTFB sum/max: got %s/%s, want %s/%s", i, g.TTFBSum, g.TTFBMax, w.TTFBSum, w.TTFBMax)
		}
		// p95 may come from a histogram: within 2 % of the nearest-rank value.
		if !near(g.TTFBP95, w.TTFBP95, 0.02) {
			t.Fatalf("rollup %d TTFB p95: got %s, want %s ±2%%", i, g.TTFBP95, w.TTFBP95)
		}
	}
	// All regions in the window: eu-west m0, us-east m0, eu-west m0+1, ordered by minute then region.
	all, err := s.Rollups(context.Background(), reporting.HistoryQuery{Check: "home", From: m0, To: m0.Add(2*time.Minute - time.Nanosecond)})
	if err != nil {
		t.Fatal(err)
	}
	var gotKeys []string
	for _, r := range all {
		gotKeys = append(gotKeys, fmt.Sprintf("%s/%s/%d", r.Minute.Format("15:04"), r.Region, r.Total))
	}
	wantKeys := []string{m0.Format("15:04") + "/eu-west/20", m0.Format("15:04") + "/us-east/1", m0.Add(time.Minute).Format("15:04") + "/eu-west/2"}
	if !reflect.DeepEqual(gotKeys, wantKeys) {
		t.Fatalf("Rollups{Check: home}: got %v, want %v", gotKeys, wantKeys)
	}
}

func near(got, want time.Duration, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*float64(want)+float64(time.Microsecond)
}

func testSignals(t *testing.T, s Store) {
	now := base()
	var sigs []reporting.Signal
	for i := 0; i < 3; i++ {
		sigs = append(sigs, reporting.Signal{
			Pool: "web", Origin: fmt.Sprintf("origin-%d", i), Region: "eu-west", Vantage: "proxy-1",
			At: now.Add(-time.Duration(3-i) * time.Minute), Window: 10 * time.Second,
			Requests: 1000 + i, Status5xx: 3 * i, ConnErrors: i, Timeouts: 2, P95: 87*ms + 500*time.Microsecond,
			Ejected: i == 2, Reason: map[bool]string{true: "5xx rate 25% > 20%"}[i == 2],
			Out: i >= 1, OutBy: map[int]string{1: "drained,verdict_down", 2: "passive_ejected"}[i],
		})
	}
	if err := s.PublishSignals(context.Background(), sigs); err != nil {
		t.Fatal(err)
	}
	flush(t, s)
	got, err := s.Signals(context.Background(), now.Add(-150*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Signals(since -150s): got %d, want 2: %+v", len(got), got)
	}
	for i, g := range got {
		w := sigs[i+1]
		g.At, w.At = g.At.Round(0).UTC(), w.At.Round(0).UTC()
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("signal %d:\ngot:  %+v\nwant: %+v", i, g, w)
		}
	}
}

func testJSONRoundTrip(t *testing.T, s Store) {
	v := sample("home", "origin-a", "eu-west", "canary-1", base().Add(-time.Second), 3)
	publish(t, s, v)
	got, err := s.Verdicts(context.Background(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d verdicts, want 1", len(got))
	}
	b, err := json.Marshal(got[0])
	if err != nil {
		t.Fatal(err)
	}
	var back reporting.Verdict
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	equalVerdicts(t, "store → JSON → Verdict", []reporting.Verdict{back}, []reporting.Verdict{v})
}

// testSince: Verdict.Since (when the pair entered its state) comes back
// from Verdicts and History as written, to the millisecond; a verdict
// without it (one of a version before it) reads back zero, never 1970,
// and replaces the since of the latest verdict. In JSON it is "since"
// in RFC 3339, left out when zero.
func testSince(t *testing.T, s Store) {
	ctx := context.Background()
	now := base()
	down := now.Add(-10*time.Minute - 417*ms)
	var vs []reporting.Verdict
	for i := range 3 {
		v := sample("home", "origin-a", "eu-west", "canary-1", now.Add(time.Duration(i-3)*time.Second), 3)
		v.Since = down
		vs = append(vs, v)
	}
	old := sample("api", "origin-a", "eu-west", "canary-1", now.Add(-time.Second), 3)
	old.Since = time.Time{}
	publish(t, s, append(vs, old)...)

	got, err := s.Verdicts(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sortVerdicts(got)
	if len(got) != 2 || got[0].Check != "api" || got[1].Check != "home" {
		t.Fatalf("Verdicts = %+v; want the latest of api and home", got)
	}
	if !got[0].Since.IsZero() {
		t.Errorf("a verdict written without since reads since %v (unix %d), want the zero time", got[0].Since, got[0].Since.Unix())
	}
	if !got[1].Since.Equal(down) {
		t.Errorf("latest verdict since %v, want %v", got[1].Since, down)
	}
	hist, err := s.History(ctx, reporting.HistoryQuery{Check: "home"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 {
		t.Fatalf("History = %d verdicts, want 3", len(hist))
	}
	for i, v := range hist {
		if !v.Since.Equal(down) {
			t.Errorf("history verdict %d since %v, want %v", i, v.Since, down)
		}
	}
	for _, v := range got {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		sv, has := m["since"]
		switch {
		case v.Since.IsZero() && has:
			t.Errorf("JSON of a verdict without since has since %v: %s", sv, b)
		case !v.Since.IsZero() && sv != down.Format(time.RFC3339Nano):
			t.Errorf("JSON since = %v, want %q", sv, down.Format(time.RFC3339Nano))
		}
	}

	// The next verdict of the series carries no since (a canary of an
	// older version): the latest says unknown, not the since before it.
	next := sample("home", "origin-a", "eu-west", "canary-1", now, 3)
	next.Since = time.Time{}
	publish(t, s, next)
	got, err = s.Verdicts(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		if v.Check == "home" && !v.Since.IsZero() {
			t.Errorf("latest verdict without since reads since %v, want zero", v.Since)
		}
	}
}

func testEmpty(t *testing.T, s Store) {
	ctx := context.Background()
	if v, err := s.Verdicts(ctx, 0); err != nil || len(v) != 0 {
		t.Fatalf("Verdicts on an empty store = %v, %v", v, err)
	}
	if v, err := s.History(ctx, reporting.HistoryQuery{}); err != nil || len(v) != 0 {
		t.Fatalf("History on an empty store = %v, %v", v, err)
	}
	if r, err := s.Rollups(ctx, reporting.HistoryQuery{}); err != nil || len(r) != 0 {
		t.Fatalf("Rollups on an empty store = %v, %v", r, err)
	}
	if g, err := s.Signals(ctx, time.Time{}); err != nil || len(g) != 0 {
		t.Fatalf("Signals on an empty store = %v, %v", g, err)
	}
	if err := s.Publish(ctx, nil); err != nil {
		t.Fatalf("Publish(nil) = %v", err)
	}
}

// testRollupTTFBTimeouts: the TTFB figures of a minute count the runs with a
// TTFB and the runs that timed out before their first byte (ranked above
// every TTFB, at their wait), and leave out the other failed runs (TTFB 0).
// 17 runs at 10..170 ms, 3 timed out after 400 ms, 4 refused: the p95 (rank
// 19 of 20) falls on a timed-out run; counting the refused runs' zeros
// would put it at 160 ms, leaving the timed-out runs out at 170 ms.
func testRollupTTFBTimeouts(t *testing.T, s Store) {
	m0 := time.Now().UTC().Truncate(time.Minute).Add(-5 * time.Minute)
	var vs []reporting.Verdict
	var sum time.Duration
	for i := range 24 {
		v := sample("slow", "origin-a", "eu-west", "canary-1", m0.Add(time.Duration(i)*2*time.Second+time.Second), i)
		v.OK, v.State, v.Cause, v.Err = true, reporting.StateHealthy, "", ""
		switch {
		case i < 17:
			v.TTFB = time.Duration(i+1) * 10 * ms
			sum += v.TTFB
		case i < 20:
			v.OK, v.Cause, v.State = false, reporting.CauseTimeout, reporting.StateUnhealthy
			v.TTFB, v.Duration, v.Transfer = 0, 400*ms+time.Duration(i)*ms, 0
		default:
			v.OK, v.Cause, v.State = false, "connect_refused", reporting.StateUnhealthy
			v.TTFB, v.Duration, v.Transfer = 0, ms, 0
		}
		vs = append(vs, v)
	}
	publish(t, s, vs...)
	got, err := s.Rollups(context.Background(), reporting.HistoryQuery{Check: "slow", From: m0, To: m0.Add(time.Minute - time.Nanosecond)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("Rollups: got %d rows, want 1: %+v", len(got), got)
	}
	g := got[0]
	if g.Total != 24 || g.Failed != 7 || g.TTFBRuns != 17 || g.TTFBTimeouts != 3 {
		t.Fatalf("rollup: total %d failed %d ttfb runs %d timeouts %d, want 24, 7, 17, 3", g.Total, g.Failed, g.TTFBRuns, g.TTFBTimeouts)
	}
	if !near(g.TTFBSum, sum, 0.0001) || !near(g.TTFBMax, 170*ms, 0.0001) {
		t.Fatalf("rollup TTFB sum/max: got %s/%s, want %s/170ms", g.TTFBSum, g.TTFBMax, sum)
	}
	if !g.TTFBP95TimedOut() || !near(g.TTFBP95, 418*ms, 0.02) {
		t.Fatalf("rollup TTFB p95: got %s (timed out %v), want a timed-out run's wait, 418ms ±2%%", g.TTFBP95, g.TTFBP95TimedOut())
	}
}

// testHistoryRunFilter: a History read with a Runs filter and a Limit
// returns the newest runs of that outcome even when many passing runs came
// after them (the check page's failure and slow lists, the alerter's
// failure cause), and the rows it returns decode whole.
func testHistoryRunFilter(t *testing.T, s Store) {
	ctx := context.Background()
	at := base().Add(-30 * time.Minute)
	v := func(i int, target string, ok bool, cause string) reporting.Verdict {
		return reporting.Verdict{Check: "home", Target: target, Region: "eu", State: reporting.StateHealthy, OK: ok, Cause: cause,
			Err: cause, TTFB: time.Duration(i+1) * time.Millisecond, At: at.Add(time.Duration(i) * time.Second)}
	}
	vs := []reporting.Verdict{
		v(0, "a", false, "connect_refused"), v(1, "a", false, reporting.CauseTTFB), v(2, "b", false, "status"),
		v(3, "b", false, reporting.CauseAgent), v(4, "a", false, reporting.CauseDuration),
	}
	for i := 5; i < 205; i++ {
		vs = append(vs, v(i, []string{"a", "b"}[i%2], true, ""))
	}
	publish(t, s, vs...)
	for _, c := range []struct {
		name string
		q    reporting.HistoryQuery
		want []string
	}{
		{"failed", reporting.HistoryQuery{Runs: reporting.FailedRuns}, []string{"a:connect_refused", "a:ttfb", "b:status", "b:agent", "a:duration"}},
		{"down, newest 2", reporting.HistoryQuery{Runs: reporting.DownRuns, Limit: 2}, []string{"b:status", "b:agent"}},
		{"down of a target", reporting.HistoryQuery{Target: "a", Runs: reporting.DownRuns, Limit: 30}, []string{"a:connect_refused"}},
		{"slow", reporting.HistoryQuery{Runs: reporting.SlowRuns, Limit: 30}, []string{"a:ttfb", "a:duration"}},
		{"newest 1 of all runs is a pass", reporting.HistoryQuery{Limit: 1}, []string{"a:"}},
	} {
		q := c.q
		q.Check = "home"
		got, err := s.History(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var out []string
		for _, g := range got {
			out = append(out, g.Target+":"+g.Cause)
			if !c.q.Runs.Keep(g) {
				t.Errorf("%s: %+v is not a run of the filter", c.name, g)
			}
		}
		if !slices.Equal(out, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, out, c.want)
		}
	}
	got, err := s.History(ctx, reporting.HistoryQuery{Check: "home", Target: "b", Runs: reporting.DownRuns, Limit: 1})
	if err != nil || len(got) != 1 || got[0].Err != reporting.CauseAgent || got[0].TTFB != 4*time.Millisecond || !got[0].At.Equal(at.Add(3*time.Second)) {
		t.Errorf("a filtered row: %+v, %v", got, err)
	}
}
