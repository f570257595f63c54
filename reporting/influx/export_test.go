package influx

// PinJitter makes o's retry delays take the jitter j (0: −20 %, 1: +20 %)
// instead of a random one.
func PinJitter(o *Options, j float64) { o.jitter = func() float64 { return j } }
