package proxy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// binomial draws the number of failures among n tries that each fail with
// probability p, by inverting the distribution function (one uniform draw).
func binomial(r *rand.Rand, n int, p float64) int {
	if p <= 0 {
		return 0
	}
	if p >= 1 {
		return n
	}
	u := r.Float64()
	pmf := math.Pow(1-p, float64(n))
	cdf := pmf
	x := 0
	for u > cdf && x < n {
		pmf *= float64(n-x) / float64(x+1) * p / (1 - p)
		x++
		cdf += pmf
	}
	return x
}

// srScenario is one simulated pool: hosts origins with req requests each
// per window, every origin failing a share base of them, but origin 0,
// which fails a share bad (0: healthy like the others).
type srScenario struct {
	hosts, req int
	base, bad  float64
}

func (sc srScenario) String() string {
	s := fmt.Sprintf("%d origins × %d requests, %g%% errors", sc.hosts, sc.req, sc.base*100)
	if sc.bad > 0 {
		s += fmt.Sprintf(", origin 0 at %g%%", sc.bad*100)
	}
	return s
}

// simulate runs windows windows of sc through successRateOutliers at the
// default success_rate_stdev and counts those in which origin 0 is ejected
// (hit) and those in which another origin is (false). It takes every
// origin as failing now (the rule's recent-failure condition met), the
// worst case for false ejections.
func (sc srScenario) simulate(seed uint64, windows int) (hit, false_ int) {
	r := rand.New(rand.NewPCG(seed, uint64(sc.hosts*100000+sc.req)))
	counts := make([]srCount, sc.hosts)
	out := make([]bool, sc.hosts)
	for range windows {
		for i := range counts {
			p := sc.base
			if i == 0 && sc.bad > 0 {
				p = sc.bad
			}
			counts[i] = srCount{sc.req, binomial(r, sc.req, p)}
		}
		successRateOutliers(counts, 1.9, out)
		if out[0] && sc.bad > 0 {
			hit++
		}
		for i, o := range out {
			if o && (i > 0 || sc.bad == 0) {
				false_++
				break
			}
		}
	}
	return hit, false_
}

// The success-rate rule, run over 10,000 simulated windows per pool shape
// (seeded, so the counts are the same on every run): chance alone (every
// origin at the same error rate) ejects an origin in fewer than 0.1% of
// windows, where it did in 0.75% (3 origins × 100 requests at 3%) and 1.9%
// (5 origins) before the rule required its failures to be significant. An
// origin failing 50% of its requests, or 20% at 1,000 requests, is ejected
// in more than 99% of windows, and at 100 requests 20% is in more than 99%
// of them among 5 origins at 1%. Less than that where chance and the
// rule's spread condition cannot tell: 20% against 3% at 100 requests is
// ejected in 94% of windows among 5 origins (the others' 12 ± 3 failures in
// 400 requests against its 1st percentile, 11 in 100, is p ≈ 0.001, not
// below 0.0002), and among 3 origins in 72.5% (78.3% before: with three
// rates, the bad origin's own rate inflates the standard deviation so much
// that any spread between the two others hides it from median − 1.9 ×
// stdev, the condition as it was); a bad origin that escapes one evaluation
// is judged again a tenth of the window later. The counts are logged:
// go test -count=1 -run TestSuccessRateSimulation -v ./proxy/
func TestSuccessRateSimulation(t *testing.T) {
	const windows = 10000
	for _, tc := range []struct {
		hosts, req int
		base       float64
		// minHit20 is the least share of windows in which an origin at 20%
		// errors must be ejected (at 50% it is always 0.99).
		minHit20 float64
	}{
		{3, 100, 0.01, 0.95},
		{3, 100, 0.03, 0.72},
		{3, 1000, 0.01, 0.99},
		{3, 1000, 0.03, 0.99},
		{5, 100, 0.01, 0.99},
		{5, 100, 0.03, 0.93},
		{5, 1000, 0.01, 0.99},
		{5, 1000, 0.03, 0.99},
	} {
		sc := srScenario{hosts: tc.hosts, req: tc.req, base: tc.base}
		_, f := sc.simulate(1, windows)
		t.Logf("%-45s false ejections %5.2f%% (%d of %d windows)", sc, 100*float64(f)/windows, f, windows)
		if f*1000 >= windows {
			t.Errorf("%s: an origin ejected by chance in %d of %d windows, want fewer than 0.1%%", sc, f, windows)
		}
		for _, bad := range []float64{0.2, 0.5} {
			sc.bad = bad
			hit, f := sc.simulate(2, windows)
			t.Logf("%-45s detected %6.2f%% (%d of %d windows), healthy origin ejected in %d", sc, 100*float64(hit)/windows, hit, windows, f)
			want := 0.99
			if bad == 0.2 {
				want = tc.minHit20
			}
			if float64(hit) <= want*windows {
				t.Errorf("%s: the bad origin ejected in %d of %d windows, want more than %g%%", sc, hit, windows, want*100)
			}
			if f*1000 >= windows {
				t.Errorf("%s: a healthy origin ejected in %d of %d windows, want fewer than 0.1%%", sc, f, windows)
			}
		}
	}
}

// failTail against the hypergeometric tail computed exactly (Python's
// math.comb and fractions); above successRateChance it only says so.
func TestFailTail(t *testing.T) {
	for _, tc := range []struct {
		fail, req, failAll, reqAll int
		want                       float64 // 0: at least successRateChance
	}{
		{20, 100, 21, 400, 3.22730046263e-12},
		{60, 1000, 120, 3000, 8.66078361784e-05},
		{12, 100, 20, 500, 6.88718746646e-05},
		{500, 10000, 1500, 100000, 2.06644485011e-136},
		{11, 100, 17, 300, 0}, // 0.0065
		{3, 100, 3, 300, 0},   // 0.036
		{3, 100, 9, 300, 0},   // at the others' rate
		{0, 100, 5, 300, 0},
		{5, 100, 5, 100, 0}, // no other origin
	} {
		got := failTail(tc.fail, tc.req, tc.failAll, tc.reqAll)
		if tc.want == 0 && got < successRateChance || tc.want != 0 && math.Abs(got-tc.want) > 1e-9*tc.want {
			t.Errorf("failTail(%d, %d, %d, %d) = %.12g, want %.12g (0: at least %g)", tc.fail, tc.req, tc.failAll, tc.reqAll, got, tc.want, successRateChance)
		}
	}
}
