package alerting

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// fakeClock is the tests' clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *fakeClock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// memStore is an in-memory HistorySource that only shows verdicts whose At
// is not after the clock, so whole histories can be loaded up front and
// revealed as the fake clock advances. Rollups are computed from the
// stored verdicts.
type memStore struct {
	clock func() time.Time
	mu    sync.Mutex
	vs    []reporting.Verdict // sorted by At
	keys  map[string]bool     // every series key stored
	err   error
	// rolls caches the rollups of every stored verdict, by minute; only
	// the minute holding now is recomputed from the visible verdicts.
	rolls []reporting.Rollup
}

var _ reporting.HistorySource = (*memStore)(nil)

func (m *memStore) add(vs ...reporting.Verdict) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.vs = append(m.vs, vs...)
	sort.SliceStable(m.vs, func(i, j int) bool { return m.vs[i].At.Before(m.vs[j].At) })
	if m.keys == nil {
		m.keys = map[string]bool{}
	}
	for _, v := range vs {
		m.keys[v.Key()] = true
	}
	m.rolls = nil
}

// since returns the visible verdicts with At at or after from.
func (m *memStore) since(from time.Time) []reporting.Verdict {
	vs := m.visible()
	i := sort.Search(len(vs), func(i int) bool { return !vs[i].At.Before(from) })
	return vs[i:]
}

// visible returns the verdicts up to now (sorted by At).
func (m *memStore) visible() []reporting.Verdict {
	now := m.clock()
	i := sort.Search(len(m.vs), func(i int) bool { return m.vs[i].At.After(now) })
	return m.vs[:i]
}

func (m *memStore) Verdicts(_ context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	now := m.clock()
	latest := map[string]reporting.Verdict{}
	vis := m.visible()
	// newest first, until every stored series has been seen
	for i := len(vis) - 1; i >= 0 && len(latest) < len(m.keys); i-- {
		if _, ok := latest[vis[i].Key()]; !ok {
			latest[vis[i].Key()] = vis[i]
		}
	}
	var out []reporting.Verdict
	for _, v := range latest {
		if maxAge == 0 || now.Sub(v.At) <= maxAge {
			out = append(out, v)
		}
	}
	return out, nil
}

func match(q reporting.HistoryQuery, v reporting.Verdict, now time.Time) bool {
	to := q.To
	if to.IsZero() {
		to = now
	}
	return (q.Check == "" || q.Check == v.Check) && (q.Target == "" || q.Target == v.Target) &&
		(q.Region == "" || q.Region == v.Region) && !v.At.Before(q.From) && !v.At.After(to)
}

func (m *memStore) History(_ context.Context, q reporting.HistoryQuery) ([]reporting.Verdict, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	var out []reporting.Verdict
	now := m.clock()
	for _, v := range m.since(q.From) {
		if match(q, v, now) {
			out = append(out, v)
		}
	}
	return out, nil
}

func (m *memStore) Rollups(_ context.Context, q reporting.HistoryQuery) ([]reporting.Rollup, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	now := m.clock()
	if m.rolls == nil {
		m.rolls = rollupsOf(m.vs, reporting.HistoryQuery{}, m.vs[len(m.vs)-1].At)
		sort.SliceStable(m.rolls, func(i, j int) bool { return m.rolls[i].Minute.Before(m.rolls[j].Minute) })
	}
	from := q.From.Truncate(time.Minute)
	cur := now.UTC().Truncate(time.Minute)
	i := sort.Search(len(m.rolls), func(i int) bool { return !m.rolls[i].Minute.Before(from) })
	out := make([]reporting.Rollup, 0, len(m.rolls)-i+8)
	for ; i < len(m.rolls) && m.rolls[i].Minute.Before(cur); i++ {
		r := m.rolls[i]
		if (q.Check == "" || q.Check == r.Check) && (q.Target == "" || q.Target == r.Target) &&
			(q.Region == "" || q.Region == r.Region) && (q.To.IsZero() || !r.Minute.After(q.To)) {
			out = append(out, r)
		}
	}
	// the minute holding now, from the verdicts visible so far
	if !cur.Before(from) {
		q.From = cur
		out = append(out, rollupsOf(m.visible(), q, now)...)
	}
	return out, nil
}

// rollupsOf computes the per-minute rollups of the verdicts in vs (sorted
// by At) that match q.
func rollupsOf(vs []reporting.Verdict, q reporting.HistoryQuery, now time.Time) []reporting.Rollup {
	q.From = q.From.Truncate(time.Minute)
	i := sort.Search(len(vs), func(i int) bool { return !vs[i].At.Before(q.From) })
	vs = vs[i:]
	type key struct{ check, target, region string }
	cur := map[key]int{} // the series' latest rollup in out
	var out []reporting.Rollup
	var ttfbs, waits [][]time.Duration
	for _, v := range vs {
		if !match(q, v, now) {
			continue
		}
		k := key{v.Check, v.Target, v.Region}
		minute := v.At.UTC().Truncate(time.Minute)
		i, ok := cur[k]
		if !ok || !out[i].Minute.Equal(minute) {
			out = append(out, reporting.Rollup{Check: v.Check, Target: v.Target, Region: v.Region, Minute: minute})
			ttfbs, waits = append(ttfbs, nil), append(waits, nil)
			i = len(out) - 1
			cur[k] = i
		}
		r := &out[i]
		r.Total++
		if v.Unavailable() {
			r.Failed++
		}
		if v.State == reporting.StateUnhealthy {
			r.Unhealthy++
		}
		switch d, timedOut, ok := v.TTFBSample(); {
		case ok && timedOut:
			r.TTFBTimeouts++
			waits[i] = append(waits[i], d)
		case ok:
			r.TTFBRuns++
			r.TTFBSum += d
			r.TTFBMax = max(r.TTFBMax, d)
			ttfbs[i] = append(ttfbs[i], d)
		}
	}
	for i := range out {
		out[i].TTFBP95 = reporting.TTFBPercentileOf(ttfbs[i], waits[i], 0.95).D
	}
	return out
}
