package statuspage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// LiveOrigin is one pool × origin's live traffic through the proxies over
// the live_errors window, from their signals (Options.Live).
type LiveOrigin struct {
	Pool, Origin string
	// Requests and Failed are the window's requests and failed ones (5xx,
	// connection errors, timeouts); Breakdown says which ("470 5xx").
	Requests, Failed int
	Breakdown        string
	// Ejected and Signals: the proxies' passive detector held the origin
	// out in Ejected of the window's Signals.
	Ejected, Signals int
	// Window is the span the figures cover.
	Window time.Duration
	// Failing: over the live_errors rule's thresholds (a failed share at
	// or above its ratio with enough requests, or ejected in enough of
	// its signals).
	Failing bool
}

// liveCacheFor is how long the overview reuses the live figures: one
// store read of the window's signals per refresh at most, however many
// pages are open.
const liveCacheFor = 5 * time.Second

// liveCache holds the last Options.Live answer.
type liveCache struct {
	mu   sync.Mutex
	at   time.Time
	figs []LiveOrigin
	err  error
}

// live returns Options.Live's figures, read at most once per liveCacheFor.
func (p *Page) live(ctx context.Context, now time.Time) ([]LiveOrigin, error) {
	c := &p.liveC
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && now.Sub(c.at) < liveCacheFor && now.Sub(c.at) >= 0 {
		return c.figs, c.err
	}
	c.figs, c.err = p.o.Live(ctx)
	c.at = now
	return c.figs, c.err
}

// liveText is an origin's live-traffic mark on the overview: what users
// get and what the checks of target (vs, the latest verdicts) say, e.g.
// "live traffic failing: 48% of 980 requests failed over 5m (470 5xx);
// checks pass (healthz)". "" when l is not failing.
func liveText(l LiveOrigin, vs []reporting.Verdict, now time.Time) string {
	if !l.Failing {
		return ""
	}
	var b strings.Builder
	b.WriteString("live traffic failing: ")
	if l.Requests > 0 {
		fmt.Fprintf(&b, "%s of %d requests failed over %s", units.Share(float64(l.Failed)/float64(l.Requests)), l.Requests, units.ConfigDuration(l.Window))
		if l.Failed > 0 {
			fmt.Fprintf(&b, " (%s)", l.Breakdown)
		}
	} else {
		fmt.Fprintf(&b, "no request over %s", units.ConfigDuration(l.Window))
	}
	if l.Signals > 0 && l.Ejected > 0 {
		fmt.Fprintf(&b, ", passively ejected in %d of %d signals", l.Ejected, l.Signals)
	}
	b.WriteString("; ")
	b.WriteString(checksText(vs, l.Origin, now))
	return b.String()
}

// checksText says what the checks of target say now: "checks pass
// (healthz)", "checks fail (asset: unhealthy)", "no check covers it".
func checksText(vs []reporting.Verdict, target string, now time.Time) string {
	states := map[string]reporting.State{} // check → worst current state
	rank := map[reporting.State]int{reporting.StateHealthy: 1, reporting.StateDegraded: 2, reporting.StateUnknown: 0, reporting.StateUnhealthy: 3}
	for _, v := range vs {
		if v.Target != target {
			continue
		}
		st := v.Current(now)
		if cur, ok := states[v.Check]; !ok || rank[st] > rank[cur] {
			states[v.Check] = st
		}
	}
	if len(states) == 0 {
		return "no check covers it"
	}
	var pass, fail, other []string
	for c, st := range states {
		switch st {
		case reporting.StateHealthy, reporting.StateDegraded:
			pass = append(pass, c)
		case reporting.StateUnhealthy:
			fail = append(fail, c)
		default:
			other = append(other, c+": "+string(st))
		}
	}
	sort.Strings(pass)
	sort.Strings(fail)
	sort.Strings(other)
	switch {
	case len(fail) > 0:
		return "checks fail too (" + strings.Join(fail, ", ") + ")"
	case len(pass) > 0 && len(other) == 0:
		return "checks pass (" + strings.Join(pass, ", ") + ")"
	case len(pass) > 0:
		return "checks pass (" + strings.Join(pass, ", ") + "; " + strings.Join(other, ", ") + ")"
	}
	return "checks: " + strings.Join(other, ", ")
}

// markLive marks the overview's origins whose live traffic fails, and
// those the proxy holds out by passive detection while their checks pass,
// and counts the failing ones. A failed read is logged and marks nothing.
func (p *Page) markLive(ctx context.Context, d *indexData, vs []reporting.Verdict, now time.Time) {
	figs, err := p.live(ctx, now)
	if err != nil {
		p.log.Warn("statuspage: read live traffic", "err", err)
	}
	byKey := map[[2]string]LiveOrigin{}
	for _, l := range figs {
		byKey[[2]string{l.Pool, l.Origin}] = l
	}
	for i := range d.Origins {
		o := &d.Origins[i]
		if l, ok := byKey[[2]string{o.Pool, o.Name}]; ok && l.Failing {
			o.Live = liveText(l, vs, now)
			d.LiveFailing++
			continue
		}
		for _, f := range o.Flags {
			if f.Source == FlagPassive && f.Bad {
				if c := checksText(vs, o.Name, now); strings.HasPrefix(c, "checks pass") {
					o.Live = "held out by the proxy's passive detection on live traffic; " + c
				}
			}
		}
	}
}
