package store

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"sort"
	"time"
)

// ttfbHist is a per-minute TTFB histogram kept in the rollups table so the
// minute's p95 survives the raw verdicts' retention. Values are microseconds;
// below 32 µs every value has its own bucket, above it each power of two is
// split into 32 buckets, so a bucket's midpoint is within 1.6 % of every value
// in it (log-linear, like HdrHistogram with 5 significant bits).
type ttfbHist map[uint32]uint32

func histBucket(d time.Duration) uint32 {
	v := uint64(max(d, 0) / time.Microsecond)
	if v < 32 {
		return uint32(v)
	}
	e := uint(bits.Len64(v) - 6) // v >> e is in [32, 64)
	return uint32(32*e + uint(v>>e))
}

// histValue returns the midpoint of bucket b.
func histValue(b uint32) time.Duration {
	if b < 64 {
		return time.Duration(b) * time.Microsecond
	}
	e := uint(b/32 - 1)
	m := uint64(b) - 32*uint64(e)
	lo := m << e
	hi := (m+1)<<e - 1
	return time.Duration((lo+hi)/2) * time.Microsecond
}

// histTimedOut is the first bucket of the timed-out range: a run that timed
// out before its first byte is counted in bucket histTimedOut +
// histBucket(wait), so every such bucket sorts above every measured TTFB
// (histBucket stays below 2048 for any duration). Bucket 0 holds the failed
// runs (TTFB 0) that rows written before timed-out runs were told apart
// counted; it is no sample.
const histTimedOut = 1 << 20

func (h ttfbHist) add(d time.Duration) { h[histBucket(d)]++ }

// addTimeout counts a run that timed out before its first byte after
// waiting d.
func (h ttfbHist) addTimeout(d time.Duration) { h[histTimedOut+histBucket(d)]++ }

// runs counts the measured TTFBs and the timed-out runs.
func (h ttfbHist) runs() (measured, timedOut int) {
	for b, n := range h {
		switch {
		case b >= histTimedOut:
			timedOut += int(n)
		case b > 0:
			measured += int(n)
		}
	}
	return measured, timedOut
}

func (h ttfbHist) merge(o ttfbHist) {
	for b, n := range o {
		h[b] += n
	}
}

// quantile returns the nearest-rank q-quantile (0 < q <= 1) of the samples
// (bucket 0 left out), timed-out runs ranked above every measured TTFB, or
// 0 when empty. timedOut is set when it falls on a timed-out run: the value
// is then that run's wait, a lower bound.
func (h ttfbHist) quantile(q float64) (d time.Duration, timedOut bool) {
	var total uint64
	keys := make([]uint32, 0, len(h))
	for b, n := range h {
		if b == 0 {
			continue
		}
		total += uint64(n)
		keys = append(keys, b)
	}
	if total == 0 {
		return 0, false
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	rank := uint64(q*float64(total) + 0.999999999)
	var seen uint64
	b := keys[len(keys)-1]
	for _, k := range keys {
		seen += uint64(h[k])
		if seen >= rank {
			b = k
			break
		}
	}
	if b >= histTimedOut {
		return histValue(b - histTimedOut), true
	}
	return histValue(b), false
}

// encode writes (bucket, count) uvarint pairs in bucket order.
func (h ttfbHist) encode() []byte {
	keys := make([]uint32, 0, len(h))
	for b := range h {
		keys = append(keys, b)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	out := make([]byte, 0, len(keys)*3)
	for _, b := range keys {
		out = binary.AppendUvarint(out, uint64(b))
		out = binary.AppendUvarint(out, uint64(h[b]))
	}
	return out
}

var errBadHist = errors.New("store: corrupt ttfb histogram")

func decodeHist(p []byte) (ttfbHist, error) {
	h := ttfbHist{}
	for len(p) > 0 {
		b, n := binary.Uvarint(p)
		if n <= 0 {
			return nil, errBadHist
		}
		p = p[n:]
		c, n := binary.Uvarint(p)
		if n <= 0 {
			return nil, errBadHist
		}
		p = p[n:]
		h[uint32(b)] += uint32(c)
	}
	return h, nil
}
