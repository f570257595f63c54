package reporting

import (
	"math"
	"slices"
	"time"
)

// CauseTimeout is the value of checks.CauseTimeout: the run got no complete
// answer within the check's timeout. Without a TTFB, no first byte came.
const CauseTimeout = "timeout"

// TTFBSample reports how v counts in TTFB figures (the TTFB SLO, the status
// page's TTFB p50/p95 and charts, the rollups' TTFB p95, the
// vigil_check_ttfb_seconds histogram):
//
//   - a run that got a first byte is a sample at its TTFB (ok, not timedOut);
//   - a run that timed out before its first byte (cause timeout, no TTFB) is
//     a sample too, timedOut: its TTFB is longer than it waited, d, which is
//     its Duration (at least its timeout). Percentiles rank it above every
//     measured TTFB, so an origin that gets slower than the timeout does not
//     read faster for it;
//   - any other run without a first byte (DNS, refused or timed-out
//     connection, TLS, reset…) and a run the agent could not make
//     (AgentFault) give no sample: they say nothing of the origin's latency
//     and count against availability instead.
func (v Verdict) TTFBSample() (d time.Duration, timedOut, ok bool) {
	switch {
	case v.AgentFault():
		return 0, false, false
	case v.TTFB > 0:
		return v.TTFB, false, true
	case v.Cause == CauseTimeout && !v.OK:
		return max(v.Duration, time.Nanosecond), true, true
	}
	return 0, false, false
}

// TTFBPercentile is a nearest-rank TTFB percentile over measured TTFBs and
// runs that timed out before their first byte (Verdict.TTFBSample).
type TTFBPercentile struct {
	// D is the percentile. When TimedOut it is a lower bound: the rank fell
	// on a run that timed out before its first byte, and D is how long that
	// run waited (about the check's timeout).
	D time.Duration
	// TimedOut is set when the rank fell on a timed-out run: the percentile
	// is above D, and above any TTFB objective.
	TimedOut bool
	// Runs counts the samples: runs with a TTFB plus timed-out runs.
	Runs int
}

// Over reports whether p is above objective: a timed-out percentile is
// above every objective.
func (p TTFBPercentile) Over(objective time.Duration) bool {
	return p.TimedOut || p.D > objective
}

// TTFBPercentileOf is the nearest-rank q-quantile (0 < q <= 1) of measured
// TTFBs and the waits of runs that timed out before their first byte, the
// timed-out runs ranked above every measured one. It sorts both slices in
// place. The zero TTFBPercentile when there are none.
func TTFBPercentileOf(measured, waits []time.Duration, q float64) TTFBPercentile {
	n := len(measured) + len(waits)
	if n == 0 {
		return TTFBPercentile{}
	}
	rank := min(max(int(math.Ceil(q*float64(n))), 1), n)
	slices.Sort(measured)
	if rank <= len(measured) {
		return TTFBPercentile{D: measured[rank-1], Runs: n}
	}
	slices.Sort(waits)
	return TTFBPercentile{D: waits[rank-len(measured)-1], TimedOut: true, Runs: n}
}

// TTFBSamples counts the runs of r that are TTFB samples: TTFBRuns plus
// TTFBTimeouts.
func (r Rollup) TTFBSamples() int { return r.TTFBRuns + r.TTFBTimeouts }

// TTFBP95TimedOut reports whether the minute's TTFB p95 falls on a run that
// timed out before its first byte: TTFBP95 is then a lower bound (how long
// such a run waited), and the p95 is above any TTFB objective.
func (r Rollup) TTFBP95TimedOut() bool {
	n := r.TTFBSamples()
	return r.TTFBTimeouts > 0 && int(math.Ceil(0.95*float64(n))) > r.TTFBRuns
}
