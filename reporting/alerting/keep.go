package alerting

import "time"

// TTFBKeepMax caps the default ttfb.keep_firing_for: the SLO's window, at
// most this long.
const TTFBKeepMax = time.Hour

// keepFiringFor is how long the firing alert a keeps firing after its
// condition stopped holding, under cfg and slos: the rule's
// keep_firing_for, or its default (see DownRule, TTFBRule and
// BurnRateRule). 0 for the rules without one (cert_expiry, dead_man).
func keepFiringFor(cfg Config, slos []SLO, a Alert) time.Duration {
	switch a.Rule {
	case RuleDown:
		return cfg.Down.KeepFiringFor
	case RuleTTFB:
		if !cfg.TTFB.keepDefault {
			return cfg.TTFB.KeepFiringFor
		}
		for _, s := range slos {
			if s.Name == a.SLO {
				return ttfbKeepDefault(s)
			}
		}
	case RuleBurnRate:
		if !cfg.BurnRate.keepDefault {
			return cfg.BurnRate.KeepFiringFor
		}
		// The slowest pair that held: its short window is how long the
		// ratio takes to move past a recovery.
		var keep time.Duration
		for _, name := range a.Windows {
			for _, w := range BurnWindows {
				if w.Name() == name {
					keep = max(keep, w.Short)
				}
			}
		}
		return keep
	}
	return 0
}

// KeepFiringDefaults reports whether c leaves ttfb.keep_firing_for and
// burn_rate.keep_firing_for at their defaults: omitted, where an explicit
// 0s (Config.SetKeys) keeps nothing firing. Generators of other rule
// formats (Grafana's) use it to hold alerts as the alerter does.
func (c Config) KeepFiringDefaults() (ttfb, burn bool) {
	return c.TTFB.KeepFiringFor == 0 && !c.set["ttfb.keep_firing_for"],
		c.BurnRate.KeepFiringFor == 0 && !c.set["burn_rate.keep_firing_for"]
}

// ttfbKeepDefault is the default ttfb.keep_firing_for of s: its window, at
// most TTFBKeepMax.
func ttfbKeepDefault(s SLO) time.Duration { return min(s.Window, TTFBKeepMax) }

// burnKeepProm is the keep_firing_for of the generated burn-rate alert of
// severity sev: burn_rate.keep_firing_for when set, else the longest short
// window of the severity's pairs (one Prometheus rule ORs them, and cannot
// tell which held).
func burnKeepProm(cfg Config, sev string) time.Duration {
	if !cfg.BurnRate.keepDefault {
		return cfg.BurnRate.KeepFiringFor
	}
	var keep time.Duration
	for _, w := range BurnWindows {
		if w.Severity == sev {
			keep = max(keep, w.Short)
		}
	}
	return keep
}

// stillJudged reports whether the running config still judges the firing
// alert a: its rule is enabled, its SLO (for ttfb and burn_rate) still has
// that objective for that check, and its pair is configured. An alert the
// config no longer judges resolves at once, without keep_firing_for: a
// removed target, check, SLO or rule is not a flapping condition. a.mu
// held.
func (a *Alerter) stillJudged(al Alert) bool {
	e := evaluator{checks: a.checks, pairs: a.pairs}
	if !e.configured(al.Check, al.Target) {
		return false
	}
	switch al.Rule {
	case RuleDown:
		return !a.cfg.Down.Disabled
	case RuleTTFB, RuleBurnRate:
		if (al.Rule == RuleTTFB && a.cfg.TTFB.Disabled) || (al.Rule == RuleBurnRate && a.cfg.BurnRate.Disabled) {
			return false
		}
		if al.Rule == RuleBurnRate && al.Severity == SeverityTicket && a.cfg.BurnRate.NoTicket {
			return false
		}
		for _, s := range a.slos {
			if s.Name != al.SLO || s.Check != al.Check || (s.Target != "" && s.Target != al.Target) {
				continue
			}
			if al.Rule == RuleTTFB {
				return s.TTFBP95 > 0
			}
			return s.Objective > 0
		}
		return false
	}
	return true
}
