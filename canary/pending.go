package canary

import (
	"sort"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Pending returns a placeholder verdict (state unknown, no date) for every
// configured pair this canary runs that has no verdict yet in this process
// nor restored from its store: a check whose first run is still ahead (an
// hourly or cron check just added) exists before it runs. Sorted by check,
// target.
func (c *Canary) Pending() []reporting.Verdict {
	agent := c.labels.Load()
	c.mu.Lock()
	es := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		if !e.removed {
			es = append(es, e)
		}
	}
	c.mu.Unlock()
	var out []reporting.Verdict
	for _, e := range es {
		e.mu.Lock()
		has := e.has
		e.mu.Unlock()
		p := e.pair.Load()
		if has || p == nil || p.Check == nil {
			continue
		}
		v := reporting.Verdict{Check: p.Check.Name, Target: p.Target.Name, Tier: p.Check.Tier, State: reporting.StateUnknown}
		if agent != nil {
			v.Region, v.Vantage = agent.Region, agent.Vantage
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Check != out[j].Check {
			return out[i].Check < out[j].Check
		}
		return out[i].Target < out[j].Target
	})
	return out
}
