package main

import "fmt"

// oneRegionChecks are the enabled push checks with push.region: only that
// region judges them, so vigil's alerter needs that region alone for their
// alerts (alerting.Alerter.SetOneRegion).
func (f *File) oneRegionChecks() []string {
	var out []string
	for _, c := range f.Checks {
		if c.Push != nil && c.Push.Region != "" && !c.Disabled {
			out = append(out, c.Name)
		}
	}
	return out
}

// pushWarnings warns about push checks that alerting.quorum above 1 makes
// trouble for. A job pings one agent, so a push check has verdicts that
// mean anything from one region only: with push.region, vigil's alerter
// and the rules vigil generates for Prometheus and Grafana from the file
// need that region alone (CheckInterval.OneRegion), and nothing is
// warned. Without push.region every region judges the check, and those
// its pings never reach report push_missing together.
func pushWarnings(f *File) []string {
	q := f.Alerting.Quorum
	if q <= 1 || f.Alerting.Disabled {
		return nil
	}
	var out []string
	for i, c := range f.Checks {
		if c.Push == nil || c.Disabled || c.Push.Region != "" {
			continue
		}
		out = append(out, fmt.Sprintf("checks[%d].push: no push.region, and alerting.quorum is %d: every region that loads this file judges the push check, and the regions its pings never reach report push_missing together, which may page; set push.region to the region whose agent the jobs ping",
			i, q))
	}
	return out
}
