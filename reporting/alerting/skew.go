package alerting

import (
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// lagSamples is how many of a key's latest dates the skew estimate
// (arrival.shift) is taken over: a region whose clock falls further
// behind is corrected after that many verdicts.
const lagSamples = 8

// arrival is what the alerter saw of one verdict key (check, target,
// region, vantage).
type arrival struct {
	at    time.Time     // the newest date read
	shift time.Duration // added to that date (see arrivals.rebase)
	// lags are how late each of the last lagSamples new dates was read
	// (read time − date), oldest first; negative for a clock ahead.
	lags []time.Duration
}

// arrivals tracks, per verdict key, how late its verdicts are read, so a
// region's clock offset does not age them (see rebase).
type arrivals map[string]*arrival

// rebase returns a copy of the latest verdicts vs with their dates moved
// onto the alerter's clock (Expires and HeldUntil move with At), so
// freshness, expiry and the dead-man silence do not depend on the skew
// between a region's clock and the alerter's: a canary whose clock is 10s
// slow, running every 2s, would otherwise have every verdict expire (at +
// 3 intervals) before it is read, never count towards a down alert's
// quorum and raise dead-man alerts while it runs; one whose clock is fast
// would count for longer after it stopped.
//
// How late a key's verdicts are read (read time − date) is measured each
// time its date changes. A verdict is expected to be read up to one check
// interval after its date (written, then read by the next evaluation);
// the least lateness over the key's last lagSamples dates beyond that is
// taken as the region's clock offset (or a steady write delay) and added
// to the date, and a negative one (a clock ahead) likewise. A region whose
// clock is right is left as it is. The proxy makes the same correction
// (proxy.rebase), by dating each verdict when it first arrived.
//
// A key read for the first time (the alerter just started, a new canary)
// is taken as dated right, but never ahead of now: a region that stopped
// before the alerter started is not taken for a live one. A date earlier
// than the last one (the region's clock stepped back) starts the
// measurement afresh. A verdict without a date is left as it is. Keys
// absent from vs are forgotten.
func (seen arrivals) rebase(latest []reporting.Verdict, now time.Time) []reporting.Verdict {
	vs := append([]reporting.Verdict(nil), latest...)
	present := make(map[string]bool, len(vs))
	for i := range vs {
		v := &vs[i]
		if v.At.IsZero() {
			continue
		}
		k := v.Key()
		present[k] = true
		s := seen[k]
		lag := now.Sub(v.At)
		switch {
		case s == nil:
			s = &arrival{at: v.At, shift: min(lag, 0), lags: []time.Duration{lag}}
			seen[k] = s
		case v.At.Equal(s.at):
		default:
			if v.At.Before(s.at) {
				s.lags = s.lags[:0]
			}
			if len(s.lags) == lagSamples {
				s.lags = append(s.lags[:0], s.lags[1:]...)
			}
			s.lags = append(s.lags, lag)
			least := s.lags[0]
			for _, l := range s.lags[1:] {
				least = min(least, l)
			}
			s.at, s.shift = v.At, 0
			switch {
			case least < 0:
				s.shift = least
			case least > v.Interval:
				s.shift = least - v.Interval
			}
		}
		if s.shift == 0 {
			continue
		}
		v.At = v.At.Add(s.shift)
		if !v.Expires.IsZero() {
			v.Expires = v.Expires.Add(s.shift)
		}
		if !v.HeldUntil.IsZero() {
			v.HeldUntil = v.HeldUntil.Add(s.shift)
		}
	}
	for k := range seen {
		if !present[k] {
			delete(seen, k)
		}
	}
	return vs
}
