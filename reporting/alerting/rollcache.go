package alerting

import (
	"context"
	"sort"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Rollup caching: the burn-rate rule reads up to three days of per-minute
// rollups every evaluation. Minutes older than rollupSettle are kept between
// evaluations and only the recent tail is read again; every
// rollupRefresh the whole range is re-read, which picks up verdicts that
// arrived very late (a region's outbox replayed after an outage).
const (
	rollupSettle  = 5 * time.Minute
	rollupRefresh = time.Hour
)

// rollupCache holds the settled rollups of one check × target query.
type rollupCache struct {
	from, until time.Time          // cached minutes are in [from, until)
	rolls       []reporting.Rollup // sorted by minute
	refreshed   time.Time
}

// rollupCaches is the Alerter's cache by query; it is used only under
// Alerter.evalMu.
type rollupCaches map[string]*rollupCache

// fetch returns the rollups of check × target with minute in [from, now]
// (from truncated to the minute), from the cache where it can. The cache
// is per check × target × window length; a nil rollupCaches reads directly.
func (rc rollupCaches) fetch(ctx context.Context, src reporting.HistorySource, check, target string, from, now time.Time) ([]reporting.Rollup, error) {
	if rc == nil {
		rolls, err := src.Rollups(ctx, reporting.HistoryQuery{Check: check, Target: target, From: from, To: now})
		sortRollups(rolls)
		return rolls, err
	}
	key := check + "\x00" + target + "\x00" + now.Sub(from).String()
	from = from.Truncate(time.Minute)
	boundary := now.Truncate(time.Minute).Add(-rollupSettle)
	c := rc[key]
	if c == nil || now.Sub(c.refreshed) >= rollupRefresh || now.Before(c.refreshed) ||
		from.Before(c.from) || c.until.After(boundary) || !boundary.After(from) {
		rolls, err := src.Rollups(ctx, reporting.HistoryQuery{Check: check, Target: target, From: from, To: now})
		if err != nil {
			return nil, err
		}
		sortRollups(rolls)
		if boundary.After(from) {
			i := sort.Search(len(rolls), func(i int) bool { return !rolls[i].Minute.Before(boundary) })
			rc[key] = &rollupCache{from: from, until: boundary, rolls: append([]reporting.Rollup(nil), rolls[:i]...), refreshed: now}
		} else {
			delete(rc, key)
		}
		return rolls, nil
	}
	tail, err := src.Rollups(ctx, reporting.HistoryQuery{Check: check, Target: target, From: c.until, To: now})
	if err != nil {
		return nil, err
	}
	sortRollups(tail)
	i := sort.Search(len(tail), func(i int) bool { return !tail[i].Minute.Before(boundary) })
	c.rolls = append(c.rolls, tail[:i]...)
	c.until = boundary
	// forget minutes that left the longest window
	j := sort.Search(len(c.rolls), func(i int) bool { return !c.rolls[i].Minute.Before(from) })
	if j > 0 {
		c.rolls = append([]reporting.Rollup(nil), c.rolls[j:]...)
	}
	c.from = from
	out := make([]reporting.Rollup, 0, len(c.rolls)+len(tail)-i)
	out = append(out, c.rolls...)
	return append(out, tail[i:]...), nil
}

func sortRollups(rs []reporting.Rollup) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Minute.Before(rs[j].Minute) })
}
