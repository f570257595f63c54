package alerting

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// RegionSLO is one region's standing on an SLO.
type RegionSLO struct {
	Region string
	// Runs and Failed count the runs in the window (from the per-minute rollups).
	Runs, Failed int
	// Availability is the share of passing runs, 0..1; -1 without runs.
	Availability float64
	// BudgetRemaining is 1 − error ratio / (1 − objective): 1 untouched,
	// 0 spent, negative overspent; 0 for a TTFB-only SLO.
	BudgetRemaining float64
	// TTFBP95 is the p95 TTFB of the window's runs (TTFB SLOs only): runs
	// with a TTFB and runs that timed out before their first byte
	// (reporting.Verdict.TTFBSample).
	TTFBP95 time.Duration
	// TTFBP95TimedOut is set when the p95 falls on a run that timed out
	// before its first byte: TTFBP95 is then a lower bound, and the p95 is
	// above any objective.
	TTFBP95TimedOut bool
}

// SLOStatus is one SLO × target's standing over its window, for the status
// page: all regions together and per region.
type SLOStatus struct {
	SLO, Check, Target string
	// Objective is the availability objective (0 for a TTFB-only SLO);
	// TTFBObjective the TTFB p95 objective (0 for an availability-only SLO).
	Objective     units.Percent
	TTFBObjective time.Duration
	Window        time.Duration
	// Runs, Failed, Availability and BudgetRemaining sum every region's runs.
	Runs, Failed    int
	Availability    float64
	BudgetRemaining float64
	// TTFBP95 is the highest region p95 (TTFB SLOs only), a timed-out one
	// (TTFBP95TimedOut: a lower bound, above any objective) first.
	TTFBP95         time.Duration
	TTFBP95TimedOut bool
	// Met reports whether the objectives hold: availability at or above the
	// objective, and fewer than quorum regions with a TTFB p95 above its
	// objective. True without runs.
	Met     bool
	Regions []RegionSLO
}

// SLOStatus computes every SLO's standing now from the store, one entry per
// SLO × target with runs, and one for an SLO with none (Runs 0,
// Availability -1, TTFBP95 0, Met). Availability
// reads the per-minute rollups over the SLO window; TTFB reads the raw
// verdicts of windows up to RawTTFBWindow (exact p95) and the rollups of
// longer ones. It reads the whole window on every call: cache the result
// (the status page refreshes it every few seconds at most).
func (a *Alerter) SLOStatus(ctx context.Context) ([]SLOStatus, error) {
	a.mu.Lock()
	slos, quorum, minSamples, oneRegion := a.slos, a.cfg.Quorum, a.cfg.TTFB.MinSamples, a.oneRegion
	a.mu.Unlock()
	now := a.now()
	type key struct{ slo, target string }
	out := map[key]*SLOStatus{}
	region := func(s *SLOStatus, r string) *RegionSLO {
		for i := range s.Regions {
			if s.Regions[i].Region == r {
				return &s.Regions[i]
			}
		}
		s.Regions = append(s.Regions, RegionSLO{Region: r, Availability: -1})
		return &s.Regions[len(s.Regions)-1]
	}
	get := func(s SLO, target string) *SLOStatus {
		k := key{s.Name, target}
		if out[k] == nil {
			out[k] = &SLOStatus{SLO: s.Name, Check: s.Check, Target: target, Objective: s.Objective,
				TTFBObjective: s.TTFBP95, Window: s.Window, Availability: -1, Met: true}
		}
		return out[k]
	}
	for _, s := range slos {
		from := now.Add(-s.Window)
		if s.Objective > 0 {
			// The minutes after from, up to now: summed by the store where
			// it can (a 30-day window is 43,200 minutes per series).
			q := reporting.HistoryQuery{Check: s.Check, Target: s.Target, From: from.Truncate(time.Minute).Add(time.Minute), To: now}
			var cs []reporting.RollupCount
			var err error
			if reporting.CountsRollups(a.src) {
				cs, err = reporting.CountRollups(ctx, a.src, q, 0)
			} else {
				var rolls []reporting.Rollup
				q.From = from
				if rolls, err = a.src.Rollups(ctx, q); err == nil {
					kept := rolls[:0]
					for _, r := range rolls {
						if r.Minute.After(from) && !r.Minute.After(now) {
							kept = append(kept, r)
						}
					}
					cs = reporting.SumRollups(kept, from, 0)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("alerting: slo %s: rollups: %w", s.Name, err)
			}
			for _, c := range cs {
				st := get(s, c.Target)
				st.Runs += c.Total
				st.Failed += c.Failed
				rs := region(st, c.Region)
				rs.Runs += c.Total
				rs.Failed += c.Failed
			}
		}
		if s.TTFBP95 > 0 {
			stats, err := regionTTFB(ctx, a.src, nil, s, now)
			if err != nil {
				return nil, fmt.Errorf("alerting: %w", err)
			}
			for sk, regions := range stats {
				st := get(s, sk.target)
				breaching := 0
				for r, ts := range regions {
					rs := region(st, r)
					rs.TTFBP95, rs.TTFBP95TimedOut = ts.p95, ts.timedOut
					if ts.timedOut && !st.TTFBP95TimedOut || ts.timedOut == st.TTFBP95TimedOut && ts.p95 > st.TTFBP95 {
						st.TTFBP95, st.TTFBP95TimedOut = ts.p95, ts.timedOut
					}
					if ts.runs >= minSamples && ts.over(s.TTFBP95) {
						breaching++
					}
				}
				if breaching >= quorum || oneRegion[s.Check] && breaching > 0 {
					st.Met = false
				}
			}
		}
	}
	// An SLO without runs in its window (a new or rarely run check) is
	// still listed, with no runs, so the status page does not read "no SLO
	// covers this check".
	for _, s := range slos {
		listed := false
		for k := range out {
			if k.slo == s.Name {
				listed = true
				break
			}
		}
		if !listed {
			get(s, s.Target)
		}
	}
	res := make([]SLOStatus, 0, len(out))
	for _, st := range out {
		budget := 1 - st.Objective.Fraction()
		fill := func(runs, failed int) (avail, remaining float64) {
			if runs == 0 {
				return -1, 1
			}
			ratio := float64(failed) / float64(runs)
			if st.Objective == 0 {
				return 1 - ratio, 0
			}
			return 1 - ratio, 1 - ratio/budget
		}
		st.Availability, st.BudgetRemaining = fill(st.Runs, st.Failed)
		if st.Objective > 0 && st.Runs > 0 && st.Availability < st.Objective.Fraction() {
			st.Met = false
		}
		for i := range st.Regions {
			r := &st.Regions[i]
			if r.Runs > 0 || st.Objective > 0 {
				r.Availability, r.BudgetRemaining = fill(r.Runs, r.Failed)
			}
		}
		sort.Slice(st.Regions, func(i, j int) bool { return st.Regions[i].Region < st.Regions[j].Region })
		res = append(res, *st)
	}
	sort.Slice(res, func(i, j int) bool {
		if res[i].SLO != res[j].SLO {
			return res[i].SLO < res[j].SLO
		}
		return res[i].Target < res[j].Target
	})
	return res, nil
}
