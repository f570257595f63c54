package canary

import (
	"container/heap"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/robfig/cron/v3"
)

// The scheduler is one goroutine with a min-heap of pairs ordered by their
// next planned run. It pops every due pair, starts its run in a new
// goroutine (which waits for the concurrency semaphore) and plans the next
// run; between pops it sleeps on one timer. Idle pairs cost one heap slot
// and no goroutine, and a reload or an adaptive re-check moves a pair with
// one heap.Fix. (10,000 pairs at a 10 s interval: see TestBenchScale10k.)

// timeQueue is a min-heap of entries by next.
type timeQueue []*entry

func (q timeQueue) Len() int           { return len(q) }
func (q timeQueue) Less(i, j int) bool { return q[i].next.Before(q[j].next) }
func (q timeQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx = i
	q[j].idx = j
}
func (q *timeQueue) Push(x any) {
	e := x.(*entry)
	e.idx = len(*q)
	*q = append(*q, e)
}
func (q *timeQueue) Pop() any {
	old := *q
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	e.idx = -1
	*q = old[:n-1]
	return e
}

// spread returns the pair's deterministic offset within an interval: the
// FNV-1a hash of its key scaled to [0, interval). A pair's interval slots
// are the wall-clock times t with (t − Unix epoch) mod interval == spread
// (see slotAfter): a thousand pairs with the same interval run spread
// evenly rather than all at once, and every process that runs the pair —
// the same one after a restart, or a new one after a deploy — puts it on
// the same slots.
func spread(key string, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(interval))
}

// slotAfter returns the pair's first interval slot at or after now: the
// earliest t ≥ now with (t − Unix epoch) mod interval == spread(key,
// interval). Slots count from the epoch, not from process start, so a
// restart neither moves a pair's runs nor, restarting more often than the
// interval, starves or repeats them.
func slotAfter(key string, interval time.Duration, now time.Time) time.Time {
	if interval <= 0 {
		return now
	}
	phase := time.Duration(now.UnixNano() % int64(interval))
	if phase < 0 { // before 1970
		phase += interval
	}
	d := spread(key, interval) - phase
	if d < 0 {
		d += interval
	}
	return now.Add(d)
}

// jitter returns a random delay in [0, frac × interval).
func jitter(frac float64, interval time.Duration) time.Duration {
	if frac <= 0 || interval <= 0 {
		return 0
	}
	n := int64(frac * float64(interval))
	if n <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(n))
}

// plan is one pair's schedule: the regular slot it is on and its jitter.
type plan struct {
	interval time.Duration // regular interval (adaptive may stretch it: eff)
	eff      time.Duration // effective interval for the next slot
	cron     cron.Schedule // nil for interval checks
	jitter   float64       // fraction of the interval
	base     time.Time     // the current regular slot (before jitter)
	regular  time.Time     // the next regular run when a confirm run was put before it
	// gap: while confirm runs are in play, the least time between the
	// start of one run and the next (the confirm delay; see advance).
	gap time.Duration
	// resumed: the next run is the restart's catch-up run for the slot
	// before (resume). fireDue takes it to the run (entry.deferNext).
	resumed bool
}

// first places the first run: the pair's next interval slot at or after
// now (slotAfter), plus jitter. Cron checks take the next cron time.
func (p *plan) first(key string, now time.Time) time.Time {
	if p.cron != nil {
		p.base = cronNext(p.cron, now)
	} else {
		p.base = slotAfter(key, p.interval, now)
	}
	return p.base.Add(jitter(p.jitter, p.interval))
}

// resume corrects the first run of a pair after a restart, given
// when the pair's last stored run started (zero: none stored). first put
// the pair on its next slot; the slot before it, prev, was served if the
// last run started at or after prev. If it was not, prev's run is made now
// instead of being lost, provided less than half an interval has passed
// since prev (else the next slot is near) and either
//
//   - prev's jitter window is still open (the process stopped between prev
//     and its jittered run): the run comes within the rest of the window,
//     where it would have come anyway; or
//   - the last stored run served the slot before prev, so only prev fell
//     into the restart (a crash loop, a deploy): the run comes within one
//     jitter window from now.
//
// A pair with no stored run, or one down for longer (more slots missed),
// runs at its next slot, as on a first start: the start does not become a
// burst of catch-up runs. A cron pair catches up the same way (resumeCron).
// Then the pair continues on its next slot; if the
// catch-up run is still going then (it started late in the slot, and a run
// lasts up to its timeout), that slot's run starts right after it instead
// of being skipped (entry.deferNext). It returns the time of the first run
// and whether it changed.
func (p *plan) resume(lastStart, now time.Time) (time.Time, bool) {
	if p.cron != nil {
		return p.resumeCron(lastStart, now)
	}
	if p.interval <= 0 {
		return time.Time{}, false
	}
	prev := p.base.Add(-p.interval)
	if !lastStart.Before(prev) || now.Before(prev) || now.Sub(prev) >= p.interval/2 {
		return time.Time{}, false
	}
	var at time.Time
	if end := prev.Add(time.Duration(p.jitter * float64(p.interval))); now.Before(end) {
		at = now.Add(time.Duration(rand.Int64N(int64(end.Sub(now)))))
	} else if !lastStart.IsZero() && !lastStart.Before(prev.Add(-p.interval)) {
		at = now.Add(jitter(p.jitter, p.interval))
	} else {
		return time.Time{}, false
	}
	p.base = prev
	p.resumed = true
	return at, true
}

// resumeCron is resume for a cron pair: prev, the first firing after the
// last stored run started, is the one the restart missed when it came
// before the next firing first planned (p.base). Its run is made now,
// within one jitter window, provided it is the only firing missed (the
// stored run served the firing before it) and less than half the gap
// between prev and the next firing has passed (else the next firing is
// near). A deploy that spans 09:00 runs a "0 9 * * *" check at start
// instead of losing the day's run. With no stored run the pair waits for
// its next firing.
func (p *plan) resumeCron(lastStart, now time.Time) (time.Time, bool) {
	if lastStart.IsZero() || p.base.IsZero() {
		return time.Time{}, false
	}
	prev := p.cron.Next(lastStart)
	if prev.IsZero() || !prev.Before(p.base) || now.Before(prev) || !p.cron.Next(prev).Equal(p.base) ||
		now.Sub(prev) >= p.base.Sub(prev)/2 {
		return time.Time{}, false
	}
	p.base = prev
	p.resumed = true
	return now.Add(jitter(p.jitter, p.interval)), true
}

// advance moves to the next regular slot after the one that just fired and
// returns the jittered time to run it. A pair that fell behind by more than
// one interval (a stalled process, a suspended machine) goes on from its
// first slot after now rather than firing a burst of catch-up runs.
//
// After a confirm run (reschedule set gap to the confirm delay) a regular
// run that would come less than gap after the run firing now waits until
// gap has passed: a confirm run pulled forward to just before the pair's
// jittered slot would otherwise probe the origin twice within moments
// (the same rule as the catch-up's, but one that only waits: the slot's run
// is late, not skipped, so the longest wait between runs stays interval +
// jitter, which expire_after and verdicts.max_age are sized to). The
// following slots stay on the pair's grid; gap ends with the first slot
// far enough away.
func (p *plan) advance(now time.Time) time.Time {
	next := p.nextRun(now)
	if p.gap > 0 {
		if next.Sub(now) < p.gap {
			return now.Add(p.gap)
		}
		p.gap = 0
	}
	return next
}

// nextRun is advance without the confirm gap.
func (p *plan) nextRun(now time.Time) time.Time {
	if !p.regular.IsZero() {
		// A confirm run fired; the regular slot planned before it stays.
		r := p.regular
		p.regular = time.Time{}
		if r.After(now) {
			return r
		}
	}
	if p.cron != nil {
		p.base = cronNext(p.cron, now)
		return p.base.Add(jitter(p.jitter, p.interval))
	}
	eff := p.eff
	if eff <= 0 {
		eff = p.interval
	}
	p.base = p.base.Add(eff)
	if p.base.Before(now.Add(-p.interval)) {
		// The run that just fired was the catch-up; the next one is the
		// pair's first slot after now (slots stay on the wall-clock grid)
		// that is at least half an interval away: the slot right behind
		// the catch-up would probe the origin twice within moments.
		p.base = p.base.Add((now.Sub(p.base)/p.interval + 1) * p.interval)
		if p.base.Sub(now) < p.interval/2 {
			p.base = p.base.Add(p.interval)
		}
	}
	return p.base.Add(jitter(p.jitter, p.interval))
}

// never stands for "no further run": a cron schedule that matches no time in
// the next five years (robfig/cron returns the zero time) parks its pair.
const never = 100 * 365 * 24 * time.Hour

func cronNext(s cron.Schedule, now time.Time) time.Time {
	if t := s.Next(now); !t.IsZero() {
		return t
	}
	return now.Add(never)
}

// fix moves e after its next changed.
func (q *timeQueue) fix(e *entry) {
	if e.idx >= 0 {
		heap.Fix(q, e.idx)
	}
}
