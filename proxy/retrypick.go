package proxy

import (
	"math/bits"
	"net/http"
	"time"
)

// retryPicker is a Balancer that picks a retry's origin its own way, given
// the origins tried already (a bit mask as eligible is).
type retryPicker interface {
	PickRetry(r *http.Request, eligible, tried uint64) int
}

// pickTry picks the origin of one try: the balancer's Pick for the first,
// its PickRetry (when it has one) for a retry.
func pickTry(b Balancer, r *http.Request, eligible, tried uint64) int {
	if rp, ok := b.(retryPicker); ok && tried != 0 {
		return rp.PickRetry(r, eligible, tried)
	}
	return b.Pick(r, eligible)
}

// spread keeps the origins of eligible that lie in the farther half from
// the origins tried: each origin's distance is its circular distance in
// the pool's configuration order (of n origins) to the nearest one tried,
// and those at least half the largest such distance are kept. Origins
// listed next to each other often fail together (a rack, a zone, the
// numbered hosts of one switch): a retry that went to the next origin in
// order, as round robin's sequence does, could spend every try on one
// outage. Of 20 origins with one tried, those 5 to 10 places away are
// kept, so an outage of up to a quarter of the pool in one run of the list
// never takes a second try. Eligible itself with nothing tried.
func spread(n int, eligible, tried uint64) uint64 {
	if tried == 0 || eligible == 0 || n <= 0 {
		return eligible
	}
	var dist [64]int
	best := 0
	for m := eligible; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		d := n
		for t := tried; t != 0; t &= t - 1 {
			x := i - bits.TrailingZeros64(t)
			if x < 0 {
				x = -x
			}
			d = min(d, x, n-x)
		}
		dist[i] = d
		best = max(best, d)
	}
	var out uint64
	for m := eligible; m != 0; m &= m - 1 {
		if i := bits.TrailingZeros64(m); 2*dist[i] >= best {
			out |= 1 << i
		}
	}
	return out
}

// PickRetry draws a retry's origin at random, in proportion to the
// origins' effective weights, among the eligible ones spread keeps; the
// round robin's sequence is not advanced by it.
func (b *roundRobin) PickRetry(_ *http.Request, eligible, tried uint64) int {
	m := spread(len(b.origins), eligible, tried)
	switch bits.OnesCount64(m) {
	case 0:
		return -1
	case 1:
		return bits.TrailingZeros64(m)
	}
	now := time.Now().UnixNano()
	var w [64]int64
	var total int64
	for x := m; x != 0; x &= x - 1 {
		i := bits.TrailingZeros64(x)
		w[i] = max(b.origins[i].weightAt(now, b.slowStart), 1)
		total += w[i]
	}
	return weightedDraw(m, &w, total)
}

// PickRetry is Pick (two weighted draws, the less loaded) among the
// eligible origins spread keeps.
func (b *leastConn) PickRetry(r *http.Request, eligible, tried uint64) int {
	return b.Pick(r, spread(len(b.origins), eligible, tried))
}
