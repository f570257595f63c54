package grafana

import (
	"encoding/json"
	"fmt"
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
	uid, title, forDur, condition string
	keep                          time.Duration // keep firing for; 0: none
	noData                        alerting.RuleNoDataState
	labels, annotations           map[string]string
	flux                          []alertFlux
	exprs                         []cog.Builder[variants.Dataquery]
	exprRefs                      []string
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

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// burnQuery completes qAlertBurnRate for the fast pair: the per-run
// failure ratio above which a region burns at BurnRateFast (BurnRateFast ×
// (1 − o's objective)), the short window and BurnMinRuns (o: defaults set).
func burnQuery(o Options) string { return burnPairQuery(o, BurnRateFast, BurnRateShort) }

// burnPairQuery is burnQuery for the pair of factor and short window.
func burnPairQuery(o Options, factor float64, short time.Duration) string {
	limit := strconv.FormatFloat(factor*(1-o.target()), 'g', 6, 64)
	return strings.NewReplacer("{limit}", limit, "{short_ns}", strconv.FormatInt(int64(short), 10),
		"{min_runs}", fmtFloat(BurnMinRuns)+".0").Replace(qAlertBurnRate)
}

// burnRule is the page rule of one burn-rate pair: factor × the error
// budget over both long and short, in ≥ o.Quorum regions.
func burnRule(o Options, uid string, factor float64, long, short, keep time.Duration) alertRule {
	return alertRule{
		uid: uid,
		title: fmt.Sprintf("Availability error budget burning %sx (%s and %s) in %d or more regions",
			fmtFloat(factor), shortDur(long), shortDur(short), o.Quorum),
		forDur:    "2m",
		keep:      keep,
		condition: "C",
		noData:    alerting.RuleNoDataStateNoData, // no verdict at all over the long window
		labels:    ruleLabels(vigilalerting.RuleBurnRate, "page", "availability"),
		annotations: map[string]string{
			"summary": fmt.Sprintf("{{ $labels.check }} × {{ $labels.target }} burns its error budget above %sx over %s and %s in {{ $values.B }} regions",
				fmtFloat(factor), shortDur(long), shortDur(short)),
			"description": fmt.Sprintf("In %d or more regions, the failed-run ratio of the check against the target over %s and over %s are both above %sx the error budget of a %s%% availability SLO (each region with at least %d runs over %s): the origin fails, not one vantage's network.",
				o.Quorum, shortDur(long), shortDur(short), fmtFloat(factor), fmtFloat(o.Objective), BurnMinRuns, shortDur(long)),
		},
		flux:     []alertFlux{{"A", alerting.Duration(long / time.Second), burnPairQuery(o, factor, short)}},
		exprs:    []cog.Builder[variants.Dataquery]{reduceLast("B", "A"), thresholdAbove("C", "B", float64(o.Quorum)-0.5)},
		exprRefs: []string{"B", "C"},
	}
}

// ttfbQuery completes qAlertTTFBP95 with o's objective and TTFBMinSamples
// (o: defaults set).
func ttfbQuery(o Options) string {
	return strings.NewReplacer("{objective_ms}", strconv.FormatFloat(o.ttfbMS(), 'f', 1, 64),
		"{min_samples}", strconv.Itoa(TTFBMinSamples)).Replace(qAlertTTFBP95)
}

// ruleLabels are a rule's labels: rule, the alerter's rule name (down,
// ttfb, burn_rate), severity and source "grafana", as the alerter's
// alerts (source vigil) and the generated Prometheus rules' (source
// prometheus) carry them, so one routing tree serves all three; slo names
// the objective (availability, latency).
func ruleLabels(rule, severity, slo string) map[string]string {
	return map[string]string{"rule": rule, "severity": severity, "source": "grafana", "slo": slo}
}

// alertRules are the rules for o (defaults set).
func alertRules(o Options) []alertRule {
	ttfbMS := fmtFloat(o.ttfbMS())
	return []alertRule{
		{
			uid:       "vigil-origin-down",
			title:     fmt.Sprintf("Origin down in %d or more regions", o.Quorum),
			forDur:    "1m",
			keep:      KeepFiringForDown,
			condition: "C",
			noData:    alerting.RuleNoDataStateOK, // no unhealthy region at all: no series
			labels:    ruleLabels(vigilalerting.RuleDown, "page", "availability"),
			annotations: map[string]string{
				"summary":     "{{ $labels.check }} × {{ $labels.target }} is unhealthy in {{ $values.B }} regions",
				"description": "The latest unexpired verdict of check {{ $labels.check }} against {{ $labels.target }} is unhealthy in several regions at once: the origin is down, not one vantage's network.",
			},
			flux:     []alertFlux{{"A", 300, qAlertRegionsDown}},
			exprs:    []cog.Builder[variants.Dataquery]{reduceLast("B", "A"), thresholdAbove("C", "B", float64(o.Quorum)-0.5)},
			exprRefs: []string{"B", "C"},
		},
		{
			uid:       "vigil-ttfb-p95",
			title:     fmt.Sprintf("TTFB p95 above %s ms in %d or more regions", ttfbMS, o.Quorum),
			forDur:    "5m",
			keep:      KeepFiringForTTFB,
			condition: "C",
			noData:    alerting.RuleNoDataStateNoData, // no run with a TTFB at all over the window
			labels:    ruleLabels(vigilalerting.RuleTTFB, "ticket", "latency"),
			annotations: map[string]string{
				"summary": fmt.Sprintf("{{ $labels.check }} × {{ $labels.target }} TTFB p95 over %d minutes above %s ms in {{ $values.B }} regions",
					TTFBWindow/time.Minute, ttfbMS),
				"description": fmt.Sprintf("In %d or more regions, the TTFB p95 of the check against the target over the last %d minutes is above the %s ms objective (each region with at least %d runs that got a first byte): the origin is slow, not one vantage's network.",
					o.Quorum, TTFBWindow/time.Minute, ttfbMS, TTFBMinSamples),
			},
			flux:     []alertFlux{{"A", alerting.Duration(TTFBWindow / time.Second), ttfbQuery(o)}},
			exprs:    []cog.Builder[variants.Dataquery]{reduceLast("B", "A"), thresholdAbove("C", "B", float64(o.Quorum)-0.5)},
			exprRefs: []string{"B", "C"},
		},
		burnRule(o, "vigil-availability-burn", BurnRateFast, BurnRateLong, BurnRateShort, KeepFiringForBurn),
		burnRule(o, "vigil-availability-burn-6h", BurnRateSlow, BurnRateSlowLong, BurnRateSlowShort, KeepFiringForBurnSlow),
	}
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
			For(r.forDur).
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
// folder "vigil", evaluated every minute) on o's datasource and bucket:
//
//   - origin down: a check's target unhealthy in ≥ Quorum regions
//     (latest unexpired verdict, last 5 m), for 1 m;
//   - TTFB p95 of a check × target over TTFBWindow above
//     TTFBP95ThresholdMS in ≥ Quorum regions (each with ≥ TTFBMinSamples
//     runs), for 5 m;
//   - availability burn rate of a check × target above BurnRateFast ×
//     (1 − SLOTarget) over both BurnRateLong and BurnRateShort in ≥ Quorum
//     regions (each with ≥ BurnMinRuns runs), for 2 m, and the same for
//     BurnRateSlow over BurnRateSlowLong and BurnRateSlowShort (the
//     alerter's two page pairs; the ticket pairs, over 1 and 3 days, are
//     left to the alerter and the Prometheus rules).
//
// Each keeps firing as the alerter's rule does (KeepFiringForDown,
// KeepFiringForTTFB, KeepFiringForBurn). The rules are built with the
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
	sb.WriteString("# Code generated by go generate ./reporting/grafana; DO NOT EDIT.\n")
	sb.WriteString("# Grafana unified alerting file provisioning: vigil SLO rules on the " + o.withDefaults().DatasourceUID + " datasource.\n")
	var body strings.Builder
	if err := writeYAML(&body, doc, 0, yamlKeyOrder); err != nil {
		return nil, fmt.Errorf("grafana: alert rules: %w", err)
	}
	sb.WriteString(strings.TrimPrefix(body.String(), "\n"))
	return []byte(sb.String()), nil
}
