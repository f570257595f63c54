// Package alerting evaluates vigil's alert rules over the verdict store and
// notifies receivers.
//
// Rules (see Config): down (at least quorum regions report fresh unhealthy
// verdicts for a check × target for `for`), TTFB SLO breach (the p95 over
// the SLO window above the objective in at least quorum regions),
// availability multi-window multi-burn-rate (page 14.4× 1h/5m and 6×
// 6h/30m, ticket 3× 1d/2h and 1× 3d/6h, in at least quorum regions),
// certificate (quorum regions report cause "cert") and dead-man (a region ×
// check without a verdict for `intervals` check intervals).
//
// Alerts are grouped by alerting.group_by (rule × check × severity by
// default); a group is notified when it
// starts firing (after group_wait), when its set of firing alerts changes,
// every repeat_interval while it fires, and once when it resolves.
// Maintenance windows (cron + duration) silence notifications. Receivers:
// generic JSON webhook, Slack incoming webhook, PagerDuty Events API v2 and
// Alertmanager API v2; each delivery is queued per receiver and retried with
// exponential backoff, so an evaluation never waits on a receiver.
// With Options.StatePath the alert and group state is saved to a file and
// restored by New, so a restart neither re-notifies firing alerts nor loses
// the resolve of those that cleared meanwhile.
package alerting

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Rule names, the `rule` label of every alert.
const (
	RuleDown     = "down"
	RuleTTFB     = "ttfb"
	RuleBurnRate = "burn_rate"
	RuleCert     = "cert_expiry"
	RuleDeadMan  = "dead_man"
	// RuleQuorumLost is about a check: fewer regions report it than
	// alerting.quorum, so its quorum rules cannot fire.
	RuleQuorumLost = "quorum_lost"
	// RuleLiveErrors is about a proxy pool × origin, not a check: its
	// alerts' Check is the pool and Target the origin.
	RuleLiveErrors = "live_errors"
)

// AllRules lists the rules in documentation order.
var AllRules = []string{RuleDown, RuleTTFB, RuleBurnRate, RuleCert, RuleDeadMan, RuleQuorumLost, RuleLiveErrors}

// alertNames maps a rule to the `alertname` label.
var alertNames = map[string]string{
	RuleDown:     "VigilCheckDown",
	RuleTTFB:     "VigilTTFBSLOBreach",
	RuleBurnRate: "VigilErrorBudgetBurn",
	RuleCert:     "VigilCertificate",
	RuleDeadMan:  "VigilCanarySilent",
	// Too few regions report a check for its quorum rules to fire.
	RuleQuorumLost: "VigilQuorumLost",
	// The proxies' live traffic to an origin fails.
	RuleLiveErrors: "VigilLiveTrafficFailing",
}

// Alert is one firing (or just resolved) alert.
type Alert struct {
	// Rule is one of the Rule* names; Name is the alertname label.
	Rule, Name string
	// Severity is page, ticket or warning.
	Severity string
	// SLO is the SLO's name for ttfb and burn_rate alerts.
	SLO string
	// Check and Target identify the series; Target is "" for dead_man.
	Check, Target string
	// Tier is the check's tier (shallow, deep or synthetic) as its newest
	// verdict says, for routing; "" when no verdict of the check is known.
	Tier string
	// Region is set for dead_man alerts only: the silent region.
	Region string
	// Regions are the regions that agree on the condition, sorted.
	Regions []string
	// Cause is the most common failure cause among Regions' latest
	// verdicts; for burn_rate, among their failed runs of the fastest
	// holding pair's short window (at most the last hour).
	Cause string
	// Err is one of those verdicts' failure reason (for burn_rate, the
	// newest failed run's with Cause).
	Err string
	// TTFB is the highest TTFB among Regions: the latest run's for down and
	// cert, the window p95 for ttfb.
	TTFB time.Duration
	// Value is the rule's figure: the burn rate for burn_rate (the
	// quorum-th highest region's long-window burn of the fastest firing
	// pair), the p95 in seconds for ttfb, the silence in seconds for dead_man.
	Value float64
	// Windows lists the burn-rate pairs over their threshold, e.g. "1h/5m".
	Windows []string
	// Summary is a one-line human description.
	Summary string
	// StatusURL links to the check on the status page; ArtifactURL to the
	// failure screenshot; RunbookURL to the runbook. Each may be "".
	StatusURL, ArtifactURL, RunbookURL string
	// HeldUntil is, for a down alert while flap damping holds the pair
	// down in one of its regions, the latest end of those holds (the
	// verdicts' held_until); zero otherwise.
	HeldUntil time.Time
	// StartsAt is when the alert started firing (after the rule's `for`);
	// EndsAt when it resolved (zero while firing). Alertmanager's startsAt
	// is StartsAt.
	StartsAt, EndsAt time.Time
	// Since is when the condition started to hold: the first evaluation that
	// found it (for down, the first after quorum regions turned
	// unhealthy), so at most evaluation_interval after the verdicts said so.
	// Since ≤ StartsAt.
	Since time.Time
	// Silenced names the maintenance window that silences the alert, or "".
	Silenced string
	// Labels are the alert's identity (alertname, rule, severity, check,
	// target, slo, region, source="vigil") and its tier, and for
	// live_errors pool and origin (its check and target again, named as
	// the generated rules name them); Fingerprint hashes them but tier, an
	// attribute of the check that a config change may alter without making
	// it another alert, and pool and origin.
	Labels      map[string]string
	Fingerprint string
}

// MarshalJSON writes the snake_case form of the webhook payload's alerts
// (WebhookAlert), e.g. for /api/v1/alerts.
func (a Alert) MarshalJSON() ([]byte, error) { return json.Marshal(webhookAlert(a)) }

// Resolved reports whether the alert has ended.
func (a Alert) Resolved() bool { return !a.EndsAt.IsZero() }

// finish fills Name, Labels and Fingerprint from the identity fields.
func (a *Alert) finish() {
	a.Name = alertNames[a.Rule]
	a.Labels = map[string]string{
		"alertname": a.Name,
		"rule":      a.Rule,
		"severity":  a.Severity,
		"check":     a.Check,
		"source":    "vigil",
	}
	for k, v := range map[string]string{"target": a.Target, "slo": a.SLO, "region": a.Region} {
		if v != "" {
			a.Labels[k] = v
		}
	}
	keys := make([]string, 0, len(a.Labels))
	for k := range a.Labels {
		keys = append(keys, k)
	}
	if a.Tier != "" {
		a.Labels["tier"] = a.Tier
	}
	if a.Rule == RuleLiveErrors {
		// The labels of the generated Prometheus and Grafana rules, so one
		// Alertmanager route, silence or inhibit rule matches the alert
		// whichever fired it. Check and target stay (silences and routes
		// that name them keep working); copies of them, pool and origin
		// are not hashed: the fingerprint, and so the alert's identity in
		// the state, history and receivers, stays what it was.
		a.Labels["pool"], a.Labels["origin"] = a.Check, a.Target
	}
	sort.Strings(keys)
	h := fnv.New64a()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(a.Labels[k]))
		h.Write([]byte{0})
	}
	a.Fingerprint = strconv.FormatUint(h.Sum64(), 16)
}

func sortAlerts(as []Alert) {
	sort.Slice(as, func(i, j int) bool { return alertLess(as[i], as[j]) })
}

// alertLess orders alerts by rule, check, target, region, severity, SLO.
func alertLess(x, y Alert) bool {
	if x.Rule != y.Rule {
		return x.Rule < y.Rule
	}
	return strings.Join([]string{x.Check, x.Target, x.Region, x.Severity, x.SLO}, "\x00") <
		strings.Join([]string{y.Check, y.Target, y.Region, y.Severity, y.SLO}, "\x00")
}
