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
// FNV-1a hash of its key scaled to [0, interval). A thousand pairs with the
// same interval start spread evenly rather than all at once, and a restart
// keeps each pair's slot.
func spread(key string, interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return time.Duration(h.Sum64() % uint64(interval))
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
}

// first places the first run: the pair's hashed slot within one interval
// from now, plus jitter. Cron checks take the next cron time.
func (p *plan) first(key string, now time.Time) time.Time {
	if p.cron != nil {
		p.base = cronNext(p.cron, now)
	} else {
		p.base = now.Add(spread(key, p.interval))
	}
	return p.base.Add(jitter(p.jitter, p.interval))
}

// advance moves to the next regular slot after the one that just fired and
// returns the jittered time to run it. A pair that fell behind by more than
// one interval (a stalled process, a suspended machine) restarts from now
// rather than firing a burst of catch-up runs.
func (p *plan) advance(now time.Time) time.Time {
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
		p.base = now
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
