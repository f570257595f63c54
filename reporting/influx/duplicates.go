package influx

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/influxdata/influxdb-client-go/v2/api/query"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Duplicate canaries (see reporting.DuplicateWatch). InfluxDB is the store
// many canaries share, so it is where two of them with the same
// agent.region and agent.vantage meet: Verdicts marks the series two
// instances write at the same time, and a canary publishing here checks
// its own region and vantage at its first publish and then every
// reporting.DuplicateWindow, so a `vigil canary` no one reads from says so
// too.

var _ reporting.WriterSource = (*Store)(nil)

// Writers returns, per series and canary instance, the first and last
// time it wrote within reporting.DuplicateWindowFor(maxAge) of now (and
// as far ahead, for canaries with fast clocks). Flux:
//
//	from(bucket) |> range(start: now-window, stop: now+window)
//	  |> filter(fn: (r) => r._measurement == "vigil_verdict" and r._field == "instance")
//	  |> keep(columns: ["_time", "_value", "check", "target", "region", "vantage"])
//
// Its cost follows the runs in the window (two minutes at most).
func (s *Store) Writers(ctx context.Context, maxAge time.Duration) ([]reporting.SeriesWriter, error) {
	ws, err := s.writers(ctx, maxAge, "", "")
	if err != nil {
		return nil, s.readError("writers", err)
	}
	return ws, nil
}

// writers is Writers, for one region and vantage when region is not "".
func (s *Store) writers(ctx context.Context, maxAge time.Duration, region, vantage string) ([]reporting.SeriesWriter, error) {
	win := reporting.DuplicateWindowFor(maxAge)
	now := time.Now()
	filter := ` and r._field == "` + FieldInstance + `"`
	if region != "" {
		filter += ` and r.region == ` + fluxString(region) + ` and r.vantage == ` + fluxString(vantage)
	}
	// The first and last times are taken here: group() by instance and
	// first() + last() in Flux take twice as long on 1.8.
	q := s.from(now.Add(-win), now.Add(win+time.Second)) +
		` |> filter(fn: (r) => r._measurement == "` + MeasurementVerdict + `"` + filter + `)` +
		` |> keep(columns: ["_time", "_value", "check", "target", "region", "vantage"])`
	type key struct{ check, target, region, vantage, instance string }
	acc := map[key]*reporting.SeriesWriter{}
	err := s.each(ctx, q, func(rec *query.FluxRecord) error {
		inst, _ := rec.Value().(string)
		if inst == "" {
			return nil
		}
		k := key{str(rec, "check"), str(rec, "target"), str(rec, "region"), str(rec, "vantage"), inst}
		t := rec.Time().UTC()
		w := acc[k]
		if w == nil {
			acc[k] = &reporting.SeriesWriter{Check: k.check, Target: k.target, Region: k.region, Vantage: k.vantage,
				Instance: inst, First: t, Last: t}
			return nil
		}
		if t.Before(w.First) {
			w.First = t
		}
		if t.After(w.Last) {
			w.Last = t
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]reporting.SeriesWriter, 0, len(acc))
	for _, w := range acc {
		out = append(out, *w)
	}
	return out, nil
}

// dupRefresh is the least time between two reads of the instances
// (Writers) for Verdicts' marks (a variable for tests).
var dupRefresh = 30 * time.Second

// dupCache is the duplicates Verdicts marks, found in the background.
type dupCache struct {
	mu      sync.Mutex
	ds      []reporting.Duplicate
	at      time.Time // when the last read began; zero: none yet
	running bool
}

// markDuplicates is Verdicts' last step: the series two instances write at
// the same time are marked. They come from a read of the instances of the
// last reporting.DuplicateWindow made in the background at most every
// dupRefresh, which also reports them (the warning, the gauge): it reads
// every run of the window, which costs more than Verdicts' last() (about
// 0.35 s for 1,000 series run every 5 s on 1.8), so the proxy's poll does
// not wait for it and pays for it at most every dupRefresh. The first
// Verdicts after Open marks nothing yet. A failed read keeps the last
// marks (it is counted in the read health like any other).
func (s *Store) markDuplicates(vs []reporting.Verdict) []reporting.Verdict {
	c := &s.dupc
	c.mu.Lock()
	ds := c.ds
	if !c.running && (c.at.IsZero() || time.Since(c.at) >= dupRefresh) && !s.closed.Load() {
		c.running, c.at = true, time.Now()
		go s.refreshDuplicates()
	}
	c.mu.Unlock()
	return reporting.MarkDuplicates(vs, ds)
}

// refreshDuplicates reads the instances for markDuplicates and reports
// what it finds to Options.Duplicates.
func (s *Store) refreshDuplicates() {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("influx: duplicate-canary read panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
		s.dupc.mu.Lock()
		s.dupc.running = false
		s.dupc.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	ws, err := s.writers(ctx, 0, "", "")
	if err != nil {
		return
	}
	ds := reporting.FindDuplicates(ws)
	s.dups.Observe("store.influxdb", ds)
	s.dupc.mu.Lock()
	s.dupc.ds = ds
	s.dupc.mu.Unlock()
}

// ownSeries is what this process published: per series its instance and
// the At of its first and last verdicts here, for the own-writes check.
type ownSeries struct {
	mu      sync.Mutex
	series  map[string]reporting.SeriesWriter // by Verdict.Key
	started bool
}

// noteOwn records the published verdicts' series and, at the first one
// carrying an instance, starts ownLoop.
func (s *Store) noteOwn(vs []reporting.Verdict) {
	s.own.mu.Lock()
	defer s.own.mu.Unlock()
	for i := range vs {
		v := &vs[i]
		if v.Instance == "" {
			continue
		}
		if s.own.series == nil {
			s.own.series = map[string]reporting.SeriesWriter{}
		}
		k := v.Key()
		at := v.At
		if at.IsZero() {
			at = time.Now()
		}
		if w, ok := s.own.series[k]; ok && w.Instance == v.Instance {
			if at.After(w.Last) {
				w.Last = at
				s.own.series[k] = w
			}
			continue
		}
		s.own.series[k] = reporting.SeriesWriter{Check: v.Check, Target: v.Target, Region: v.Region,
			Vantage: v.Vantage, Instance: v.Instance, First: at, Last: at}
	}
	if !s.own.started && len(s.own.series) > 0 {
		s.own.started = true
		go s.ownLoop()
	}
}

// How often ownLoop looks: every ownCheckSoon during the first
// ownCheckEvery (a canary still writing beside this one has written since
// its start by then), then every ownCheckEvery. Variables for tests.
var (
	ownCheckSoon  = 10 * time.Second
	ownCheckEvery = reporting.DuplicateWindow
)

// ownLoop checks this canary's own region and vantage at its first
// publish, then on ownCheckSoon and ownCheckEvery, until Close.
func (s *Store) ownLoop() {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("influx: duplicate-canary check panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	began := time.Now()
	for {
		s.checkOwn(ctx)
		wait := ownCheckEvery
		if time.Since(began) < ownCheckEvery {
			wait = ownCheckSoon
		}
		select {
		case <-s.stop:
			return
		case <-time.After(wait):
		}
	}
}

// checkOwn reads the instances that wrote this canary's region and vantage
// lately and reports those that write one of its series while it does:
// its own writes count from the first to the last At it published, whether
// or not the outbox delivered them yet. An instance that stopped before this one
// started (a restart, a replaced pod) is no duplicate.
func (s *Store) checkOwn(ctx context.Context) {
	s.own.mu.Lock()
	mine := make([]reporting.SeriesWriter, 0, len(s.own.series))
	for _, w := range s.own.series {
		mine = append(mine, w)
	}
	s.own.mu.Unlock()
	type rv struct{ region, vantage string }
	places := map[rv]bool{}
	for i := range mine {
		places[rv{mine[i].Region, mine[i].Vantage}] = true
	}
	ws := mine
	for p := range places {
		got, err := s.writers(ctx, 0, p.region, p.vantage)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Debug("influx: duplicate-canary check: read failed", "err", s.ExplainError(err))
			}
			return
		}
		ws = append(ws, got...)
	}
	ours := map[string]bool{}
	for _, w := range mine {
		ours[w.Instance] = true
	}
	var ds []reporting.Duplicate
	for _, d := range reporting.FindDuplicates(ws) {
		if slices.ContainsFunc(d.Instances, func(i string) bool { return ours[i] }) {
			ds = append(ds, d)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].Check+ds[i].Target < ds[j].Check+ds[j].Target })
	s.dups.Observe("store.influxdb (this canary's writes)", ds)
}
