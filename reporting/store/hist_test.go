package store

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestHistQuantileWithinBucketError(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(300)
		h := ttfbHist{}
		vals := make([]time.Duration, n)
		for i := range vals {
			vals[i] = time.Duration(r.Int64N(int64(20 * time.Second)))
			if r.IntN(5) == 0 {
				// Bucket 0 (under 1 µs) is no sample: no TTFB is that short.
				vals[i] = time.Microsecond + time.Duration(r.Int64N(int64(50*time.Microsecond)))
			}
			h.add(vals[i])
		}
		back, err := decodeHist(h.encode())
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
		rank := int(0.95*float64(n) + 0.999999999)
		want := vals[rank-1]
		got, _ := back.quantile(0.95)
		// Bucket midpoint: within 1/64 relative, plus 1 µs of truncation.
		if diff := (got - want).Abs(); float64(diff) > float64(want)/64+float64(time.Microsecond) {
			t.Fatalf("n=%d p95 = %s, exact %s", n, got, want)
		}
	}
}

func FuzzDecodeHist(f *testing.F) {
	h := ttfbHist{}
	for _, d := range []time.Duration{0, time.Microsecond, 40 * time.Millisecond, 3 * time.Second} {
		h.add(d)
	}
	f.Add(h.encode())
	f.Add([]byte{0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeHist(b)
		if err != nil {
			return
		}
		_, _ = h.quantile(0.95)
		again, err := decodeHist(h.encode())
		if err != nil || len(again) != len(h) {
			t.Fatalf("re-encoding changed the histogram: %v %v", again, err)
		}
	})
}
