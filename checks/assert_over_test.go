package checks

import (
	"testing"
	"time"
)

// TestOverLimitMessageShowsTheDifference: a ttfb or duration just over its
// limit never reads "over" a figure that looks the same: got gets the
// digits that tell them apart; below 10 ms and well over, fmtDur's
// rounding stays.
func TestOverLimitMessageShowsTheDifference(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		got, limit time.Duration
		ttfb, dur  string
	}{
		{202*ms + 400*time.Microsecond, 202 * ms, "ttfb 202.4ms over 202ms", "duration 202.4ms over 202ms"},
		{202*ms + 50*time.Microsecond, 202 * ms, "ttfb 202.1ms over 202ms", "duration 202.1ms over 202ms"},
		{202*ms + 3*time.Microsecond, 202 * ms, "ttfb 202.003ms over 202ms", "duration 202.003ms over 202ms"},
		{202*ms + 7, 202 * ms, "ttfb 202.000007ms over 202ms", "duration 202.000007ms over 202ms"},
		{202*ms + 600*time.Microsecond, 202 * ms, "ttfb 203ms over 202ms", "duration 203ms over 202ms"},
		{950 * ms, 600 * ms, "ttfb 950ms over 600ms", "duration 950ms over 600ms"},
		{2*ms + 4*time.Microsecond, 2 * ms, "ttfb 2.004ms over 2ms", "duration 2.004ms over 2ms"},
		{2*ms + 5*time.Microsecond, 2 * ms, "ttfb 2.01ms over 2ms", "duration 2.01ms over 2ms"},
	} {
		e := Expect{TTFB: tc.limit, Duration: tc.limit}
		var v verdict
		e.evalCommon(&observation{ttfb: tc.got, total: tc.got}, &v)
		if len(v.list) != 2 || v.list[0].OK || v.list[1].OK {
			t.Fatalf("%s against %s: assertions %+v, want ttfb and duration failed", tc.got, tc.limit, v.list)
		}
		if v.err != tc.ttfb {
			t.Errorf("%s against %s: %q, want %q", tc.got, tc.limit, v.err, tc.ttfb)
		}
		if v.list[0].Got+" over "+v.list[0].Want[len("<= "):] != tc.ttfb[len("ttfb "):] {
			t.Errorf("ttfb assertion got %q want %q, want them as in %q", v.list[0].Got, v.list[0].Want, tc.ttfb)
		}
		e.TTFB = 0
		v = verdict{}
		e.evalCommon(&observation{ttfb: tc.got, total: tc.got}, &v)
		if v.err != tc.dur {
			t.Errorf("%s against %s: %q, want %q", tc.got, tc.limit, v.err, tc.dur)
		}
	}
}
