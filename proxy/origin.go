package proxy

import (
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Flags an origin carries, one per source that can take it out. An origin is
// available when no flag is set; it returns only when every flag that was set
// has cleared.
const (
	flagDrained = 1 << iota // admin drain
	flagVerdict             // canary verdicts (quorum of regions unhealthy)
	flagPassive             // passive detector on live traffic
)

// origin is the runtime state of one origin of one pool. Hot-path fields are
// atomic; the mutex guards the explanatory fields read by the admin API.
type origin struct {
	idx    int
	name   string // target name or host:port
	target string // verdict Target, may be ""
	url    *url.URL
	weight int
	// maxConns caps requests in flight (0: no cap): the "full" condition.
	maxConns int64

	flags atomic.Uint32
	// inflight counts the requests at this origin now. It is shared with
	// the same origin (same pool, same URL) of the previous and next
	// configuration generations: a request started before a reload ends
	// against the counter the new generation reads (max_conns, least_conn).
	inflight *atomic.Int64
	// link is shared by the generations of this origin (see originLink).
	link       *originLink
	returnedAt atomic.Int64 // unix nanos of the last return to service (slow start)

	// h1 is the fast path's connection pool, nil for https origins; kept
	// across reloads while the address and the pool's dial settings are.
	h1      *h1Pool
	passive *detector
	stats   *signalStats
	m       *originMetrics

	mu          sync.Mutex
	why         [3]string    // per flag bit: reason
	since       [3]time.Time // per flag bit: when set
	ejections   int          // passive ejection count (decays while healthy)
	ejectUntil  time.Time    // end of the current passive ejection
	ejectDetail string       // the numbers that triggered the current (last) passive ejection
	probeFails  int          // failed return probes since the ejection time was up
	probeLogged time.Time    // when a failed return probe was last logged
	drainedBy   string       // who drained it (admin ?by= or address), while drained
	lastDecay   time.Time
	verdictSeen string // verdict reason while capped by max_ejected
	passiveKept string // passive rule and detail while max_ejected refuses the ejection
	tookSlot    string // while verdict-down: the passively ejected origin it returned early to fit max_ejected
}

// originLink is shared by the generations of one origin across reloads
// (same pool and URL, or a renamed pool's ejected origin): a return probe
// (passive.return_probe) that ends after a reload applies its result to the
// generation in service then, not to the one that sent it.
type originLink struct {
	probing atomic.Bool // a return probe is out
	cur     atomic.Pointer[origin]
	pool    atomic.Pointer[pool]
	gone    atomic.Bool // a reload removed the origin
}

// Available is the one predicate every balancer uses:
// !drained && !verdictDown && !passiveEjected.
func (o *origin) Available() bool { return o.flags.Load() == 0 }

// full reports whether the origin is at its max_conns. Full is a passing,
// per-request condition rather than a flag: it keeps new tries away (see
// pool.eligible) but ejects nothing and does not count toward max_ejected.
func (o *origin) full() bool { return o.maxConns > 0 && o.inflight.Load() >= o.maxConns }

// set turns a flag on; it reports whether this call made the transition.
func (o *origin) set(flag uint32, why string, now time.Time) bool {
	for {
		old := o.flags.Load()
		if old&flag != 0 {
			return false
		}
		if o.flags.CompareAndSwap(old, old|flag) {
			o.mu.Lock()
			b := bit(flag)
			o.why[b], o.since[b] = why, now
			o.mu.Unlock()
			return true
		}
	}
}

// clear turns a flag off; it reports whether this call made the transition.
// When the origin becomes available again its slow start begins.
func (o *origin) clear(flag uint32, now time.Time) bool {
	for {
		old := o.flags.Load()
		if old&flag == 0 {
			return false
		}
		if o.flags.CompareAndSwap(old, old&^flag) {
			o.mu.Lock()
			b := bit(flag)
			o.why[b], o.since[b] = "", now
			o.mu.Unlock()
			if old&^flag == 0 {
				o.returnedAt.Store(now.UnixNano())
			}
			return true
		}
	}
}

func (o *origin) has(flag uint32) bool { return o.flags.Load()&flag != 0 }

// stillOut names the flags that keep the origin out of service, for logs:
// "drained,verdict_down,passive_ejected" (the API's field names).
func (o *origin) stillOut() string {
	var out []string
	for _, f := range []struct {
		flag uint32
		name string
	}{{flagDrained, "drained"}, {flagVerdict, "verdict_down"}, {flagPassive, "passive_ejected"}} {
		if o.has(f.flag) {
			out = append(out, f.name)
		}
	}
	return strings.Join(out, ",")
}

func bit(flag uint32) int {
	switch flag {
	case flagDrained:
		return 0
	case flagVerdict:
		return 1
	}
	return 2
}

// weightAt is the effective weight at now (unix nanos), ramped during slow
// start from 10% to 100% of the configured weight. Scaled by 1000.
func (o *origin) weightAt(now int64, slowStart time.Duration) int64 {
	w := int64(o.weight) * 1000
	if slowStart <= 0 {
		return w
	}
	r := o.returnedAt.Load()
	if r == 0 {
		return w
	}
	el := now - r
	if el >= int64(slowStart) || el < 0 {
		return w
	}
	f := float64(el) / float64(slowStart)
	if f < 0.1 {
		f = 0.1
	}
	return int64(float64(w) * f)
}
