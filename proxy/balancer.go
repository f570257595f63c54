package proxy

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Balancer picks the origin for one try of a request. The pool passes the
// set of eligible origins as a bit mask over the pool's origin list (bit i =
// origin i): the available origins not tried yet, or, as a last resort, the
// unavailable ones not tried yet. Pick returns the chosen index, or -1 when
// eligible is 0. Implementations are safe for concurrent use.
type Balancer interface {
	Pick(r *http.Request, eligible uint64) int
}

var (
	_ Balancer = (*roundRobin)(nil)
	_ Balancer = (*leastConn)(nil)
	_ Balancer = (*ringHash)(nil)
	_ Balancer = (*ipHash)(nil)
	_ Balancer = (*first)(nil)
)

func newBalancer(cfg *PoolConfig, origins []*origin) Balancer {
	switch cfg.Policy {
	case PolicyLeastConn:
		return &leastConn{origins: origins, slowStart: cfg.SlowStart}
	case PolicyHash:
		return newRingHash(origins, cfg.hashKey, cfg.Hash.BoundedLoad)
	case PolicyIPHash:
		return &ipHash{origins: origins, seeds: originSeeds(origins)}
	case PolicyFirst:
		return first{}
	}
	return &roundRobin{origins: origins, cur: make([]int64, len(origins)), slowStart: cfg.SlowStart}
}

// roundRobin is nginx's smooth weighted round robin: every pick adds each
// eligible origin's effective weight to its current weight, takes the
// largest and subtracts the total from it. Slow start lowers the effective
// weight of a returning origin.
type roundRobin struct {
	origins   []*origin
	slowStart time.Duration
	mu        sync.Mutex
	cur       []int64
}

func (b *roundRobin) Pick(_ *http.Request, eligible uint64) int {
	if eligible == 0 {
		return -1
	}
	if eligible&(eligible-1) == 0 {
		return bits.TrailingZeros64(eligible)
	}
	now := time.Now().UnixNano()
	b.mu.Lock()
	best, total := -1, int64(0)
	for m := eligible; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		w := b.origins[i].weightAt(now, b.slowStart)
		b.cur[i] += w
		total += w
		if best < 0 || b.cur[i] > b.cur[best] {
			best = i
		}
	}
	b.cur[best] -= total
	b.mu.Unlock()
	return best
}

// inheritRoundRobin carries the smooth round robin's current weights over a
// reload, per origin URL, so the sequence goes on where it was: rebuilt from
// zero on every reload (a SIGHUP from a config manager every few seconds),
// it started over each time and an origin late in it could get nothing.
func inheritRoundRobin(b, prev Balancer, origins, prevOrigins []*origin) {
	rr, ok := b.(*roundRobin)
	prr, pok := prev.(*roundRobin)
	if !ok || !pok {
		return
	}
	byURL := map[string]int{}
	for j, o := range prevOrigins {
		byURL[o.url.String()] = j
	}
	prr.mu.Lock()
	defer prr.mu.Unlock()
	for i, o := range origins {
		if j, ok := byURL[o.url.String()]; ok {
			rr.cur[i] = prr.cur[j]
		}
	}
}

// ramp reports whether the origin's weight is ramping up under the pool's
// slow start at now (round_robin and least_conn only: the hash policies
// have none), when the ramp ends, and the effective weight's fraction of
// the configured one (weightAt's, 0.1 to 1, to three decimals). For GET /api/v1/origins.
func (o *origin) ramp(cfg *PoolConfig, now time.Time) (until time.Time, frac float64, ok bool) {
	if cfg.SlowStart <= 0 || cfg.Policy != PolicyRoundRobin && cfg.Policy != PolicyLeastConn {
		return time.Time{}, 0, false
	}
	r := o.returnedAt.Load()
	if r == 0 {
		return time.Time{}, 0, false
	}
	until = time.Unix(0, r).Add(cfg.SlowStart)
	if !now.Before(until) || now.UnixNano() < r {
		return time.Time{}, 0, false
	}
	frac = float64(o.weightAt(now.UnixNano(), cfg.SlowStart)) / float64(o.weight*1000)
	return until, math.Round(frac*1000) / 1000, true
}

// leastConn is power of two choices, weighted: two distinct eligible origins
// are drawn at random in proportion to their effective weight (slow start
// included) and compared on requests in flight per unit of effective
// weight. One wins outright only when, even with this request added, its
// load stays at or below the other's: (inflight_i+1)/w_i ≤ inflight_j/w_j.
// Otherwise the two are within one request of each other, a near tie (at
// low concurrency, the usual case; both idle is the exact one), and the
// first drawn wins, which makes the pick a weighted random choice: weights
// 1:2 get a third and two thirds of sequential requests, and an origin in
// slow start gets its ramped share instead of none (it loses every
// comparison on weight) or all it can hold (it wins every comparison on
// being idle). nginx's least_conn breaks ties by weighted round robin.
type leastConn struct {
	origins   []*origin
	slowStart time.Duration
}

func (b *leastConn) Pick(_ *http.Request, eligible uint64) int {
	n := bits.OnesCount64(eligible)
	switch n {
	case 0:
		return -1
	case 1:
		return bits.TrailingZeros64(eligible)
	}
	now := time.Now().UnixNano()
	var w [64]int64
	var total int64
	for m := eligible; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		w[i] = max(b.origins[i].weightAt(now, b.slowStart), 1)
		total += w[i]
	}
	i := weightedDraw(eligible, &w, total)
	j := weightedDraw(eligible&^(1<<i), &w, total-w[i])
	// Loads compared without division: x/w_i against y/w_j as x*w_j, y*w_i.
	ni, nj := b.origins[i].inflight.Load(), b.origins[j].inflight.Load()
	if (nj+1)*w[i] <= ni*w[j] {
		return j // j stays at or below i's load even with this request
	}
	return i // i does, or a near tie: the first drawn
}

// weightedDraw picks a set bit of m at random in proportion to w; total is
// the sum of w over m.
func weightedDraw(m uint64, w *[64]int64, total int64) int {
	r := rand.Int64N(total)
	i := -1
	for ; m != 0; m &= m - 1 {
		i = bits.TrailingZeros64(m)
		if r < w[i] {
			break
		}
		r -= w[i]
	}
	return i
}

// nthBit returns the index of the n-th (0-based) set bit of m.
func nthBit(m uint64, n int) int {
	for ; n > 0; n-- {
		m &= m - 1
	}
	return bits.TrailingZeros64(m)
}

// first picks the first eligible origin in configuration order (priority).
type first struct{}

func (first) Pick(_ *http.Request, eligible uint64) int {
	if eligible == 0 {
		return -1
	}
	return bits.TrailingZeros64(eligible)
}

// ringHash is a consistent hash ring (FNV-1a 64, 160 points per unit of
// weight up to 16 000 per origin) with bounded load: a key walks the ring
// from its point and takes the first eligible origin whose in-flight count
// is below BoundedLoad × the average in-flight count (+1). The same key maps
// to the same origin on every vigil instance with the same origin list.
type ringHash struct {
	origins []*origin
	key     hashKey
	bound   float64
	points  []uint64
	owner   []uint8
}

func newRingHash(origins []*origin, key hashKey, bound float64) *ringHash {
	type pt struct {
		h uint64
		o uint8
	}
	// 160 points per unit of weight, scaled down when the heaviest origin
	// would have more than 16000, so every weight (1..1000) keeps its
	// share: a fixed cap made weights above 100 all count as 100.
	maxW := 1
	for _, o := range origins {
		maxW = max(maxW, o.weight)
	}
	per := min(160.0, 16000.0/float64(maxW))
	var pts []pt
	for i, o := range origins {
		n := max(1, int(math.Round(per*float64(o.weight))))
		for k := 0; k < n; k++ {
			pts = append(pts, pt{hash64(o.url.Host + "-" + strconv.Itoa(k)), uint8(i)})
		}
	}
	sort.Slice(pts, func(a, b int) bool { return pts[a].h < pts[b].h })
	r := &ringHash{origins: origins, key: key, bound: bound}
	r.points = make([]uint64, len(pts))
	r.owner = make([]uint8, len(pts))
	for i, p := range pts {
		r.points[i], r.owner[i] = p.h, p.o
	}
	return r
}

func (b *ringHash) Pick(r *http.Request, eligible uint64) int {
	n := bits.OnesCount64(eligible)
	switch n {
	case 0:
		return -1
	case 1:
		return bits.TrailingZeros64(eligible)
	}
	var w [64]int64
	var total, weights int64
	for m := eligible; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		total += b.origins[i].inflight.Load()
		w[i] = int64(b.origins[i].weight)
		weights += w[i]
	}
	k, ok := requestKey(r, b.key)
	if !ok {
		// No key on this request: spread by weight (a random point on
		// the ring, as Envoy does).
		return weightedDraw(eligible, &w, weights)
	}
	// Bounded load as Envoy's hash_balance_factor: the pool's slots are
	// ⌈factor × (in flight + 1)⌉, an origin's its share of them by weight
	// (at least 1), and an origin takes the key while its own in-flight
	// requests are at most its slots.
	slots := math.Ceil(b.bound * float64(total+1))
	limit := func(i int) int64 {
		return max(int64(math.Ceil(slots*float64(w[i])/float64(weights))), 1)
	}
	h := hash64(k)
	start := sort.Search(len(b.points), func(i int) bool { return b.points[i] >= h })
	fallback := -1
	for step := 0; step < len(b.points); step++ {
		i := int(b.owner[(start+step)%len(b.points)])
		if eligible&(1<<i) == 0 {
			continue
		}
		if fallback < 0 {
			fallback = i
		}
		if b.origins[i].inflight.Load() <= limit(i) {
			return i
		}
	}
	return fallback
}

// ipHash is weighted rendezvous hashing on the client IP: every origin scores
// the IP and the best eligible score wins, so a client keeps its origin while
// that origin stays eligible and only its clients move when it leaves.
type ipHash struct {
	origins []*origin
	seeds   []uint64
}

func originSeeds(origins []*origin) []uint64 {
	s := make([]uint64, len(origins))
	for i, o := range origins {
		s[i] = hash64(o.url.Host)
	}
	return s
}

func (b *ipHash) Pick(r *http.Request, eligible uint64) int {
	if eligible == 0 {
		return -1
	}
	if eligible&(eligible-1) == 0 {
		return bits.TrailingZeros64(eligible)
	}
	h := hash64(clientIP(r))
	best, bestScore := -1, math.Inf(-1)
	for m := eligible; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		x := mix64(h ^ b.seeds[i])
		u := (float64(x>>11) + 0.5) / (1 << 53) // (0,1)
		score := -float64(b.origins[i].weight) / math.Log(u)
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

func requestKey(r *http.Request, k hashKey) (string, bool) {
	switch k.kind {
	case 1:
		v := r.Header.Get(k.name)
		return v, v != ""
	case 2:
		c, err := r.Cookie(k.name)
		if err != nil || c.Value == "" {
			return "", false
		}
		return c.Value, true
	case 3:
		return r.URL.Path, true
	case 5:
		// The target as the client sent it, query included (nginx's
		// $request_uri, HAProxy's balance uri whole); an absolute-form
		// target's path and query.
		if u := r.RequestURI; u != "" && u[0] == '/' {
			return u, true
		}
		return r.URL.RequestURI(), true
	case 6:
		// The request's host: Go moves Host out of the header map.
		h := hostOf(r.Host)
		return h, h != ""
	}
	return clientIP(r), true
}

// hash64 is FNV-1a 64 followed by mix64.
func hash64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix64(h)
}

// mix64 is the splitmix64 finalizer (spreads FNV's low-entropy high bits).
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// lastResort follows a pool's last-resort incidents: the time from a
// request that finds no origin to send its first try to (every origin out
// of rotation or full: pool.eligible offers only origins taken out) to the
// first request an available origin takes again. Envoy counts such picks
// as lb_healthy_panic; HAProxy logs "has no server available!".
type lastResort struct {
	since  atomic.Int64       // unix nanoseconds the open incident began; 0: none
	served atomic.Int64       // requests sent in last-resort mode since then
	total  prometheus.Counter // vigil_proxy_last_resort_total{pool}; nil: not counted
}

// first notes where a request's first try goes: fromAvail false (the last
// resort) counts the request in total and, when no incident is open, opens
// one with a warning naming why each origin is out; fromAvail true closes
// an open incident (logged with its length and requests). When none is
// open this is one atomic load: it runs on every request.
func (lr *lastResort) first(pl *pool, fromAvail bool) {
	if fromAvail {
		if lr.since.Load() != 0 {
			lr.end(pl, time.Now())
		}
		return
	}
	if lr.total != nil {
		lr.total.Inc()
	}
	lr.served.Add(1)
	now := time.Now()
	if lr.since.Load() != 0 || !lr.since.CompareAndSwap(0, now.UnixNano()) {
		return
	}
	pl.log.Warn("proxy: pool has no available origin; requests go to origins out of rotation as a last resort",
		"pool", pl.name, "origins", outSummary(pl.origins))
}

// end closes the open incident, if any, and logs it.
func (lr *lastResort) end(pl *pool, now time.Time) {
	s := lr.since.Swap(0)
	if s == 0 {
		return
	}
	pl.log.Info("proxy: pool has an available origin again; last resort over", "pool", pl.name,
		"lasted", now.Sub(time.Unix(0, s)).Round(time.Millisecond).String(), "requests", lr.served.Swap(0))
}

// outSummary says why each origin is out of rotation, for the last-resort
// warning: "o0: verdict_down; o1: passive_ejected,drained; o2: full".
func outSummary(origins []*origin) string {
	parts := make([]string, 0, len(origins))
	for _, o := range origins {
		why := o.stillOut()
		if o.full() {
			why = strings.TrimPrefix(why+",full", ",")
		}
		if why != "" {
			parts = append(parts, o.name+": "+why)
		}
	}
	return strings.Join(parts, "; ")
}
