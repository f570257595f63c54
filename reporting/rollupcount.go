package reporting

import (
	"context"
	"sort"
	"time"
)

// RollupCount is the runs of one check × target × region over one bucket
// of time: the per-minute rollups (Rollup) of the bucket summed. It is
// what uptime, burn rates and error budgets read: a count, not the
// latency figures.
type RollupCount struct {
	Check, Target, Region string
	// Start is the bucket's start: the query's From (truncated to the
	// minute) for a query in one bucket, else a multiple of the step from
	// the Unix epoch, in UTC.
	Start                    time.Time
	Total, Failed, Unhealthy int
	// First is the oldest minute with runs in the bucket (zero without
	// runs): where the history starts.
	First time.Time
}

// RollupCounter is a HistorySource that sums rollups itself (the embedded
// store, from an hourly table it keeps beside the minutes), so that a
// 30-day uptime or a 3-day burn rate reads a few rows per series instead
// of one per minute.
type RollupCounter interface {
	// RollupCounts returns, per check × target × region matching q, the
	// runs of the minutes overlapping [From, To] (To zero: now) summed per
	// step (0: one bucket for the whole range), ordered by check, target,
	// region and Start.
	RollupCounts(ctx context.Context, q HistoryQuery, step time.Duration) ([]RollupCount, error)
}

// rollupCountsNative is a wrapper of a HistorySource that says whether
// what it wraps sums rollups itself.
type rollupCountsNative interface {
	CountsRollups() bool
}

// CountsRollups reports whether src sums rollups itself (the embedded
// store; a wrapper of it), so that reading sums window by window costs a
// few rows per series; false where CountRollups would read every minute
// (InfluxDB), whose readers keep their own caches of minutes instead.
func CountsRollups(src HistorySource) bool {
	if n, ok := src.(rollupCountsNative); ok {
		return n.CountsRollups()
	}
	_, ok := src.(RollupCounter)
	return ok
}

// CountRollups is src.RollupCounts where src has it, else the same sums
// made here from src.Rollups.
func CountRollups(ctx context.Context, src HistorySource, q HistoryQuery, step time.Duration) ([]RollupCount, error) {
	if c, ok := src.(RollupCounter); ok {
		return c.RollupCounts(ctx, q, step)
	}
	q.Limit = 0
	rs, err := src.Rollups(ctx, q)
	if err != nil {
		return nil, err
	}
	return SumRollups(rs, q.From, step), nil
}

// SumRollups sums per-minute rollups per check × target × region and
// bucket (see RollupCounter): from is the start of a one-bucket sum
// (step 0), truncated to the minute.
func SumRollups(rs []Rollup, from time.Time, step time.Duration) []RollupCount {
	type key struct {
		check, target, region string
		start                 int64
	}
	acc := map[key]*RollupCount{}
	var keys []key
	start := from.Truncate(time.Minute).UTC()
	for _, r := range rs {
		b := start
		if step > 0 {
			b = time.Unix(0, r.Minute.UnixNano()-r.Minute.UnixNano()%int64(step)).UTC()
		}
		k := key{r.Check, r.Target, r.Region, b.UnixNano()}
		c := acc[k]
		if c == nil {
			c = &RollupCount{Check: r.Check, Target: r.Target, Region: r.Region, Start: b}
			acc[k] = c
			keys = append(keys, k)
		}
		c.Total += r.Total
		c.Failed += r.Failed
		c.Unhealthy += r.Unhealthy
		if r.Total > 0 && (c.First.IsZero() || r.Minute.Before(c.First)) {
			c.First = r.Minute.UTC()
		}
	}
	out := make([]RollupCount, len(keys))
	for i, k := range keys {
		out[i] = *acc[k]
	}
	SortRollupCounts(out)
	return out
}

// SortRollupCounts orders cs by check, target, region and Start.
func SortRollupCounts(cs []RollupCount) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Check != b.Check {
			return a.Check < b.Check
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		if a.Region != b.Region {
			return a.Region < b.Region
		}
		return a.Start.Before(b.Start)
	})
}
