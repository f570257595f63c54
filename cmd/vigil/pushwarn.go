package main

import "fmt"

// pushWarnings warns about push checks whose alerts the alerter's quorum
// cannot reach: a job pings one agent, so a push check has verdicts that
// mean anything from one region only (push.region), and alerting.quorum
// above 1 needs more regions to agree before down and burn_rate alerts
// fire. Without push.region it is worse: every region judges the check,
// and those its pings never reach report push_missing together.
func pushWarnings(f *File) []string {
	q := f.Alerting.Quorum
	if q <= 1 || f.Alerting.Disabled {
		return nil
	}
	var out []string
	for i, c := range f.Checks {
		if c.Push == nil || c.Disabled {
			continue
		}
		if c.Push.Region != "" {
			out = append(out, fmt.Sprintf("checks[%d].push.region: %q: only that region judges the push check, and alerting.quorum is %d: its down and burn_rate alerts can never fire (alert on it from an alerter with quorum: 1, or from Prometheus with vigil_verdict_state)",
				i, c.Push.Region, q))
			continue
		}
		out = append(out, fmt.Sprintf("checks[%d].push: no push.region, and alerting.quorum is %d: every region that loads this file judges the push check, and the regions its pings never reach report push_missing together, which may page; set push.region to the region whose agent the jobs ping",
			i, q))
	}
	return out
}
