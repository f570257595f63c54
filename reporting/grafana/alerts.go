package grafana

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/expr"

	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// SLO figures the alert rules and the dashboards' thresholds are built on.
const (
	// SLOTarget is the default availability objective (Options.Objective):
	// share of passing runs, 0..1.
	SLOTarget = 0.999
	// TTFBP95ThresholdMS is the default TTFB p95 objective in milliseconds
	// (Options.TTFBP95).
	TTFBP95ThresholdMS = 600.0
	// BurnRateFast is the fast-burn multiple of the error budget (Google SRE
	// workbook: 2 % of a 30-day budget in 1 h), checked over 1 h and 5 m.
	BurnRateFast = 14.4
	// BurnRateLong and BurnRateShort are the fast-burn windows; the burn
	// rule's query reads the long one.
	BurnRateLong, BurnRateShort = time.Hour, 5 * time.Minute
	// BurnRateSlow is the second page pair's multiple of the error budget
	// (5 % of a 30-day budget in 6 h), over BurnRateSlowLong and
	// BurnRateSlowShort: rule vigil-availability-burn-6h.
	BurnRateSlow                        = 6.0
	BurnRateSlowLong, BurnRateSlowShort = 6 * time.Hour, 30 * time.Minute
	// CertExpiryDays is the horizon of the certificate rule in days, as
	// the alerter's cert_expiry_days (default 14).
	CertExpiryDays = 14
	// TTFBWindow is the window of the TTFB p95 rule.
	TTFBWindow = 10 * time.Minute
	// TTFBMinSamples is how many runs with a TTFB a region needs in the
	// window for its p95 to count, as the alerter's ttfb.min_samples
	// (default 3).
	TTFBMinSamples = 3
	// BurnMinRuns is how many runs a region needs in the long window to
	// count as burning, as the alerter's burn_rate.min_runs (default 10):
	// a region's first failed run is not a burn rate.
	BurnMinRuns = 10
	// Quorum is the default of Options.Quorum: how many regions must agree
	// before a rule pages, as the
	// alerter's alerting.quorum: the origin-down rule needs the target
	// unhealthy in this many regions, the burn-rate rule this many regions
	// burning, so one vantage's network trouble pages nobody. Keep it
	// equal to the alerter's quorum (examples/multi-region: 2).
	Quorum = 2
)

// How long a firing rule keeps firing after its condition stopped holding
// (Grafana's "Keep firing for", file provisioning key keepFiringFor), the
// defaults of vigil's alerter and of the generated Prometheus rules:
//
//   - origin down: none, as down.keep_firing_for (default 0s): a region
//     already needs rise passing runs to leave unhealthy;
//   - TTFB p95: the rule's window, at most vigilalerting.TTFBKeepMax, as
//     ttfb.keep_firing_for;
//   - burn rate: the short window of the rule's pair (5m for 1h/5m, 30m
//     for 6h/30m), as burn_rate.keep_firing_for for a page from that pair.
const (
	KeepFiringForDown     time.Duration = 0
	KeepFiringForTTFB                   = min(TTFBWindow, vigilalerting.TTFBKeepMax)
	KeepFiringForBurn                   = BurnRateShort
	KeepFiringForBurnSlow               = BurnRateSlowShort
)

// Alert rule provisioning identity.
const (
	AlertFolder = "vigil"
	AlertGroup  = "vigil-slo"
	// AlertInterval is the group's evaluation interval.
	AlertInterval = "1m"
)

const exprUID = "__expr__"

// yamlKeyOrder puts the identifying keys of groups, rules and queries
// first in the generated YAML.
var yamlKeyOrder = []string{"apiVersion", "orgId", "name", "folder", "interval", "uid", "title", "refId", "condition", "datasourceUid", "relativeTimeRange", "type", "expression", "query"}

func exprRef() common.DataSourceRef {
	typ, uid := exprUID, exprUID
	return common.DataSourceRef{Type: &typ, Uid: &uid}
}

// alertRule is one rule before it becomes SDK types: its Flux queries
// (refId → relative range in seconds and text) and expressions.
type alertRule struct {
	uid, title, condition string
	forDur                time.Duration // pending period (Grafana's for)
	keep                  time.Duration // keep firing for; 0: none
	noData                alerting.RuleNoDataState
	labels, annotations   map[string]string
	flux                  []alertFlux
	exprs                 []cog.Builder[variants.Dataquery]
	exprRefs              []string
}

type alertFlux struct {
	refID string
	from  alerting.Duration // seconds before now
	text  string
}

func reduceLast(refID, input string) cog.Builder[variants.Dataquery] {
	return expr.NewExprBuilder().TypeReduce(expr.NewTypeReduceBuilder().
		RefId(refID).
		Datasource(exprRef()).
		Expression(input).
		Reducer(expr.TypeReduceReducerLast).
		Settings(expr.NewExprTypeReduceSettingsBuilder().Mode(expr.ExprTypeReduceSettingsModeDropNN)))
}

// mathExpr is a math expression, e.g. "$B >= $R": 1 where it holds, per
// series (a rule fires for the series whose condition is not 0).
func mathExpr(refID, expression string) cog.Builder[variants.Dataquery] {
	return expr.NewExprBuilder().TypeMath(expr.NewTypeMathBuilder().
		RefId(refID).
		Datasource(exprRef()).
		Expression(expression))
}

func thresholdAbove(refID, input string, limit float64) cog.Builder[variants.Dataquery] {
	return expr.NewExprBuilder().TypeThreshold(expr.NewTypeThresholdBuilder().
		RefId(refID).
		Datasource(exprRef()).
		Expression(input).
		Conditions([]cog.Builder[expr.ExprTypeThresholdConditions]{
			expr.NewExprTypeThresholdConditionsBuilder().Evaluator(
				expr.NewExprTypeThresholdConditionsEvaluatorBuilder().
					Type(expr.ExprTypeThresholdConditionsEvaluatorTypeGt).
					Params([]float64{limit})),
		}))
}

// regionsB is "{{ $values.B }} regions" in a summary, "1 region" for one,
// as the Prometheus rules' summaries say it.
const regionsB = "{{ $values.B }} region{{ if ne $values.B.Value 1.0 }}s{{ end }}"

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// burnQuery completes qAlertBurnRate for the fast pair of the default
// rules: the per-run failure ratio above which a region burns at
// BurnRateFast (BurnRateFast × (1 − o's objective)), the short window and
// BurnMinRuns, over every check (o: defaults set).
func burnQuery(o Options) string {
	return burnPairQuery(sloSpec{objective: o.Objective}, BurnRateFast, BurnRateLong, BurnRateShort, BurnMinRuns, o.Checks)
}

// burnPairQuery is qAlertBurnRate for the pair of factor and windows long
// (the query's range) and short over s's check (and target), each region
// counting from minRuns runs, its runs floor on the interval checks give
// the check (burnIntervalFlux).
func burnPairQuery(s sloSpec, factor float64, long, short time.Duration, minRuns int, checks []vigilalerting.CheckInterval) string {
	limit := strconv.FormatFloat(factor*(1-s.objective/100), 'g', 6, 64)
	return strings.NewReplacer("{select}", s.selectFlux(), "{limit}", limit, "{short_ns}", strconv.FormatInt(int64(short), 10),
		"{long_ms}", strconv.FormatInt(long.Milliseconds(), 10), "{short_ms}", strconv.FormatInt(short.Milliseconds(), 10),
		"{min_runs}", strconv.Itoa(max(minRuns, 1))+".0", "{interval}", burnIntervalFlux(s.check, checks)).Replace(qAlertBurnRate)
}

// burnIntervalFlux is qAlertBurnRate's {interval}: a map setting each
// region's interval (iv, ms) to its check's configured interval, as the
// generated Prometheus rules' floor (alerting.PrometheusRules) takes it
// from the checks: check's when it is one, else (every check) that of each
// check listed, other checks keeping the interval_ms of the region's
// newest run. A check listed twice keeps its longest interval. "" when
// checks give no interval for it: every region keeps interval_ms.
func burnIntervalFlux(check string, checks []vigilalerting.CheckInterval) string {
	longest := map[string]time.Duration{}
	for _, c := range checks {
		if c.Check != "" && c.Interval > 0 && (check == "" || c.Check == check) {
			longest[c.Check] = max(longest[c.Check], c.Interval)
		}
	}
	if len(longest) == 0 {
		return ""
	}
	ms := func(d time.Duration) string { return fluxFloat(float64(d) / float64(time.Millisecond)) }
	if check != "" {
		return "\n  |> map(fn: (r) => ({r with iv: " + ms(longest[check]) + "}))"
	}
	names := make([]string, 0, len(longest))
	for n := range longest {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(`if r.check == "` + n + `" then ` + ms(longest[n]) + " else ")
	}
	return "\n  |> map(fn: (r) => ({r with iv: " + b.String() + "r.iv}))"
}

// ttfbQuery completes qAlertTTFBP95 with o's objective and TTFBMinSamples
// over every check (o: defaults set).
func ttfbQuery(o Options) string {
	return ttfbSLOQuery(sloSpec{ttfb: o.TTFBP95}, TTFBMinSamples)
}

// ttfbSLOQuery is qAlertTTFBP95 for s's objective over its check (and
// target), each region counting from minSamples runs.
func ttfbSLOQuery(s sloSpec, minSamples int) string {
	ms := float64(s.ttfb) / float64(time.Millisecond)
	return strings.NewReplacer("{select}", s.selectFlux(), "{objective_ms}", strconv.FormatFloat(ms, 'f', 1, 64),
		"{min_samples}", strconv.Itoa(max(minSamples, 1)), "{min_slow}", strconv.Itoa(vigilalerting.TTFBMinSlowRuns)).Replace(qAlertTTFBP95)
}

// checksFlux is the filter of checks ("" for none: every check).
func checksFlux(checks []string) string {
	if len(checks) == 0 {
		return ""
	}
	terms := make([]string, len(checks))
	for i, c := range checks {
		terms[i] = `r.check == "` + c + `"`
	}
	return "\n  |> filter(fn: (r) => " + strings.Join(terms, " or ") + ")"
}

// deadManQuery is qAlertDeadMan over checks (none: every check).
func deadManQuery(checks []string) string {
	return strings.ReplaceAll(qAlertDeadMan, "{select}", checksFlux(checks))
}

// quorumLostQuery is query (qAlertQuorumLost or qAlertQuorumDetail)
// over checks (none: every check) with the dead-man window and the quorum,
// but a quorum of 1 for the checks of ones (those one region judges).
func quorumLostQuery(query string, checks []string, window time.Duration, quorum int, ones []string) string {
	q := strconv.Itoa(max(quorum, 1))
	qf, qt := q+".0", `"alerting.quorum is `+q+`"`
	if len(ones) > 0 && quorum > 1 {
		terms := make([]string, len(ones))
		for i, c := range ones {
			terms[i] = `r.check == "` + c + `"`
		}
		cond := strings.Join(terms, " or ")
		qf = "(if " + cond + " then 1.0 else " + qf + ")"
		qt = "if " + cond + ` then "its quorum (push.region) is 1" else ` + qt
	}
	return strings.NewReplacer("{select}", checksFlux(checks), "{window_ns}", strconv.FormatInt(int64(window), 10),
		"{quorum_text}", qt, "{quorum}", qf).Replace(query)
}

// liveQuery is qAlertLiveErrors with r's thresholds (defaults set).
func liveQuery(r vigilalerting.LiveErrorsRule) string {
	return strings.NewReplacer("{ratio}", fluxFloat(float64(r.Ratio)), "{share}", fluxFloat(float64(r.EjectedShare)),
		"{min_requests}", strconv.Itoa(max(r.MinRequests, 1))).Replace(qAlertLiveErrors)
}

// fluxFloat writes f as a Flux float literal (5.0, 2.5).
func fluxFloat(f float64) string {
	t := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(t, ".") {
		t += ".0"
	}
	return t
}

// sloSpec is one SLO the rules judge: the default one over every check
// (name ""), or one of Options.SLOs.
type sloSpec struct {
	name          string // "": the default SLO (labels slo=availability, slo=latency)
	check, target string // "": every check, every target
	objective     float64
	ttfb, window  time.Duration
}

// selectFlux is the filter of s's check and target ("" for every check).
func (s sloSpec) selectFlux() string {
	if s.check == "" {
		return ""
	}
	cond := `r.check == "` + s.check + `"`
	if s.target != "" {
		cond += ` and r.target == "` + s.target + `"`
	}
	return "\n  |> filter(fn: (r) => " + cond + ")"
}

// label is s's slo label for the rule kind ("availability" or "latency"
// for the default SLO, else its name).
func (s sloSpec) label(kind string) string {
	if s.name == "" {
		return kind
	}
	return s.name
}

// ruleParams are the figures the rules are built on: those of the default
// rules, or of vigil's alerting config (Options.Alerting).
type ruleParams struct {
	quorum                                       int
	downOff, ttfbOff, burnOff, deadOff, noTicket bool
	certOff, quorumLostOff                       bool
	certDays                                     int
	downFor, downKeep, ttfbFor, burnFor          time.Duration
	downSev, ttfbSev, deadSev, certSev           string
	quorumLostSev                                string
	// quorumRules names the rules a lost quorum blinds (the alerter's
	// quorum_lost summary).
	quorumRules string
	// oneRegion are the checks one region judges (OneRegion in
	// Options.Checks): their quorum is 1 in every rule (quorumOf).
	oneRegion map[string]bool
	// live is the live_errors rule (defaults set; Disabled: no rule).
	live vigilalerting.LiveErrorsRule
	// ttfbKeep is the TTFB rule's keep firing for, for an SLO window.
	ttfbKeep func(window time.Duration) time.Duration
	// burnKeep is a burn-rate rule's keep firing for, for its pair.
	burnKeep            func(w vigilalerting.BurnWindow) time.Duration
	minRuns, minSamples int
	dead                vigilalerting.Config // its DeadMan
	slos                []sloSpec
	checks              []vigilalerting.CheckInterval
	tiers               map[string]string // check → tier
	fromConfig          bool
}

// params are the rule figures of o (defaults set).
func params(o Options) ruleParams {
	p := ruleParams{quorum: o.Quorum, checks: o.Checks, tiers: map[string]string{}, oneRegion: map[string]bool{}}
	for _, c := range o.Checks {
		if c.OneRegion {
			p.oneRegion[c.Check] = true
		}
	}
	for _, c := range o.Checks {
		if c.Tier != "" {
			p.tiers[c.Check] = c.Tier
		}
	}
	if o.Alerting == nil {
		p.downFor, p.downKeep, p.ttfbFor, p.burnFor = time.Minute, KeepFiringForDown, 5*time.Minute, 2*time.Minute
		p.downSev, p.ttfbSev, p.deadSev = vigilalerting.SeverityPage, vigilalerting.SeverityTicket, vigilalerting.SeverityTicket
		p.certSev, p.certDays = vigilalerting.SeverityTicket, CertExpiryDays
		// quorum_lost and live_errors as the alerter's defaults.
		p.quorumLostSev, p.quorumRules = vigilalerting.SeverityPage, vigilalerting.Config{}.QuorumRules()
		p.live = vigilalerting.LiveErrorsRule{For: 2 * time.Minute, Severity: vigilalerting.SeverityPage}.WithDefaults()
		p.ttfbKeep = func(w time.Duration) time.Duration { return min(w, vigilalerting.TTFBKeepMax) }
		p.burnKeep = func(w vigilalerting.BurnWindow) time.Duration { return w.Short }
		p.minRuns, p.minSamples = BurnMinRuns, TTFBMinSamples
		p.dead.DeadMan = vigilalerting.DeadManRule{Intervals: 3, ForgetAfter: 24 * time.Hour}
		p.slos = []sloSpec{{objective: o.Objective, ttfb: o.TTFBP95, window: TTFBWindow}}
		return p
	}
	c := *o.Alerting
	p.fromConfig = true
	p.downOff, p.ttfbOff, p.burnOff, p.deadOff, p.noTicket = c.Down.Disabled, c.TTFB.Disabled, c.BurnRate.Disabled, c.DeadMan.Disabled, c.BurnRate.NoTicket
	p.downFor, p.downKeep, p.ttfbFor = c.Down.For, c.Down.KeepFiringFor, c.TTFB.For
	p.downSev, p.ttfbSev, p.deadSev = c.Down.Severity, c.TTFB.Severity, c.DeadMan.Severity
	p.certOff, p.certSev, p.certDays = c.Cert.Disabled, c.Cert.Severity, c.CertExpiryDays
	p.quorumLostOff, p.quorumLostSev, p.quorumRules = c.QuorumLost.Disabled, c.QuorumLost.Severity, c.QuorumRules()
	p.live = c.LiveErrors.WithDefaults()
	p.minRuns, p.minSamples = c.BurnRate.MinRuns, c.TTFB.MinSamples
	p.dead = c
	ttfbDefault, burnDefault := c.KeepFiringDefaults()
	p.ttfbKeep = func(w time.Duration) time.Duration {
		if ttfbDefault {
			return min(w, vigilalerting.TTFBKeepMax)
		}
		return c.TTFB.KeepFiringFor
	}
	p.burnKeep = func(w vigilalerting.BurnWindow) time.Duration {
		if burnDefault {
			return w.Short
		}
		return c.BurnRate.KeepFiringFor
	}
	for _, s := range o.SLOs {
		p.slos = append(p.slos, sloSpec{name: s.Name, check: s.Check, target: s.Target,
			objective: float64(s.Objective), ttfb: s.TTFBP95, window: s.Window})
	}
	return p
}

// burnUIDs are the uids of the default SLO's burn-rate rules per pair
// (vigilalerting.BurnWindows order); an SLO's rules are
// vigil-burn-<long>-<slo>.
var burnUIDs = []string{"vigil-availability-burn", "vigil-availability-burn-6h", "vigil-availability-burn-1d", "vigil-availability-burn-3d"}

// ruleUID is base for the default SLO, else base-<name>, made a Grafana
// uid (at most 40 letters, digits, - and _): a name with other characters,
// or too long, is cut and ends with a hash of it.
func ruleUID(base, name string) string {
	if name == "" {
		return base
	}
	uid := base + "-" + name
	clean := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, uid)
	if clean == uid && len(uid) <= maxUIDLen {
		return uid
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%s-%08x", clean[:min(len(clean), maxUIDLen-9)], h.Sum32())
}

// burnRule is the rule of one burn-rate pair w of s: w.Factor × the error
// budget over both w.Long and w.Short, in ≥ p.quorum regions.
func burnRule(p ruleParams, s sloSpec, w vigilalerting.BurnWindow, uid string) alertRule {
	factor, long, short := fmtFloat(w.Factor), promDur(w.Long), promDur(w.Short)
	q := p.quorumOf(s.check)
	title := fmt.Sprintf("Availability error budget burning %sx (%s and %s) in %s", factor, long, short, q.regions())
	summary := fmt.Sprintf("{{ $labels.check }} × {{ $labels.target }} burns its error budget above %sx over %s and %s in "+regionsB,
		factor, long, short)
	if s.name != "" {
		title = s.name + ": error budget burning " + factor + "x (" + long + " and " + short + ") in " + q.regions()
		summary = fmt.Sprintf("{{ $labels.check }} × {{ $labels.target }}: error budget of %s (objective %s%%) burns above %sx over %s and %s in "+regionsB,
			s.name, fmtFloat(s.objective), factor, long, short)
	}
	burn := map[string]string{vigilalerting.SeverityPage: "fast burn", vigilalerting.SeverityTicket: "slow burn"}[w.Severity]
	labels := ruleLabels(vigilalerting.RuleBurnRate, w.Severity, s.label("availability"))
	if t := p.tiers[s.check]; t != "" && s.check != "" {
		labels["tier"] = t
	}
	return alertRule{
		uid:       uid,
		title:     title,
		forDur:    p.burnFor,
		keep:      p.burnKeep(w),
		condition: "C",
		noData:    alerting.RuleNoDataStateNoData, // no verdict at all over the long window
		labels:    labels,
		annotations: map[string]string{
			"summary": summary,
			"description": fmt.Sprintf("%s: in %s, the failed-run ratio of the check against the target over %s and over %s are both above %sx the error budget of a %s%% availability SLO (each region with at least %d runs over %s; a window's ratio is failed runs over the larger of its runs and the runs the check's interval makes in it, so a young store's few runs do not make a burn)%s",
				strings.ToUpper(burn[:1])+burn[1:], q.in(), long, short, factor, fmtFloat(s.objective), max(p.minRuns, 1), long,
				q.why(": the origin fails, not one vantage's network.")) + q.note(),
			"windows": w.Name(),
		},
		flux:     q.queries(alertFlux{"A", alerting.Duration(w.Long / time.Second), burnPairQuery(s, w.Factor, w.Long, w.Short, p.minRuns, p.checks)}, "check", "target"),
		exprs:    q.exprs(),
		exprRefs: q.exprRefs(),
	}
}

// ttfbRule is the TTFB p95 rule of s.
func ttfbRule(p ruleParams, s sloSpec) alertRule {
	ms := fmtFloat(float64(s.ttfb) / float64(time.Millisecond))
	q := p.quorumOf(s.check)
	title := fmt.Sprintf("TTFB p95 above %s ms in %s", ms, q.regions())
	summary := fmt.Sprintf("{{ $labels.check }} × {{ $labels.target }} TTFB p95 over %s above %s ms in "+regionsB, spelled(s.window), ms)
	uid := "vigil-ttfb-p95"
	if s.name != "" {
		uid = ruleUID("vigil-ttfb", s.name)
		title = s.name + ": " + title
		summary = "{{ $labels.check }} × {{ $labels.target }}: " + s.name + ": TTFB p95 over " + spelled(s.window) + " above " + ms + " ms in " + regionsB
	}
	return alertRule{
		uid:       uid,
		title:     title,
		forDur:    p.ttfbFor,
		keep:      p.ttfbKeep(s.window),
		condition: "C",
		noData:    alerting.RuleNoDataStateNoData, // no run with a TTFB at all over the window
		labels:    ruleLabels(vigilalerting.RuleTTFB, p.ttfbSev, s.label("latency")),
		annotations: map[string]string{
			"summary": summary,
			"description": fmt.Sprintf("In %s, the TTFB p95 of the check against the target over the last %s is above the %s ms objective (each region with at least %d runs that got a first byte, and at least %d of them above the objective: one slow run is no breach)%s",
				q.in(), spelled(s.window), ms, max(p.minSamples, 1), vigilalerting.TTFBMinSlowRuns,
				q.why(": the origin is slow, not one vantage's network.")) + q.note(),
		},
		flux:     q.queries(alertFlux{"A", alerting.Duration(s.window / time.Second), ttfbSLOQuery(s, p.minSamples)}, "check", "target", "tier"),
		exprs:    q.exprs(),
		exprRefs: q.exprRefs(),
	}
}

// deadManRules are the dead-man rules, as alerting.PrometheusRules writes
// them: one per distinct interval of p.checks over its checks only (a
// check listed twice keeps its longest interval), with the window
// alerting.DeadManPromWindowFor and the pending period
// alerting.DeadManPromFor of that interval, rounded up to the evaluation
// interval; without checks, one over every check.
func deadManRules(p ruleParams) []alertRule {
	intervals, byInterval := checkIntervals(p)
	var out []alertRule
	for _, iv := range intervals {
		// The query's range: a region × check silent longer is forgotten
		// (no row, no data: OK), as the alerter forgets it; longer than
		// the window and pending period of a daily or cron check.
		forget := vigilalerting.DeadManForgetFor(p.dead, iv)
		window := vigilalerting.DeadManPromWindowFor(p.dead, iv)
		hold := vigilalerting.DeadManPromFor(p.dead, iv)
		uid, title := "vigil-dead-man", "Canary silent: no verdict of a check in a region for "+promDur(window)
		labels := map[string]string{"rule": vigilalerting.RuleDeadMan, "severity": p.deadSev, "source": "grafana"}
		if iv > 0 {
			uid = ruleUID("vigil-dead-man", promDur(iv))
			title = "Canary silent: no verdict of a check run every " + promDur(iv) + " in a region for " + promDur(window)
			labels["interval"] = promDur(iv)
		}
		out = append(out, alertRule{
			uid:       uid,
			title:     title,
			forDur:    hold,
			condition: "C",
			noData:    alerting.RuleNoDataStateOK, // nothing written for forget_after: forgotten
			labels:    labels,
			annotations: map[string]string{
				"summary": "no verdict of check {{ $labels.check }} in region {{ $labels.region }} for {{ printf \"%.0f\" $values.B.Value }} s (more than " + shortDur(window) + ")",
				"description": fmt.Sprintf("The newest verdict of the check from any vantage of the region is older than %s: its canaries stopped, or cannot write to the store. A region silent for %s is forgotten.",
					shortDur(window), forgetDur(forget)),
			},
			flux:     []alertFlux{{"A", alerting.Duration(forget / time.Second), deadManQuery(byInterval[iv])}},
			exprs:    []cog.Builder[variants.Dataquery]{reduceLast("B", "A"), thresholdAbove("C", "B", window.Seconds())},
			exprRefs: []string{"B", "C"},
		})
	}
	return out
}

// checkIntervals are the distinct intervals of p.checks, shortest first,
// and the checks of each (a check listed twice keeps its longest
// interval); without checks, the one interval 0 over every check.
func checkIntervals(p ruleParams) ([]time.Duration, map[time.Duration][]string) {
	longest := map[string]time.Duration{}
	for _, c := range p.checks {
		if c.Check != "" && c.Interval > 0 {
			longest[c.Check] = max(longest[c.Check], c.Interval)
		}
	}
	byInterval := map[time.Duration][]string{}
	for name, iv := range longest {
		byInterval[iv] = append(byInterval[iv], name)
	}
	intervals := make([]time.Duration, 0, len(byInterval))
	for iv := range byInterval {
		intervals = append(intervals, iv)
		sort.Strings(byInterval[iv])
	}
	sort.Slice(intervals, func(i, j int) bool { return intervals[i] < intervals[j] })
	if len(intervals) == 0 {
		intervals = []time.Duration{0}
	}
	return intervals, byInterval
}

// quorumLostRules are the quorum_lost rules, as alerting.PrometheusRules
// writes VigilQuorumLost: one per distinct interval of p.checks (as the
// dead-man rules), firing for a check with a region silent past the
// dead-man window and fewer than its quorum of regions not silent (p.quorum,
// or 1 for a check one region judges, p.oneRegion, as the alerter's),
// pending as the dead-man rule of that interval; the check's down, ttfb,
// burn_rate and cert_expiry rules cannot fire then. Its summary and
// regions annotation say what the alerter's say.
func quorumLostRules(p ruleParams) []alertRule {
	intervals, byInterval := checkIntervals(p)
	q := strconv.Itoa(p.quorum)
	var out []alertRule
	for _, iv := range intervals {
		forget := vigilalerting.DeadManForgetFor(p.dead, iv)
		window := vigilalerting.DeadManPromWindowFor(p.dead, iv)
		// The checks of this rule one region judges (without checks,
		// every such check).
		var ones []string
		for c := range p.oneRegion {
			if byInterval[iv] == nil || slices.Contains(byInterval[iv], c) {
				ones = append(ones, c)
			}
		}
		sort.Strings(ones)
		fewer := "fewer than " + q + " regions report a check"
		if len(ones) > 0 && p.quorum > 1 {
			fewer = "fewer than " + q + " regions (1 for a push check with push.region) report a check"
		}
		uid, title := "vigil-quorum-lost", "Quorum lost: "+fewer+", others silent for "+promDur(window)
		labels := map[string]string{"rule": vigilalerting.RuleQuorumLost, "severity": p.quorumLostSev, "source": "grafana"}
		if iv > 0 {
			uid = ruleUID("vigil-quorum-lost", promDur(iv))
			title = "Quorum lost: " + fewer + " run every " + promDur(iv) + ", others silent for " + promDur(window)
			labels["interval"] = promDur(iv)
		}
		out = append(out, alertRule{
			uid:       uid,
			title:     title,
			forDur:    vigilalerting.DeadManPromFor(p.dead, iv),
			condition: "C",
			noData:    alerting.RuleNoDataStateOK, // no verdict for forget_after: forgotten
			labels:    labels,
			// The summary in the alerter's words, from D through E,
			// whose labels are not the alert's.
			annotations: map[string]string{
				"summary": "{{ $labels.check }}: {{ $values.E.Labels.reports }}, {{ $values.E.Labels.quorum }}: " +
					p.quorumRules + " alerts for {{ $labels.check }} cannot fire until {{ $values.E.Labels.until }} again",
				"regions": "{{ $values.E.Labels.regions }}",
				"description": fmt.Sprintf("A region that reported the check has no verdict of it for more than %s (as the dead-man rule judges it), and fewer than %s regions still report it: the rules that need %s regions to agree cannot fire, so an outage would page nobody. A region silent for %s is forgotten.",
					shortDur(window), q, q, forgetDur(forget)) + onesNote(ones, p.quorum),
			},
			flux: []alertFlux{{"A", alerting.Duration(forget / time.Second), quorumLostQuery(qAlertQuorumLost, byInterval[iv], window, p.quorum, ones)},
				{"D", alerting.Duration(forget / time.Second), quorumLostQuery(qAlertQuorumDetail, byInterval[iv], window, p.quorum, ones)}},
			exprs:    []cog.Builder[variants.Dataquery]{reduceLast("B", "A"), thresholdAbove("C", "B", 0.5), reduceLast("E", "D")},
			exprRefs: []string{"B", "C", "E"},
		})
	}
	return out
}

// onesNote is the quorum-lost description's note on the checks one
// region judges ("" for none, or when the quorum is 1 anyway).
func onesNote(ones []string, quorum int) string {
	if len(ones) == 0 || quorum <= 1 {
		return ""
	}
	return " Push checks with push.region (" + strings.Join(ones, ", ") + ") are judged by that one region: their quorum is 1, as vigil's alerter counts it, so they fire only when that region is silent."
}

// ruleQuorum is how many regions must agree for a rule that counts
// regions (down, certificate, TTFB, burn rate), as the alerter's
// quorum(check): p.quorum, but 1 for a check one region judges (an enabled
// push check with push.region, p.oneRegion).
type ruleQuorum struct {
	// n is the rule's quorum: 1 for a rule over one such check.
	n int
	// ones are the checks of quorum 1 of a rule over every check (none
	// when the quorum is 1 anyway): its condition (queries, exprs) judges
	// their counts of regions against 1, and every other check's against n.
	ones []string
	// push: the rule is over one such check (n is 1).
	push bool
}

// quorumOf is the quorum of a rule over check ("": every check).
func (p ruleParams) quorumOf(check string) ruleQuorum {
	q := ruleQuorum{n: p.quorum}
	if p.quorum <= 1 {
		return q
	}
	if check != "" {
		if p.oneRegion[check] {
			q.n, q.push = 1, true
		}
		return q
	}
	for c := range p.oneRegion {
		q.ones = append(q.ones, c)
	}
	sort.Strings(q.ones)
	return q
}

// regions says the quorum in a title: "2 or more regions", "2 or more
// regions (1 for a push check with push.region)", "its one region
// (push.region)".
func (q ruleQuorum) regions() string {
	switch {
	case q.push:
		return "its one region (push.region)"
	case len(q.ones) > 0:
		return strconv.Itoa(q.n) + " or more regions (1 for a push check with push.region)"
	}
	return strconv.Itoa(q.n) + " or more regions"
}

// in says the quorum in a description: "2 or more regions", "its one
// region (push.region)" (for a rule over every check, note names the
// checks of quorum 1).
func (q ruleQuorum) in() string {
	if q.push {
		return "its one region (push.region)"
	}
	return strconv.Itoa(q.n) + " or more regions"
}

// why is the reason a description gives for needing the quorum, "." for a
// rule over one check its one region judges (no quorum rules out one
// vantage's network).
func (q ruleQuorum) why(reason string) string {
	if q.push {
		return "."
	}
	return reason
}

// note ends a description: which checks count with a quorum of 1 ("" for
// none).
func (q ruleQuorum) note() string {
	switch {
	case q.push:
		return " The check is a push check with push.region, judged by that one region: its quorum is 1, as vigil's alerter counts it."
	case len(q.ones) > 0:
		return " Push checks with push.region (" + strings.Join(q.ones, ", ") + ") are judged by that one region: their quorum is 1, as vigil's alerter counts it."
	}
	return ""
}

// queries are the Flux queries of a rule that counts regions: a, its
// count of agreeing regions per series of the label columns cols (A), and
// for a rule over every check with q.ones, Q: each of those series' quorum
// (qAlertQuorumOf: 1.0 for q.ones, else q.n) over a's range. The count is
// left as it is, so the rule shows the regions it counted below the
// quorum too, whatever quorum its check has.
func (q ruleQuorum) queries(a alertFlux, cols ...string) []alertFlux {
	if len(q.ones) == 0 {
		return []alertFlux{a}
	}
	terms := make([]string, len(q.ones))
	for i, c := range q.ones {
		terms[i] = `r.check == "` + c + `"`
	}
	quoted, labels := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		quoted[i], labels[i] = `"`+c+`"`, c+": r."+c
	}
	text := strings.NewReplacer("{columns}", strings.Join(quoted, ", "), "{labels}", strings.Join(labels, ", "),
		"{quorum}", "if "+strings.Join(terms, " or ")+" then 1.0 else "+strconv.Itoa(q.n)+".0").Replace(qAlertQuorumOf)
	return []alertFlux{a, {"Q", a.from, text}}
}

// exprs are the expressions that judge the count (query A) of a rule that
// counts regions: B, its last value per series; C, the condition, B above
// q.n − 0.5; or, for a rule over every check with q.ones, R, the last of
// Q (each series' quorum, see queries), and C, B at least R (a math
// expression: Grafana pairs the series of B and R by their labels, which
// are the same).
func (q ruleQuorum) exprs() []cog.Builder[variants.Dataquery] {
	if len(q.ones) == 0 {
		return []cog.Builder[variants.Dataquery]{reduceLast("B", "A"), thresholdAbove("C", "B", float64(q.n)-0.5)}
	}
	return []cog.Builder[variants.Dataquery]{reduceLast("B", "A"), reduceLast("R", "Q"), mathExpr("C", "$B >= $R")}
}

// exprRefs are the refIds of exprs, in order.
func (q ruleQuorum) exprRefs() []string {
	if len(q.ones) == 0 {
		return []string{"B", "C"}
	}
	return []string{"B", "R", "C"}
}

// liveRule is the live_errors rule, as the alerter's: per pool × origin,
// the proxies' signals (vigil_signal) over live_errors.window, summed over
// every proxy instance and region, fail by its ratio and min_requests or
// its ejected_share, for live_errors.for; no keep firing. The signals of
// a proxy instance that had the origin drained in the window are left
// out (a drain is planned work), as in the alerter. Its summary says what
// the signals counted and which instances were left out (from D through
// E, whose labels are not the alert's).
func liveRule(p ruleParams) alertRule {
	r := p.live
	win := shortDur(r.Window)
	return alertRule{
		uid:       "vigil-live-errors",
		title:     "Live traffic to an origin failing",
		forDur:    r.For,
		condition: "C",
		noData:    alerting.RuleNoDataStateOK, // no signal at all: no proxy publishes
		labels:    ruleLabels(vigilalerting.RuleLiveErrors, r.Severity, ""),
		annotations: map[string]string{
			"summary": "pool {{ $labels.pool }} origin {{ $labels.origin }}: {{ printf \"%.1f\" $values.E.Value }}% of live requests failed over " + win +
				" ({{ $values.E.Labels.failed }} of {{ $values.E.Labels.requests }}); ejected by the proxy's passive detector in {{ $values.E.Labels.ejected }} of {{ $values.E.Labels.signals }} signals" +
				"{{ if $values.E.Labels.drained }}; drained on {{ $values.E.Labels.drained }} (left out){{ end }}",
			"description": fmt.Sprintf("The proxies' live traffic to the origin fails, summed over every proxy instance and region over %s: at least %s of the requests failed (5xx, connection errors, timeouts) with at least %d requests, or the passive detector had the origin ejected in at least %s of the signals; the signals of a proxy instance that had the origin drained in the window are left out (a drain is planned work). It judges what users get, whatever the checks say: compare with the origin's checks.",
				win, r.Ratio, r.MinRequests, r.EjectedShare),
		},
		flux:     []alertFlux{{"A", alerting.Duration(r.Window / time.Second), liveQuery(r)}, {"D", alerting.Duration(r.Window / time.Second), qAlertLiveDetail}},
		exprs:    []cog.Builder[variants.Dataquery]{reduceLast("B", "A"), thresholdAbove("C", "B", 0.5), reduceLast("E", "D")},
		exprRefs: []string{"B", "C", "E"},
	}
}

// pendingFor is a rule's pending period in the file: d rounded up to a
// whole AlertInterval, since the rule is evaluated once per interval and
// a shorter or uneven period is held until the next evaluation anyway.
func pendingFor(d time.Duration) string {
	step, _ := time.ParseDuration(AlertInterval)
	if d <= 0 {
		return "0s"
	}
	return promDur((d + step - 1) / step * step)
}

// promDur writes a duration as the Prometheus rules do: 5m, 1h, 3d,
// 1h30m, 600ms.
func promDur(d time.Duration) string { return vigilalerting.PromDuration(d) }

// spelled writes a window the way the summaries say it: "10 minutes",
// "1 hour", else as shortDur.
func spelled(d time.Duration) string {
	switch {
	case d == time.Minute:
		return "1 minute"
	case d == time.Hour:
		return "1 hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return shortDur(d)
}

// certQuery completes qAlertCert with a horizon of days.
func certQuery(days int) string {
	return strings.ReplaceAll(qAlertCert, "{horizon_ns}", strconv.FormatInt(int64(days)*int64(24*time.Hour), 10))
}

// certRule is the certificate rule, the alerter's cert_expiry: in ≥
// p.quorum regions a check's target presents a certificate expiring
// within p.certDays days, or fails with cause cert. Like the alerter's
// rule it fires at the first evaluation (the Prometheus rule waits
// alerting.CertPromFor over its scrapes) and has no hold.
func certRule(p ruleParams) alertRule {
	days := strconv.Itoa(p.certDays)
	q := p.quorumOf("")
	return alertRule{
		uid:       "vigil-certificate",
		title:     fmt.Sprintf("Certificate expiring within %s days or failing in %s", days, q.regions()),
		condition: "C",
		noData:    alerting.RuleNoDataStateOK, // no fresh verdict at all: no series
		labels:    map[string]string{"rule": vigilalerting.RuleCert, "severity": p.certSev, "source": "grafana"},
		annotations: map[string]string{
			"summary": "{{ $labels.check }} × {{ $labels.target }} certificate expires within " + days + " days or fails verification in " + regionsB,
			"description": fmt.Sprintf("In %d or more regions, the latest unexpired verdict of the check against the target reports a certificate (the earliest-expiring one presented: leaf or intermediate) expiring within %s days, or failed with cause cert (invalid certificate, or the check's cert_min_days).",
				q.n, days) + q.note(),
		},
		flux:     q.queries(alertFlux{"A", 300, certQuery(p.certDays)}, "check", "target", "tier"),
		exprs:    q.exprs(),
		exprRefs: q.exprRefs(),
	}
}

// ruleLabels are a rule's labels: rule, the alerter's rule name (down,
// ttfb, burn_rate), severity and source "grafana", as the alerter's
// alerts (source vigil) and the generated Prometheus rules' (source
// prometheus) carry them, so one routing tree serves all three; slo names
// the objective (latency, availability or the SLO's name) of the TTFB and
// burn-rate rules, and is left out ("") for the origin-down rule, as
// neither the alerter's down alerts nor VigilCheckDown carry one. The
// alertname label cannot agree: Grafana sets it to the rule's title, a
// reserved label a rule's own labels cannot override (the rule label is
// the alertname's counterpart: one value per alert name).
func ruleLabels(rule, severity, slo string) map[string]string {
	labels := map[string]string{"rule": rule, "severity": severity, "source": "grafana"}
	if slo != "" {
		labels["slo"] = slo
	}
	return labels
}

// downDescription explains the origin-down rule: several regions agreeing
// rule out one vantage's network, one region does not.
func downDescription(quorum int) string {
	const latest = "The latest unexpired verdict of check {{ $labels.check }} against {{ $labels.target }} is unhealthy"
	if quorum <= 1 {
		return latest + " in a region (quorum 1: one region's network trouble fires it too)."
	}
	return latest + fmt.Sprintf(" in %d or more regions at once: the origin is down, not one vantage's network.", quorum)
}

// alertRules are the rules for o (defaults set).
func alertRules(o Options) []alertRule {
	p := params(o)
	var rules []alertRule
	if !p.downOff {
		q := p.quorumOf("")
		rules = append(rules, alertRule{
			uid:       "vigil-origin-down",
			title:     "Origin down in " + q.regions(),
			forDur:    p.downFor,
			keep:      p.downKeep,
			condition: "C",
			noData:    alerting.RuleNoDataStateOK, // no unhealthy region at all: no series
			labels:    ruleLabels(vigilalerting.RuleDown, p.downSev, ""),
			// regions, cause and error as vigil's alerter annotates its
			// down alerts, from D (qAlertDownDetail) through E, whose
			// labels are not the alert's.
			annotations: map[string]string{
				"summary": "{{ $labels.check }} × {{ $labels.target }} is unhealthy in " + regionsB +
					` ({{ reReplaceAll "," ", " $values.E.Labels.regions }}){{ with $values.E.Labels.cause }}: {{ . }}{{ end }}`,
				"description": downDescription(p.quorum) + q.note(),
				"regions":     "{{ $values.E.Labels.regions }}",
				"cause":       "{{ $values.E.Labels.cause }}",
				"error":       "{{ $values.E.Labels.error }}",
			},
			flux:     append(q.queries(alertFlux{"A", 300, qAlertRegionsDown}, "check", "target", "tier"), alertFlux{"D", 300, qAlertDownDetail}),
			exprs:    append(q.exprs(), reduceLast("E", "D")),
			exprRefs: append(q.exprRefs(), "E"),
		})
	}
	if !p.certOff {
		rules = append(rules, certRule(p))
	}
	for _, s := range p.slos {
		if s.ttfb > 0 && !p.ttfbOff {
			rules = append(rules, ttfbRule(p, s))
		}
		if s.objective > 0 && !p.burnOff {
			for i, w := range vigilalerting.BurnWindows {
				if w.Severity == vigilalerting.SeverityTicket && p.noTicket {
					continue
				}
				uid := burnUIDs[i]
				if s.name != "" {
					uid = ruleUID("vigil-burn-"+promDur(w.Long), s.name)
				}
				rules = append(rules, burnRule(p, s, w, uid))
			}
		}
	}
	if !p.deadOff {
		rules = append(rules, deadManRules(p)...)
	}
	if !p.quorumLostOff {
		rules = append(rules, quorumLostRules(p)...)
	}
	if !p.live.Disabled {
		rules = append(rules, liveRule(p))
	}
	if o.Alerting != nil {
		for _, r := range rules {
			linkAnnotations(r.annotations, r.labels["rule"], *o.Alerting)
		}
	}
	return rules
}

// linkAnnotations adds the links alerting.PrometheusRules gives every
// alert of the config c: status_url, the check's page on the status page
// (status_page_url), narrowed to the target but for dead man, and
// runbook_url (runbook_url, {rule} and {check} replaced), each when set;
// dead man and quorum lost are per check (no target), live errors per
// pool × origin (the overview, {check} the pool), as
// alerting.PrometheusRules writes them.
func linkAnnotations(ann map[string]string, rule string, c vigilalerting.Config) {
	check := "{{ $labels.check }}"
	if rule == vigilalerting.RuleLiveErrors {
		// Per pool × origin: the pool stands for the check, the status
		// page's overview for its page.
		check = "{{ $labels.pool }}"
	}
	if c.StatusPageURL != "" {
		switch rule {
		case vigilalerting.RuleLiveErrors:
			ann["status_url"] = strings.TrimSuffix(c.StatusPageURL, "/") + "/"
		case vigilalerting.RuleDeadMan, vigilalerting.RuleQuorumLost:
			ann["status_url"] = strings.TrimSuffix(c.StatusPageURL, "/") + "/check/{{ $labels.check }}"
		default:
			ann["status_url"] = strings.TrimSuffix(c.StatusPageURL, "/") + "/check/{{ $labels.check }}?target={{ $labels.target | urlquery }}"
		}
	}
	if c.RunbookURL != "" {
		ann["runbook_url"] = strings.NewReplacer("{rule}", rule, "{check}", check).Replace(c.RunbookURL)
	}
}

// forgetDur writes how long a silent region is remembered: 24h as
// shortDur, from 2 days on in days as promDur (10d, 6d10m).
func forgetDur(d time.Duration) string {
	if d >= 48*time.Hour {
		return promDur(d)
	}
	return shortDur(d)
}

// shortDur prints 5m and 1h instead of 5m0s and 1h0m0s.
func shortDur(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

func alertQueries(o Options) []NamedQuery {
	o = o.withDefaults()
	var qs []NamedQuery
	for _, r := range alertRules(o) {
		for _, f := range r.flux {
			qs = append(qs, NamedQuery{Dashboard: "alerting", Panel: r.title, RefID: f.refID,
				Flux: strings.ReplaceAll(f.text, "${bucket}", o.Bucket)})
		}
	}
	return qs
}

// ruleGroup builds the SLO rules with the SDK's alerting types, on o's
// datasource and bucket.
func ruleGroup(o Options) ([]alerting.Rule, error) {
	o = o.withDefaults()
	var rules []alerting.Rule
	for _, r := range alertRules(o) {
		b := alerting.NewRuleBuilder(r.title).
			Uid(r.uid).
			FolderUID(AlertFolder).
			RuleGroup(AlertGroup).
			OrgID(1).
			Condition(r.condition).
			For(pendingFor(r.forDur)).
			NoDataState(r.noData).
			ExecErrState(alerting.RuleExecErrStateError).
			Labels(r.labels).
			Annotations(r.annotations)
		if r.keep > 0 {
			b.KeepFiringFor(shortDur(r.keep))
		}
		for _, f := range r.flux {
			text := strings.ReplaceAll(f.text, "${bucket}", o.Bucket)
			b.WithQuery(alerting.NewQueryBuilder(f.refID).
				DatasourceUid(o.DatasourceUID).
				RelativeTimeRange(f.from, 0).
				Model(NewFluxQueryBuilder(f.refID, text).Datasource(o.ref())))
		}
		for i, e := range r.exprs {
			b.WithQuery(alerting.NewQueryBuilder(r.exprRefs[i]).
				DatasourceUid(exprUID).
				RelativeTimeRange(0, 0).
				Model(e))
		}
		rule, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("grafana: alert rule %s: %w", r.uid, err)
		}
		rules = append(rules, rule)
	}
	return rules, nil
}

// apiOnlyKeys are keys of the API's rule model that a provisioning file
// sets on the group (folderUID, ruleGroup, orgID) or not at all.
var apiOnlyKeys = []string{"folderUID", "ruleGroup", "orgID", "provenance", "updated", "id"}

// fileKeys renames the API model's keys whose file-provisioning spelling
// differs: Grafana's AlertRuleV1 reads keepFiringFor (Grafana 12.1.2 and
// later, grafana/grafana#109699) and silently ignores keep_firing_for.
var fileKeys = map[string]string{"keep_firing_for": "keepFiringFor"}

// fileRule reshapes one rule of the API model (as JSON-decoded) into the
// file-provisioning format, in place.
func fileRule(m map[string]any) {
	for _, k := range apiOnlyKeys {
		delete(m, k)
	}
	for api, file := range fileKeys {
		if v, ok := m[api]; ok {
			delete(m, api)
			m[file] = v
		}
	}
}

// AlertRules returns the alert rules with the default Options: the
// content of examples/grafana/provisioning/alerting/vigil-slo.yaml.
func AlertRules() ([]byte, error) { return Options{}.AlertRules() }

// AlertRules returns the SLO alert rules as a Grafana unified-alerting
// file-provisioning document (apiVersion 1, one group "vigil-slo" in
// folder "vigil", evaluated every minute) on o's datasource and bucket.
// Without o.Alerting (the default rules):
//
//   - origin down: a check's target unhealthy in ≥ Quorum regions
//     (latest unexpired verdict, last 5 m), for 1 m;
//   - certificate: a check's target presents a certificate expiring
//     within CertExpiryDays, or fails with cause cert, in ≥ Quorum regions
//     (latest unexpired verdicts, last 5 m), at once, as the alerter's
//     cert_expiry rule;
//   - TTFB p95 of a check × target over TTFBWindow above
//     TTFBP95ThresholdMS in ≥ Quorum regions (each with ≥ TTFBMinSamples
//     runs, alerting.TTFBMinSlowRuns of them over it), for 5 m;
//   - availability burn rate of a check × target above each pair of
//     vigilalerting.BurnWindows (the alerter's): BurnRateFast ×
//     (1 − SLOTarget) over both BurnRateLong and BurnRateShort, then 6×
//     over 6h/30m (page), 3× over 1d/2h and 1× over 3d/6h (ticket), one
//     rule per pair, in ≥ Quorum regions (each with ≥ BurnMinRuns runs in
//     the long window; a window's ratio is failed runs ÷ max(runs, window
//     ÷ the check's interval in o.Checks, or for a check not there the
//     interval of the region's newest run), as the alerter's), for 2 m;
//   - dead man: a region × check whose newest verdict is older than
//     vigilalerting.DeadManPromWindowFor (10 m without o.Checks; one rule
//     per interval of o.Checks), pending vigilalerting.DeadManPromFor
//     rounded up to the minute, as the Prometheus rules' VigilCanarySilent;
//   - quorum lost: a check with a region silent as the dead-man rule judges
//     it and fewer than Quorum regions not silent, with the dead-man rule's
//     window and pending period (one rule per interval of o.Checks), as
//     the alerter's quorum_lost;
//   - live errors: per pool × origin, the proxies' signals over 5 m fail
//     5 % or more of 100 or more requests, or the origin was ejected in
//     50 % or more of them, for 2 m, as the alerter's live_errors
//     (leaving out the signals of a proxy that had the origin drained).
//
// A check with OneRegion in o.Checks (a push check with push.region) needs
// 1 region in every rule instead of Quorum, as the alerter's.
// With o.Alerting the rules follow that config and o.SLOs instead (see
// Options.Alerting). Each keeps firing as the alerter's rule does
// (KeepFiringForDown, KeepFiringForTTFB, KeepFiringForBurn, the pair's
// short window; certificate and dead man none). The rules are built with the
// SDK's alerting types (the API model) and reshaped into the file format:
// per-rule folderUID/ruleGroup/orgID move to the group, keep_firing_for
// becomes keepFiringFor. An invalid o is an error (Validate).
func (o Options) AlertRules() ([]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("grafana: %w", err)
	}
	rules, err := ruleGroup(o)
	if err != nil {
		return nil, err
	}
	var out []any
	for _, r := range rules {
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("grafana: alert rule %s: %w", r.Title, err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("grafana: alert rule %s: %w", r.Title, err)
		}
		fileRule(m)
		out = append(out, m)
	}
	doc := map[string]any{
		"apiVersion": float64(1),
		"groups": []any{map[string]any{
			"orgId":    float64(1),
			"name":     AlertGroup,
			"folder":   AlertFolder,
			"interval": AlertInterval,
			"rules":    out,
		}},
	}
	var sb strings.Builder
	if o.GeneratedBy != "" {
		sb.WriteString("# Generated by " + o.GeneratedBy + "; edit that file and run it again rather than this one.\n")
	} else {
		sb.WriteString("# Code generated by go generate ./reporting/grafana; DO NOT EDIT.\n")
	}
	sb.WriteString("# Grafana unified alerting file provisioning: vigil SLO rules on the " + o.withDefaults().DatasourceUID + " datasource.\n")
	var body strings.Builder
	if err := writeYAML(&body, doc, 0, yamlKeyOrder); err != nil {
		return nil, fmt.Errorf("grafana: alert rules: %w", err)
	}
	sb.WriteString(strings.TrimPrefix(body.String(), "\n"))
	return []byte(sb.String()), nil
}
