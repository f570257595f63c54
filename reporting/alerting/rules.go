package alerting

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// candidate is a rule condition that holds at this evaluation, with how long
// it must hold before it fires.
type candidate struct {
	Alert
	hold time.Duration
}

// seriesKey is check × target.
type seriesKey struct{ check, target string }

// byRegion groups the latest verdicts by check × target, then region.
func byRegion(vs []reporting.Verdict) map[seriesKey]map[string][]reporting.Verdict {
	out := map[seriesKey]map[string][]reporting.Verdict{}
	for _, v := range vs {
		k := seriesKey{v.Check, v.Target}
		if out[k] == nil {
			out[k] = map[string][]reporting.Verdict{}
		}
		out[k][v.Region] = append(out[k][v.Region], v)
	}
	return out
}

// quorumRule finds the regions where match holds for at least one fresh
// verdict (a region with several vantages counts once) and summarises them.
//
// held says the alert fires already. An expired verdict is not a recovery:
// for a held alert, a region without a fresh verdict that judges the pair
// keeps agreeing while its newest verdict is younger than keep (0: no
// limit) and either matched or judges nothing (state unknown: a restarted
// canary still warming up, before fall or rise runs). stale lists those
// regions. Stale verdicts never make a region agree with an alert that
// does not fire yet.
func quorumRule(regions map[string][]reporting.Verdict, now time.Time, held bool, keep time.Duration,
	match func(reporting.Verdict) bool) (agree []string, hits []reporting.Verdict, stale []string) {
	for region, vs := range regions {
		fresh := false
		var newest *reporting.Verdict
		for i, v := range vs {
			cur := v.Current(now)
			if cur != reporting.StateUnknown {
				fresh = true
				if match(v) {
					agree = append(agree, region)
					hits = append(hits, v)
					break
				}
			}
			if newest == nil || v.At.After(newest.At) {
				newest = &vs[i]
			}
		}
		judges := newest != nil && newest.State != "" && newest.State != reporting.StateUnknown
		if fresh || !held || newest == nil || (keep > 0 && now.Sub(newest.At) > keep) || (judges && !match(*newest)) {
			continue
		}
		agree = append(agree, region)
		hits = append(hits, *newest)
		stale = append(stale, region)
	}
	sort.Strings(agree)
	sort.Strings(stale)
	return agree, hits, stale
}

// judgedOnly returns regions with the verdicts of runs the agent could
// not make (reporting.Verdict.AgentFault) turned into verdicts that judge
// nothing (no state), for rules that read the run's own figures (a
// certificate): such a run has none, and must neither start nor end an
// alert. The down rule needs no such care: those verdicts keep the state
// of the runs before them.
func judgedOnly(regions map[string][]reporting.Verdict) map[string][]reporting.Verdict {
	var out map[string][]reporting.Verdict
	for r, vs := range regions {
		if !slices.ContainsFunc(vs, reporting.Verdict.AgentFault) {
			continue
		}
		if out == nil {
			out = maps.Clone(regions)
		}
		c := slices.Clone(vs)
		for i := range c {
			if c[i].AgentFault() {
				c[i].State = ""
			}
		}
		out[r] = c
	}
	if out == nil {
		return regions
	}
	return out
}

// staleSuffix tells, in a held alert's summary, which regions have no fresh
// verdict and when the newest one was.
func staleSuffix(stale []string, hits []reporting.Verdict) string {
	if len(stale) == 0 {
		return ""
	}
	var last time.Time
	for _, v := range hits {
		for _, r := range stale {
			if v.Region == r && v.At.After(last) {
				last = v.At
			}
		}
	}
	return fmt.Sprintf(" (no fresh verdict from %s since %s: kept firing until one says otherwise)",
		strings.Join(stale, ", "), last.UTC().Format(time.RFC3339))
}

// configured reports whether check × target is in the running config
// (always true when the config's pairs are not known).
func (e *evaluator) configured(check, target string) bool {
	if e.checks != nil && !e.checks[check] {
		return false
	}
	if e.pairs == nil {
		return true
	}
	return e.pairs[check][target]
}

// quorum is how many regions must agree on check: alerting.quorum, or 1
// for a check only one region judges.
func (e *evaluator) quorum(check string) int {
	if e.oneRegion[check] {
		return 1
	}
	return e.cfg.Quorum
}

// heldKey identifies a firing alert of rule for check × target in
// evaluator.held.
func heldKey(rule, check, target string) string { return rule + "\x00" + check + "\x00" + target }

// describe fills Cause, Err, TTFB and Artifact from the agreeing verdicts.
func describe(a *Alert, hits []reporting.Verdict, links linker) {
	counts := map[string]int{}
	for _, v := range hits {
		if v.Cause != "" {
			counts[v.Cause]++
		}
		if v.TTFB > a.TTFB {
			a.TTFB = v.TTFB
		}
	}
	best := 0
	for c, n := range counts {
		if n > best || (n == best && c < a.Cause) {
			a.Cause, best = c, n
		}
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].Region < hits[j].Region })
	for _, v := range hits {
		if a.Err == "" && v.Err != "" && (a.Cause == "" || v.Cause == a.Cause) {
			a.Err = v.Err
		}
		if a.ArtifactURL == "" && v.Artifact != "" {
			a.ArtifactURL = links.artifact(v.Artifact)
		}
	}
}

// evalLatest runs the rules that read only the latest verdicts: down, cert
// and dead-man.
func (e *evaluator) evalLatest(latest []reporting.Verdict) []candidate {
	var out []candidate
	c := e.cfg
	for k, regions := range byRegion(latest) {
		if !e.configured(k.check, k.target) {
			// A pair that left the config is not expected to run: its
			// alerts resolve.
			continue
		}
		if !c.Down.Disabled {
			agree, hits, stale := quorumRule(regions, e.now, e.held[heldKey(RuleDown, k.check, k.target)], c.DeadMan.ForgetAfter,
				func(v reporting.Verdict) bool { return v.State == reporting.StateUnhealthy })
			if len(agree) >= e.quorum(k.check) {
				a := Alert{Rule: RuleDown, Severity: c.Down.Severity, Check: k.check, Target: k.target, Regions: agree}
				recovering, lastFail := e.withLastFailures(hits)
				describe(&a, hits, e.links)
				why := causeSuffix(a.Cause, a.Err)
				if mixed := causesByRegion(hits, a.Cause); mixed != "" {
					// Err is one of the most common cause's verdicts'.
					why = ": " + mixed
					if a.Err != "" {
						why += " — " + a.Err
					}
				}
				var held string
				a.HeldUntil, held = heldSuffix(hits, e.now)
				a.Summary = fmt.Sprintf("%s down in %s (%s)%s%s%s%s", series(k.check, k.target),
					regionsN(len(agree)), strings.Join(agree, ", "), why, recoveringSuffix(recovering, lastFail),
					held, staleSuffix(stale, hits))
				out = append(out, candidate{Alert: a, hold: c.Down.For})
			}
		}
		if !c.Cert.Disabled {
			horizon := e.now.Add(time.Duration(c.CertExpiryDays) * 24 * time.Hour)
			agree, hits, _ := quorumRule(judgedOnly(regions), e.now, e.held[heldKey(RuleCert, k.check, k.target)], c.DeadMan.ForgetAfter,
				func(v reporting.Verdict) bool {
					return (!v.OK && v.Cause == "cert") ||
						(!v.CertExpiry.IsZero() && v.CertExpiry.Before(horizon))
				})
			if len(agree) >= e.quorum(k.check) {
				a := Alert{Rule: RuleCert, Severity: c.Cert.Severity, Check: k.check, Target: k.target, Regions: agree}
				describe(&a, hits, e.links)
				var soonest time.Time
				for _, v := range hits {
					if !v.CertExpiry.IsZero() && (soonest.IsZero() || v.CertExpiry.Before(soonest)) {
						soonest = v.CertExpiry
					}
				}
				if !soonest.IsZero() && soonest.Before(horizon) {
					a.Value = soonest.Sub(e.now).Hours() / 24
					a.Summary = fmt.Sprintf("%s certificate %s (%s; limit %s) in %s (%s)",
						series(k.check, k.target), certExpiryPhrase(soonest, e.now), soonest.UTC().Format(time.RFC3339),
						pluralN(c.CertExpiryDays, "day"), regionsN(len(agree)), strings.Join(agree, ", "))
				} else {
					a.Summary = fmt.Sprintf("%s certificate check failing in %s (%s)%s", series(k.check, k.target),
						regionsN(len(agree)), strings.Join(agree, ", "), causeSuffix("", a.Err))
				}
				out = append(out, candidate{Alert: a})
			}
		}
	}
	if !c.DeadMan.Disabled || !c.QuorumLost.Disabled {
		out = append(out, e.evalDeadMan(latest)...)
	}
	return out
}

// WriterMaxBackoff is the longest wait between a writer's retries: a
// canary's outbox retries a failed write to InfluxDB after 0.5s doubling up
// to 30s (influx.Options.MaxBackoff's default). After a store outage the
// verdicts queued meanwhile can therefore arrive up to this long after the
// store is readable again, which is why the dead-man rule waits that much
// longer than its window after a failed read (see evalDeadMan).
const WriterMaxBackoff = 30 * time.Second

// evalDeadMan finds region × check pairs whose newest verdict (any target,
// any vantage) is older than intervals × the check's interval. Pairs seen
// earlier by this alerter are remembered, so one that vanishes from the
// store still alerts. Only configured checks (e.checks, when known) can be
// silent: a check removed from the config is not expected to run. A pair
// must stay silent for dead_man.for (default 2 × its interval) more before
// its alert fires.
// A pair silent for DeadManForgetFor (dead_man.forget_after, longer for a
// check whose window and pending period reach it) is forgotten.
//
// After the store's reads failed (e.readFailedAt), a pair does not start
// firing until reads have worked for the dead-man window plus
// WriterMaxBackoff: during the outage the canaries could not write either,
// and their backlog arrives with the writers' retry backoff, so silence
// then says nothing about the canaries. An alert already firing
// (e.deadFiring) keeps firing.
func (e *evaluator) evalDeadMan(latest []reporting.Verdict) []candidate {
	for _, v := range latest {
		k := v.Region + "\x00" + v.Check
		s, ok := e.seen[k]
		switch {
		case !ok:
			// First sight: even a run the agent could not make starts
			// the clock.
			s.last = v
			if v.AgentFault() {
				s.fault = v
			}
		case !v.AgentFault() && v.At.After(s.last.At):
			s.last = v
			if !s.fault.At.After(v.At) {
				s.fault = reporting.Verdict{}
			}
		case v.AgentFault() && v.At.After(s.fault.At) && v.At.After(s.last.At):
			s.fault = v
		}
		e.seen[k] = s
	}
	var out []candidate
	byCheck := map[string]*checkRegions{}
	for k, s := range e.seen {
		v := s.last
		if v.Interval <= 0 {
			continue
		}
		limit := time.Duration(e.cfg.DeadMan.Intervals) * v.Interval
		silent := e.now.Sub(v.At)
		heard := v.At
		if s.fault.At.After(heard) {
			heard = s.fault.At
		}
		if e.now.Sub(heard) > DeadManForgetFor(e.cfg, v.Interval) {
			delete(e.seen, k)
			continue
		}
		if e.checks != nil && !e.checks[v.Check] {
			continue
		}
		cr := byCheck[v.Check]
		if cr == nil {
			cr = &checkRegions{}
			byCheck[v.Check] = cr
		}
		if silent <= limit {
			cr.reporting = append(cr.reporting, v.Region)
			continue
		}
		hold := e.cfg.DeadMan.For
		if hold == 0 {
			hold = 2 * v.Interval
		}
		if !e.readFailedAt.IsZero() && e.now.Sub(e.readFailedAt) <= limit+WriterMaxBackoff {
			// Silence says nothing yet (see above); alerts that fire
			// already keep firing.
			if e.held[heldKey(RuleQuorumLost, v.Check, "")] {
				cr.silent = append(cr.silent, v.Region)
			} else {
				cr.reporting = append(cr.reporting, v.Region)
			}
			if !e.deadFiring[k] {
				continue
			}
		} else {
			cr.silent = append(cr.silent, v.Region)
		}
		cr.hold = max(cr.hold, hold)
		if e.cfg.DeadMan.Disabled {
			continue
		}
		a := Alert{Rule: RuleDeadMan, Severity: e.cfg.DeadMan.Severity, Check: v.Check, Region: v.Region,
			Regions: []string{v.Region}, Value: silent.Seconds()}
		if f := s.fault; !f.At.IsZero() && e.now.Sub(f.At) <= limit {
			// The canary runs, but cannot make the runs: its own
			// trouble (no browser, no file descriptor), not the target's.
			a.Cause, a.Err = f.Cause, f.Err
			what := "no run judging a target seen"
			if !s.last.AgentFault() {
				what = "no run judging a target since " + v.At.UTC().Format(time.RFC3339)
			}
			a.Summary = fmt.Sprintf("check %s cannot run in region %s: %s for %s (limit %d × %s); the agent's own trouble, not the targets': %s",
				v.Check, v.Region, what, silent.Truncate(time.Second), e.cfg.DeadMan.Intervals, v.Interval, strings.TrimPrefix(causeSuffix(f.Cause, f.Err), ": "))
		} else {
			a.Summary = fmt.Sprintf("no verdict for check %s from region %s for %s (limit %d × %s)",
				v.Check, v.Region, silent.Truncate(time.Second), e.cfg.DeadMan.Intervals, v.Interval)
			// A silence may come from this process's own failing
			// writes; a pair that cannot run has its reason above.
			if e.writeErr != "" {
				a.Summary += "; verdict writes of the alerting process are failing, the likely reason: " + e.writeErr
			}
		}
		out = append(out, candidate{Alert: a, hold: hold})
	}
	if !e.cfg.QuorumLost.Disabled {
		out = append(out, e.quorumLost(byCheck)...)
	}
	return out
}

// quorumLost returns a quorum_lost candidate for every check with a
// dead-man silent region and fewer reporting regions than its quorum:
// its down, ttfb, burn_rate and cert_expiry alerts cannot fire, so a real
// outage would page nobody. It is pending as long as the silent regions'
// dead-man alerts (dead_man.for, default 2 × the check's interval).
func (e *evaluator) quorumLost(byCheck map[string]*checkRegions) []candidate {
	var out []candidate
	for check, cr := range byCheck {
		q := e.quorum(check)
		if len(cr.silent) == 0 || len(cr.reporting) >= q {
			continue
		}
		sort.Strings(cr.reporting)
		sort.Strings(cr.silent)
		var reports string
		switch len(cr.reporting) {
		case 0:
			reports = "no region reports"
		default:
			reports = fmt.Sprintf("only %s (%s) report", regionsN(len(cr.reporting)), strings.Join(cr.reporting, ", "))
			if len(cr.reporting) == 1 {
				reports += "s"
			}
		}
		qkey := "alerting.quorum"
		if e.oneRegion[check] {
			qkey = "its quorum (push.region)"
		}
		rules := e.cfg.quorumRules()
		need := q - len(cr.reporting)
		until := strings.Join(cr.silent, ", ")
		if need < len(cr.silent) {
			until = fmt.Sprintf("%d of %s", need, until)
		}
		verb := "reports"
		if need > 1 || (need == len(cr.silent) && len(cr.silent) > 1) {
			verb = "report"
		}
		a := Alert{Rule: RuleQuorumLost, Severity: e.cfg.QuorumLost.Severity, Check: check,
			Regions: slices.Clone(cr.silent), Value: float64(len(cr.reporting))}
		a.Summary = fmt.Sprintf("%s: %s, %s is %d: %s alerts for %s cannot fire until %s %s again",
			check, reports, qkey, q, rules, check, until, verb)
		out = append(out, candidate{Alert: a, hold: cr.hold})
	}
	return out
}

// checkRegions is, for quorum_lost, the regions that report a check and
// those dead-man silent, with the longest pending period among the latter.
type checkRegions struct {
	reporting, silent []string
	hold              time.Duration
}

// seenPair is what the dead_man rule remembers of a region × check: last,
// its newest verdict of a run that judged a target (or, before any, the
// first verdict seen), and fault, the newest verdict of a run the agent
// could not make (reporting.Verdict.AgentFault) after last; zero if none.
type seenPair struct {
	last, fault reporting.Verdict
}

// RawTTFBWindow is the longest TTFB SLO window computed from raw verdicts
// (exact p95). Longer windows use the per-minute rollups: the p95 of the
// minutes' p95s, each weighted by its TTFB samples — an approximation.
//
// Both count the runs that are TTFB samples (reporting.Verdict.TTFBSample):
// runs with a TTFB, and runs that timed out before their first byte, which
// rank above every TTFB and above any objective. A p95 that falls on one
// breaches the objective whatever it is (ttfbStat.timedOut).
const RawTTFBWindow = time.Hour

// ttfbStat is one region's TTFB figures over an SLO window.
type ttfbStat struct {
	// p95 is the p95; a lower bound when timedOut (how long a timed-out
	// run waited).
	p95 time.Duration
	// timedOut: the p95 falls on a run that timed out before its first
	// byte, so it is above any objective.
	timedOut bool
	runs     int // TTFB samples (raw) or TTFB samples in minutes with a p95 (rollups)
	// slow counts the runs over the SLO's objective (raw: runs with a
	// TTFB above it or timed out before their first byte), or, from the
	// rollups, the minutes whose p95 is over it (each holds at least one
	// such run: a lower bound).
	slow int
}

// TTFBMinSlowRuns is how many runs over the objective a region's window
// needs, besides a p95 over it, to breach: with fewer than 20 runs the
// nearest-rank p95 is the slowest run, so one slow run alone would
// breach (the default 5m window of a 30s check holds 10 runs).
const TTFBMinSlowRuns = 2

// over reports whether the window breaches objective: the p95 is above it
// and at least TTFBMinSlowRuns runs are.
func (st ttfbStat) over(objective time.Duration) bool {
	return (st.timedOut || st.p95 > objective) && st.slow >= TTFBMinSlowRuns
}

// regionTTFB computes every series' per-region TTFB p95 over the SLO window.
func regionTTFB(ctx context.Context, src reporting.HistorySource, rc rollupCaches, s SLO, now time.Time) (map[seriesKey]map[string]ttfbStat, error) {
	from := now.Add(-s.Window)
	out := map[seriesKey]map[string]ttfbStat{}
	if s.Window > RawTTFBWindow {
		rolls, err := rc.fetch(ctx, src, s.Check, s.Target, from, now)
		if err != nil {
			return nil, fmt.Errorf("slo %s: rollups: %w", s.Name, err)
		}
		type rk struct {
			seriesKey
			region string
		}
		minutes := map[rk][]reporting.Rollup{}
		for _, r := range rolls {
			if r.TTFBSamples() == 0 || !r.Minute.After(from) || r.Minute.After(now) {
				continue
			}
			k := rk{seriesKey{r.Check, r.Target}, r.Region}
			minutes[k] = append(minutes[k], r)
		}
		for k, rs := range minutes {
			// Minutes whose p95 timed out rank above every other.
			sort.Slice(rs, func(i, j int) bool {
				if a, b := rs[i].TTFBP95TimedOut(), rs[j].TTFBP95TimedOut(); a != b {
					return b
				}
				return rs[i].TTFBP95 < rs[j].TTFBP95
			})
			total := 0
			for _, r := range rs {
				total += r.TTFBSamples()
			}
			need, acc := int(math.Ceil(0.95*float64(total))), 0
			st := ttfbStat{runs: total}
			for _, r := range rs {
				if r.TTFBP95TimedOut() || r.TTFBP95 > s.TTFBP95 {
					st.slow++
				}
			}
			for _, r := range rs {
				acc += r.TTFBSamples()
				if acc >= need {
					st.p95, st.timedOut = r.TTFBP95, r.TTFBP95TimedOut()
					break
				}
			}
			if out[k.seriesKey] == nil {
				out[k.seriesKey] = map[string]ttfbStat{}
			}
			out[k.seriesKey][k.region] = st
		}
		return out, nil
	}
	hist, err := src.History(ctx, reporting.HistoryQuery{Check: s.Check, Target: s.Target, From: from, To: now})
	if err != nil {
		return nil, fmt.Errorf("slo %s: history: %w", s.Name, err)
	}
	type samples struct {
		measured, waits []time.Duration
		slow            int
	}
	per := map[seriesKey]map[string]*samples{}
	for _, v := range hist {
		d, timedOut, ok := v.TTFBSample()
		if !ok || v.At.After(now) || !v.At.After(from) {
			continue
		}
		k := seriesKey{v.Check, v.Target}
		if per[k] == nil {
			per[k] = map[string]*samples{}
		}
		sm := per[k][v.Region]
		if sm == nil {
			sm = &samples{}
			per[k][v.Region] = sm
		}
		if timedOut || d > s.TTFBP95 {
			sm.slow++
		}
		if timedOut {
			sm.waits = append(sm.waits, d)
		} else {
			sm.measured = append(sm.measured, d)
		}
	}
	for k, regions := range per {
		out[k] = map[string]ttfbStat{}
		for region, sm := range regions {
			p := reporting.TTFBPercentileOf(sm.measured, sm.waits, 0.95)
			out[k][region] = ttfbStat{p95: p.D, timedOut: p.TimedOut, runs: p.Runs, slow: sm.slow}
		}
	}
	return out, nil
}

// evalTTFB runs the TTFB rule for one SLO with ttfb_p95, over the
// configured pairs only.
func (e *evaluator) evalTTFB(ctx context.Context, s SLO) ([]candidate, error) {
	stats, err := regionTTFB(ctx, e.src, e.rc, s, e.now)
	if err != nil {
		return nil, err
	}
	var out []candidate
	for k, regions := range stats {
		if !e.configured(k.check, k.target) {
			// A pair that left the config is not expected to run: its
			// alert resolves at once, whatever slow runs the window holds.
			continue
		}
		var agree []string
		var worst time.Duration
		timedOut := false
		for region, st := range regions {
			if st.runs < e.cfg.TTFB.MinSamples {
				continue
			}
			if st.over(s.TTFBP95) {
				agree = append(agree, region)
				worst = max(worst, st.p95)
				timedOut = timedOut || st.timedOut
			}
		}
		if len(agree) < e.quorum(k.check) {
			continue
		}
		sort.Strings(agree)
		a := Alert{Rule: RuleTTFB, Severity: e.cfg.TTFB.Severity, SLO: s.Name, Check: k.check, Target: k.target,
			Regions: agree, TTFB: worst, Value: worst.Seconds()}
		a.Summary = fmt.Sprintf("%s TTFB p95 over %s up to %s, objective %s, in %s (%s)",
			series(k.check, k.target), shortDur(s.Window), fmtTTFB(worst), s.TTFBP95, regionsN(len(agree)), strings.Join(agree, ", "))
		if timedOut {
			// The p95 falls on runs that got no first byte within their
			// timeout: the figure is a lower bound.
			a.Summary = fmt.Sprintf("%s TTFB p95 over %s above %s (runs timed out before their first byte), objective %s, in %s (%s)",
				series(k.check, k.target), shortDur(s.Window), fmtTTFB(worst), s.TTFBP95, regionsN(len(agree)), strings.Join(agree, ", "))
		}
		out = append(out, candidate{Alert: a, hold: e.cfg.TTFB.For})
	}
	return out, nil
}

// P95 is the nearest-rank 95th percentile of ds (0 for none). ds is sorted
// in place.
func P95(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	i := int(math.Ceil(0.95*float64(len(ds)))) - 1
	return ds[max(i, 0)]
}

// BurnWindow is one multi-window burn-rate pair: the alert condition holds
// when the burn rate over both Long and Short exceeds Factor.
type BurnWindow struct {
	Severity    string
	Factor      float64
	Long, Short time.Duration
}

// Name is the pair's display form, e.g. "1h/5m".
func (w BurnWindow) Name() string { return shortDur(w.Long) + "/" + shortDur(w.Short) }

// BurnWindows are the standard pairs for a 30-day SLO (Google SRE workbook,
// "Alerting on SLOs", multiwindow multi-burn-rate alerts).
var BurnWindows = []BurnWindow{
	{SeverityPage, 14.4, time.Hour, 5 * time.Minute},
	{SeverityPage, 6, 6 * time.Hour, 30 * time.Minute},
	{SeverityTicket, 3, 24 * time.Hour, 2 * time.Hour},
	{SeverityTicket, 1, 72 * time.Hour, 6 * time.Hour},
}

// counts is failed and total runs.
type counts struct{ failed, total int }

// expected returns c with total raised to the runs a check run every
// interval makes in window (window ÷ interval, rounded down), when it saw
// fewer: a young store's or a new check's few runs count against a full
// window, as if the runs not made had passed, so 1 failure in a fresh
// store's first 5 runs is not a 200× burn of a 99.9% objective. The runs
// a region did make outweigh this once they reach it. interval 0
// (unknown): c unchanged.
func (c counts) expected(window, interval time.Duration) counts {
	if interval > 0 {
		c.total = max(c.total, int(window/interval))
	}
	return c
}

// ratio is failed/total, or -1 without runs.
func (c counts) ratio() float64 {
	if c.total == 0 {
		return -1
	}
	return float64(c.failed) / float64(c.total)
}

// evalBurn runs the burn-rate rule for one SLO with an objective. The error
// ratio is per region (failed runs / runs in that region's rollups); a pair
// holds when at least quorum regions burn above the factor over both
// windows, each of them with at least burn_rate.min_runs runs in the long
// window.
func (e *evaluator) evalBurn(ctx context.Context, s SLO) ([]candidate, error) {
	longest := time.Duration(0)
	for _, w := range BurnWindows {
		if w.Severity == SeverityTicket && e.cfg.BurnRate.NoTicket {
			continue
		}
		longest = max(longest, w.Long)
	}
	type rk struct {
		seriesKey
		region string
	}
	// Every region's failed/total over every pair's windows.
	type acc struct{ long, short []counts }
	accs := map[rk]*acc{}
	accOf := func(check, target, region string) *acc {
		k := rk{seriesKey{check, target}, region}
		a := accs[k]
		if a == nil {
			a = &acc{long: make([]counts, len(BurnWindows)), short: make([]counts, len(BurnWindows))}
			accs[k] = a
		}
		return a
	}
	if reporting.CountsRollups(e.src) {
		// The store sums each window (the minutes after now − window, up
		// to now): a few rows per series, where the minutes of 3 days are
		// 4,320 per series to keep and walk.
		sums := map[time.Duration][]reporting.RollupCount{}
		for _, w := range BurnWindows {
			if w.Severity == SeverityTicket && e.cfg.BurnRate.NoTicket {
				continue
			}
			for _, d := range []time.Duration{w.Long, w.Short} {
				if _, ok := sums[d]; ok {
					continue
				}
				from := e.now.Add(-d).Truncate(time.Minute).Add(time.Minute)
				cs, err := reporting.CountRollups(ctx, e.src, reporting.HistoryQuery{Check: s.Check, Target: s.Target, From: from, To: e.now}, 0)
				if err != nil {
					return nil, fmt.Errorf("slo %s: rollups: %w", s.Name, err)
				}
				sums[d] = cs
			}
		}
		for i, w := range BurnWindows {
			for _, side := range []struct {
				d   time.Duration
				sel func(*acc) *counts
			}{{w.Long, func(a *acc) *counts { return &a.long[i] }}, {w.Short, func(a *acc) *counts { return &a.short[i] }}} {
				for _, c := range sums[side.d] {
					if !e.configured(c.Check, c.Target) {
						continue
					}
					n := side.sel(accOf(c.Check, c.Target, c.Region))
					n.failed += c.Failed
					n.total += c.Total
				}
			}
		}
	} else {
		rolls, err := e.rc.fetch(ctx, e.src, s.Check, s.Target, e.now.Add(-longest), e.now)
		if err != nil {
			return nil, fmt.Errorf("slo %s: rollups: %w", s.Name, err)
		}
		// One pass over the minutes.
		for _, r := range rolls {
			if r.Minute.After(e.now) {
				continue
			}
			if !e.configured(r.Check, r.Target) {
				// Only configured pairs burn: the alerts of a pair that left
				// the config resolve, whatever its rollups say.
				continue
			}
			a := accOf(r.Check, r.Target, r.Region)
			for i, w := range BurnWindows {
				if r.Minute.After(e.now.Add(-w.Long)) {
					a.long[i].failed += r.Failed
					a.long[i].total += r.Total
				}
				if r.Minute.After(e.now.Add(-w.Short)) {
					a.short[i].failed += r.Failed
					a.short[i].total += r.Total
				}
			}
		}
	}
	budget := 1 - s.Objective.Fraction()
	// per series, per severity: the firing pairs and their agreeing regions.
	type hit struct {
		windows []string
		regions map[string]bool
		value   float64
		short   time.Duration // the fastest holding pair's short window
	}
	hits := map[seriesKey]map[string]*hit{}
	for i, w := range BurnWindows {
		if w.Severity == SeverityTicket && e.cfg.BurnRate.NoTicket {
			continue
		}
		burning := map[seriesKey][]float64{}
		regions := map[seriesKey][]string{}
		for k, a := range accs {
			if a.long[i].total < e.cfg.BurnRate.MinRuns {
				continue
			}
			iv := e.intervals[k.check+"\x00"+k.target+"\x00"+k.region]
			lr, sr := a.long[i].expected(w.Long, iv).ratio(), a.short[i].expected(w.Short, iv).ratio()
			if lr < 0 || sr < 0 {
				continue
			}
			if lr/budget > w.Factor && sr/budget > w.Factor {
				burning[k.seriesKey] = append(burning[k.seriesKey], lr/budget)
				regions[k.seriesKey] = append(regions[k.seriesKey], k.region)
			}
		}
		for sk, burns := range burning {
			if len(burns) < e.quorum(sk.check) {
				continue
			}
			sort.Sort(sort.Reverse(sort.Float64Slice(burns)))
			if hits[sk] == nil {
				hits[sk] = map[string]*hit{}
			}
			h := hits[sk][w.Severity]
			if h == nil {
				h = &hit{regions: map[string]bool{}}
				hits[sk][w.Severity] = h
			}
			if len(h.windows) == 0 {
				// The fastest pair that holds (BurnWindows is fastest
				// first): the burn now, not an earlier, worse outage
				// still inside a longer window.
				h.value = burns[e.quorum(sk.check)-1]
				h.short = w.Short
			}
			h.windows = append(h.windows, w.Name())
			for _, r := range regions[sk] {
				h.regions[r] = true
			}
		}
	}
	var out []candidate
	for sk, bySev := range hits {
		for sev, h := range bySev {
			var regs []string
			for r := range h.regions {
				regs = append(regs, r)
			}
			sort.Strings(regs)
			a := Alert{Rule: RuleBurnRate, Severity: sev, SLO: s.Name, Check: sk.check, Target: sk.target,
				Regions: regs, Value: h.value, Windows: h.windows}
			a.Cause, a.Err = e.recentFailure(ctx, sk, regs, h.short)
			a.Summary = fmt.Sprintf("%s error budget of %s (objective %s) burning %.1f× over %s in %s (%s)%s",
				series(sk.check, sk.target), s.Name, s.Objective, h.value, strings.Join(h.windows, ", "),
				regionsN(len(regs)), strings.Join(regs, ", "), causeSuffix(a.Cause, a.Err))
			out = append(out, candidate{Alert: a})
		}
	}
	return out, nil
}

// recentFailure is why check × target burns its budget in regions: the
// most common cause of the newest runs that counted as failed (Unavailable)
// in the last window (the short window of the fastest holding pair, at most
// RawTTFBWindow, the most raw history a rule reads), ties to the first by
// name, and the error of the newest of them with that cause. It reads the
// newest recentFailureRuns failed runs of each region (reporting.DownRuns),
// not the window's every run: an hour of a wide outage is that many rows
// per firing series at every evaluation, not 360 per region. "" when the
// history has none or cannot be read: the alert fires without them.
func (e *evaluator) recentFailure(ctx context.Context, sk seriesKey, regions []string, window time.Duration) (cause, err string) {
	if e.src == nil || window <= 0 {
		return "", ""
	}
	counts := map[string]int{}
	var fails []reporting.Verdict
	for _, region := range regions {
		hist, herr := e.src.History(ctx, reporting.HistoryQuery{Check: sk.check, Target: sk.target, Region: region,
			From: e.now.Add(-min(window, RawTTFBWindow)), Runs: reporting.DownRuns, Limit: recentFailureRuns})
		if herr != nil {
			return "", ""
		}
		for _, v := range hist {
			if v.Target != sk.target || v.Region != region || !v.Unavailable() {
				continue
			}
			fails = append(fails, v)
			if v.Cause != "" {
				counts[v.Cause]++
			}
		}
	}
	best := 0
	for c, n := range counts {
		if n > best || (n == best && c < cause) {
			cause, best = c, n
		}
	}
	var newest time.Time
	for _, v := range fails {
		if v.Err != "" && v.Cause == cause && v.At.After(newest) {
			err, newest = v.Err, v.At
		}
	}
	return cause, err
}

// recentFailureRuns is how many of a region's newest failed runs
// recentFailure weighs.
const recentFailureRuns = 20

func series(check, target string) string {
	if target == "" || target == check {
		return check
	}
	return check + " × " + target
}

// causesByRegion is "" when the verdicts of hits that have a cause all
// have the same one; otherwise each cause with its regions, the most
// common first (cause, which describe chose), then by count and name:
// "checksum (ap-south, eu-west), connect_refused (us-east)". Alert.Cause
// stays the most common one.
func causesByRegion(hits []reporting.Verdict, cause string) string {
	regions := map[string][]string{}
	for _, v := range hits {
		if v.Cause != "" {
			regions[v.Cause] = append(regions[v.Cause], v.Region)
		}
	}
	if len(regions) < 2 {
		return ""
	}
	causes := make([]string, 0, len(regions))
	for c, rs := range regions {
		sort.Strings(rs)
		causes = append(causes, c)
	}
	sort.Slice(causes, func(i, j int) bool {
		ci, cj := causes[i], causes[j]
		if (ci == cause) != (cj == cause) {
			return ci == cause
		}
		if len(regions[ci]) != len(regions[cj]) {
			return len(regions[ci]) > len(regions[cj])
		}
		return ci < cj
	})
	parts := make([]string, len(causes))
	for i, c := range causes {
		parts[i] = c + " (" + strings.Join(regions[c], ", ") + ")"
	}
	return strings.Join(parts, ", ")
}

func causeSuffix(cause, err string) string {
	switch {
	case cause != "" && err != "":
		return ": " + cause + " (" + err + ")"
	case cause != "":
		return ": " + cause
	case err != "":
		return ": " + err
	}
	return ""
}

// shortDur prints 5m, 1h, 1d instead of 5m0s, 1h0m0s, 24h0m0s.
func shortDur(d time.Duration) string {
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// pluralN is "1 day", "3 days".
func pluralN(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// regionsN is "1 region", "2 regions".
func regionsN(n int) string { return pluralN(n, "region") }

// certExpiryPhrase says how long a certificate has left as the checks'
// cert_min_days message does (checks.expiryText), so the alert and the
// check read the same: whole days, rounded down ("expires in 9 days" for
// 9.97 days, "expires in 1 day", "expires in less than a day"), or once
// expired "expired 3 days ago", "expired less than a day ago".
func certExpiryPhrase(notAfter, now time.Time) string {
	days := func(d time.Duration) string {
		switch n := int(d / (24 * time.Hour)); n {
		case 0:
			return "less than a day"
		case 1:
			return "1 day"
		default:
			return fmt.Sprintf("%d days", n)
		}
	}
	if !notAfter.After(now) {
		return "expired " + days(now.Sub(notAfter)) + " ago"
	}
	return "expires in " + days(notAfter.Sub(now))
}

// lastFailureTimeout bounds the store read of withLastFailures.
const lastFailureTimeout = 5 * time.Second

// withLastFailures gives each verdict of hits that is unhealthy although
// its run passed (the pair still needs rise passes, or flap damping holds
// it down) the Cause, Err and Artifact of its vantage's last failing run,
// read from the store's history, so a down alert always says what failed:
// the runs that passed since say nothing about it. The failure is looked
// for over the runs since it (the verdict's Streak of passes, each at most
// 2 intervals apart, plus a minute), so it is kept for as long as the pair
// stays unhealthy. recovering lists (sorted) the regions of those verdicts
// and last is the newest failing run found; a verdict whose failure is not
// found (a store read error, or its history pruned) is left as it is.
func (e *evaluator) withLastFailures(hits []reporting.Verdict) (recovering []string, last time.Time) {
	if e.src == nil {
		return nil, time.Time{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), lastFailureTimeout)
	defer cancel()
	seen := map[string]bool{}
	for i, v := range hits {
		// A run the agent could not make says nothing either: its
		// verdict keeps the state the failing runs before it gave.
		agent := v.AgentFault()
		if (!v.OK && !agent) || v.State != reporting.StateUnhealthy {
			continue
		}
		if !agent && !seen[v.Region] {
			seen[v.Region] = true
			recovering = append(recovering, v.Region)
		}
		// The store holds the run's own date; rebase may have moved At.
		at := v.At
		if s := e.arrived[v.Key()]; s != nil {
			at = at.Add(-s.shift)
		}
		back := time.Hour
		if v.Interval > 0 {
			back = 2*time.Duration(max(v.Streak, 1)+1)*v.Interval + time.Minute
		}
		if agent {
			back += time.Hour // and the agent's own trouble since
		}
		hist, err := e.src.History(ctx, reporting.HistoryQuery{Check: v.Check, Target: v.Target, Region: v.Region,
			From: at.Add(-back)})
		if err != nil {
			continue
		}
		var fail *reporting.Verdict
		for j := range hist {
			h := &hist[j]
			if h.OK || h.AgentFault() || h.Vantage != v.Vantage || h.At.After(at) {
				continue
			}
			if fail == nil || h.At.After(fail.At) {
				fail = h
			}
		}
		if fail == nil {
			continue
		}
		hits[i].Cause, hits[i].Err = fail.Cause, fail.Err
		if fail.Artifact != "" {
			hits[i].Artifact = fail.Artifact
		}
		if failAt := fail.At.Add(v.At.Sub(at)); failAt.After(last) {
			last = failAt
		}
	}
	sort.Strings(recovering)
	return recovering, last
}

// recoveringSuffix tells, in a down alert's summary, the regions that are
// still unhealthy although their latest run passed, and when the failure
// the alert reports was seen.
func recoveringSuffix(regions []string, last time.Time) string {
	if len(regions) == 0 {
		return ""
	}
	s := "; latest run passed in " + strings.Join(regions, ", ")
	if !last.IsZero() {
		s += " (last failure " + last.UTC().Format(time.RFC3339) + ")"
	}
	return s
}

// heldSuffix tells, in a down alert's summary, that flap damping holds the
// pair down: the latest end of the hold-downs of hits still ahead of now
// (returned too; zero when none is), and the regions held.
func heldSuffix(hits []reporting.Verdict, now time.Time) (time.Time, string) {
	var until time.Time
	var regions []string
	for _, v := range hits {
		if !v.HeldUntil.After(now) {
			continue
		}
		if !slices.Contains(regions, v.Region) {
			regions = append(regions, v.Region)
		}
		if v.HeldUntil.After(until) {
			until = v.HeldUntil
		}
	}
	if until.IsZero() {
		return until, ""
	}
	sort.Strings(regions)
	return until, "; held down by flap damping until " + until.UTC().Format(time.RFC3339) + " (" + strings.Join(regions, ", ") + ")"
}

// quorumRules names the enabled rules a quorum of regions must agree on,
// "down, ttfb, burn_rate and cert_expiry": what a lost quorum blinds.
func (c Config) quorumRules() string {
	var on []string
	for _, r := range []struct {
		name string
		off  bool
	}{{"down", c.Down.Disabled}, {"ttfb", c.TTFB.Disabled}, {"burn_rate", c.BurnRate.Disabled}, {"cert_expiry", c.Cert.Disabled}} {
		if !r.off {
			on = append(on, r.name)
		}
	}
	rules := strings.Join(on, ", ")
	if i := strings.LastIndex(rules, ", "); i >= 0 {
		rules = rules[:i] + " and " + rules[i+2:]
	}
	return rules
}
