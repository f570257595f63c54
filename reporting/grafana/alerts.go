package grafana

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/alerting"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/expr"
)

// SLO figures the alert rules and the dashboards' thresholds are built on.
const (
	// SLOTarget is the availability objective: share of passing runs, 0..1.
	SLOTarget = 0.999
	// TTFBP95ThresholdMS is the TTFB p95 objective in milliseconds.
	TTFBP95ThresholdMS = 600.0
	// BurnRateFast is the fast-burn multiple of the error budget (Google SRE
	// workbook: 2 % of a 30-day budget in 1 h), checked over 1 h and 5 m.
	BurnRateFast = 14.4
	// MinRegionsDown is how many regions must see an origin unhealthy
	// before the "origin down" rule fires.
	MinRegionsDown = 2
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

func math(refID, expression string) cog.Builder[variants.Dataquery] {
	return expr.NewExprBuilder().TypeMath(expr.NewTypeMathBuilder().
		RefId(refID).
		Datasource(exprRef()).
		Expression(expression))
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func alertRules() []alertRule {
	budget := fmtFloat(1 - SLOTarget)
	// 1 - 0.999 is 0.0010000000000000009 in float64; keep the literal short.
	if b, err := strconv.ParseFloat(budget, 64); err == nil {
		budget = strconv.FormatFloat(b, 'g', 6, 64)
	}
	burn := fmt.Sprintf(qAlertBurnRate, budget)
	return []alertRule{
		{
			uid:       "vigil-origin-down",
			title:     fmt.Sprintf("Origin down in %d or more regions", MinRegionsDown),
			forDur:    "1m",
			condition: "C",
			noData:    alerting.RuleNoDataStateOK, // no unhealthy region at all: no series
			labels:    map[string]string{"severity": "page", "slo": "availability"},
			annotations: map[string]string{
				"summary":     "{{ $labels.check }} → {{ $labels.target }} is unhealthy in {{ $values.B }} regions",
				"description": "The latest unexpired verdict of check {{ $labels.check }} against {{ $labels.target }} is unhealthy in several regions at once: the origin is down, not one vantage's network.",
			},
			flux:     []alertFlux{{"A", 300, qAlertRegionsDown}},
			exprs:    []cog.Builder[variants.Dataquery]{reduceLast("B", "A"), thresholdAbove("C", "B", MinRegionsDown-0.5)},
			exprRefs: []string{"B", "C"},
		},
		{
			uid:       "vigil-ttfb-p95",
			title:     fmt.Sprintf("TTFB p95 above %s ms", fmtFloat(TTFBP95ThresholdMS)),
			forDur:    "5m",
			condition: "C",
			noData:    alerting.RuleNoDataStateNoData,
			labels:    map[string]string{"severity": "ticket", "slo": "latency"},
			annotations: map[string]string{
				"summary":     "{{ $labels.check }} TTFB p95 in {{ $labels.region }} is {{ humanize $values.B }} ms",
				"description": fmt.Sprintf("TTFB p95 over the last 10 minutes is above the %s ms objective.", fmtFloat(TTFBP95ThresholdMS)),
			},
			flux:     []alertFlux{{"A", 600, qAlertTTFBP95}},
			exprs:    []cog.Builder[variants.Dataquery]{reduceLast("B", "A"), thresholdAbove("C", "B", TTFBP95ThresholdMS)},
			exprRefs: []string{"B", "C"},
		},
		{
			uid:       "vigil-availability-burn",
			title:     fmt.Sprintf("Availability error budget burning %sx (1h and 5m)", fmtFloat(BurnRateFast)),
			forDur:    "2m",
			condition: "E",
			noData:    alerting.RuleNoDataStateNoData,
			labels:    map[string]string{"severity": "page", "slo": "availability"},
			annotations: map[string]string{
				"summary": "{{ $labels.check }} burns its error budget at {{ humanize $values.C }}x over 1h",
				"description": fmt.Sprintf("Failed-run ratio over 1h and over 5m are both above %sx the error budget of a %s%% availability SLO.",
					fmtFloat(BurnRateFast), fmtFloat(SLOTarget*100)),
			},
			flux: []alertFlux{{"A", 3600, burn}, {"B", 300, burn}},
			exprs: []cog.Builder[variants.Dataquery]{
				reduceLast("C", "A"), reduceLast("D", "B"),
				math("E", fmt.Sprintf("$C > %s && $D > %s", fmtFloat(BurnRateFast), fmtFloat(BurnRateFast))),
			},
			exprRefs: []string{"C", "D", "E"},
		},
	}
}

func alertQueries() []NamedQuery {
	var qs []NamedQuery
	for _, r := range alertRules() {
		for _, f := range r.flux {
			qs = append(qs, NamedQuery{Dashboard: "alerting", Panel: r.title, RefID: f.refID,
				Flux: strings.ReplaceAll(f.text, "${bucket}", DefaultBucket)})
		}
	}
	return qs
}

// ruleGroup builds the SLO rules with the SDK's alerting types.
func ruleGroup() ([]alerting.Rule, error) {
	var rules []alerting.Rule
	for _, r := range alertRules() {
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
		for _, f := range r.flux {
			text := strings.ReplaceAll(f.text, "${bucket}", DefaultBucket)
			b.WithQuery(alerting.NewQueryBuilder(f.refID).
				DatasourceUid(DatasourceUID).
				RelativeTimeRange(f.from, 0).
				Model(NewFluxQueryBuilder(f.refID, text)))
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

// AlertRules returns the SLO alert rules as a Grafana unified-alerting
// file-provisioning document (apiVersion 1, one group "vigil-slo" in
// folder "vigil", evaluated every minute) — the content of
// examples/grafana/provisioning/alerting/vigil-slo.yaml:
//
//   - origin down: a check's target unhealthy in ≥ MinRegionsDown regions
//     (latest unexpired verdict, last 5 m), for 1 m;
//   - TTFB p95 per check × region over 10 m above TTFBP95ThresholdMS, for 5 m;
//   - availability burn rate above BurnRateFast × (1 − SLOTarget) over both
//     1 h and 5 m, for 2 m.
//
// The rules are built with the SDK's alerting types (the API model) and
// reshaped into the file format: per-rule folderUID/ruleGroup/orgID move
// to the group.
func AlertRules() ([]byte, error) {
	rules, err := ruleGroup()
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
		for _, k := range []string{"folderUID", "ruleGroup", "orgID", "provenance", "updated", "id"} {
			delete(m, k)
		}
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
	sb.WriteString("# Grafana unified alerting file provisioning: vigil SLO rules on the vigil-influxdb datasource.\n")
	var body strings.Builder
	if err := writeYAML(&body, doc, 0, yamlKeyOrder); err != nil {
		return nil, fmt.Errorf("grafana: alert rules: %w", err)
	}
	sb.WriteString(strings.TrimPrefix(body.String(), "\n"))
	return []byte(sb.String()), nil
}
