package influx

import "time"

// PinJitter makes o's retry delays take the jitter j (0: −20 %, 1: +20 %)
// instead of a random one.
func PinJitter(o *Options, j float64) { o.jitter = func() float64 { return j } }

// SetOwnCheck sets how often a publishing store checks its own region and
// vantage for other canaries (soon: during the first every), and returns
// a function restoring the defaults.
func SetOwnCheck(soon, every time.Duration) func() {
	s, e := ownCheckSoon, ownCheckEvery
	ownCheckSoon, ownCheckEvery = soon, every
	return func() { ownCheckSoon, ownCheckEvery = s, e }
}

// SetDupRefresh sets how often Verdicts reads the instances again, and
// returns a function restoring the default.
func SetDupRefresh(d time.Duration) func() {
	old := dupRefresh
	dupRefresh = d
	return func() { dupRefresh = old }
}
