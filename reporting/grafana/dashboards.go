package grafana

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/barchart"
	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Dashboard names: the keys of Dashboards() and the JSON file names
// (<name>.json) under examples/grafana/dashboards.
const (
	DashboardOverview = "overview"
	DashboardCheck    = "check"
	DashboardProxy    = "proxy"
)

// NamedQuery is one Flux query of a generated dashboard or alert rule.
type NamedQuery struct {
	// Dashboard is the dashboard name (DashboardOverview…), or "alerting"
	// for alert rules.
	Dashboard string
	// Panel is the panel title, "variable <name>" for a template variable's
	// query, or the alert rule title.
	Panel string
	// RefID is the query's refId within its panel or rule.
	RefID string
	// Flux is the query text with ${bucket} replaced by the bucket; the
	// other dashboard variables and Grafana's v.* variables are left for
	// Interpolate.
	Flux string
}

// board collects a dashboard's panels together with their queries.
type board struct {
	name    string
	opts    Options // defaults set
	b       *dashboard.DashboardBuilder
	queries []NamedQuery
}

// ds is the datasource every panel, variable and query of the board reads.
func (bd *board) ds() common.DataSourceRef { return bd.opts.ref() }

func newBoard(o Options, name, uid, title, description string) *board {
	b := dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"vigil"}).
		Refresh("1m").
		Time("now-6h", "now").
		Timezone("browser").
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Link(dashboard.NewDashboardLinkBuilder("vigil").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"vigil"}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true))
	return &board{name: name, opts: o.withDefaults(), b: b}
}

// flux returns a target for panel and records its query.
func (bd *board) flux(panel, refID, text string) *FluxQueryBuilder {
	bd.queries = append(bd.queries, NamedQuery{
		Dashboard: bd.name, Panel: panel, RefID: refID,
		Flux: strings.ReplaceAll(text, "${bucket}", bd.opts.Bucket),
	})
	return NewFluxQueryBuilder(refID, text).Datasource(bd.ds())
}

func (bd *board) variable(name, text string, v cog.Builder[dashboard.VariableModel]) {
	bd.queries = append(bd.queries, NamedQuery{
		Dashboard: bd.name, Panel: "variable " + name, RefID: name,
		Flux: strings.ReplaceAll(text, "${bucket}", bd.opts.Bucket),
	})
	bd.b.WithVariable(v)
}

func ptr[T any](v T) *T { return &v }

func str(s string) dashboard.StringOrArrayOfString {
	return dashboard.StringOrArrayOfString{String: &s}
}

// bucketVariable is $bucket: where the verdicts live, "db/rp" on InfluxDB
// 1.8 or a bucket name on 2.x, by default Options.Bucket. Editable so one
// dashboard serves both.
func (bd *board) bucketVariable() {
	bucket := bd.opts.Bucket
	bd.b.WithVariable(dashboard.NewCustomVariableBuilder("bucket").
		Label("Bucket").
		Description("InfluxDB bucket: db/retention-policy on 1.8, bucket name on 2.x").
		Values(dashboard.StringOrMap{String: ptr(bucket)}).
		Current(dashboard.VariableOption{Selected: ptr(true), Text: str(bucket), Value: str(bucket)}).
		Options([]dashboard.VariableOption{{Selected: ptr(true), Text: str(bucket), Value: str(bucket)}}).
		AllowCustomValue(true))
}

// regionVariable is $region, multi-valued with All (rendered as .*).
func (bd *board) regionVariable(query string) {
	all := dashboard.VariableOption{Selected: ptr(true), Text: str("All"), Value: str("$__all")}
	bd.variable("region", query, dashboard.NewQueryVariableBuilder("region").
		Label("Region").
		Datasource(bd.ds()).
		Query(dashboard.StringOrMap{String: ptr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(AllValue).
		Current(all))
}

// checkVariable is $check, single-valued.
func (bd *board) checkVariable() {
	bd.variable("check", qVarCheck, dashboard.NewQueryVariableBuilder("check").
		Label("Check").
		Datasource(bd.ds()).
		Query(dashboard.StringOrMap{String: ptr(qVarCheck)}).
		Definition(qVarCheck).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(false).
		IncludeAll(false))
}

// severityMappings turns the severity numbers of the state panels back
// into the state names with the usual colours.
func severityMappings() []dashboard.ValueMapping {
	res := func(text, color string, index int32) dashboard.ValueMappingResult {
		return dashboard.ValueMappingResult{Text: ptr(text), Color: ptr(color), Index: ptr(index)}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
		Type: dashboard.MappingTypeValueToText,
		Options: map[string]dashboard.ValueMappingResult{
			"0": res("healthy", "green", 0),
			"1": res("degraded", "yellow", 1),
			"2": res("unknown", "text", 2),
			"3": res("unhealthy", "red", 3),
		},
	}}}
}

// stateMappings colours the state names as severityMappings does.
func stateMappings() []dashboard.ValueMapping {
	res := func(color string, index int32) dashboard.ValueMappingResult {
		return dashboard.ValueMappingResult{Color: ptr(color), Index: ptr(index)}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
		Type: dashboard.MappingTypeValueToText,
		Options: map[string]dashboard.ValueMappingResult{
			"healthy":   res("green", 0),
			"degraded":  res("yellow", 1),
			"unknown":   res("text", 2),
			"unhealthy": res("red", 3),
		},
	}}}
}

// ejectedMappings names the 0/1 of the ejection timeline.
func ejectedMappings() []dashboard.ValueMapping {
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
		Type: dashboard.MappingTypeValueToText,
		Options: map[string]dashboard.ValueMappingResult{
			"0": {Text: ptr("in rotation"), Color: ptr("green"), Index: ptr(int32(0))},
			"1": {Text: ptr("ejected"), Color: ptr("red"), Index: ptr(int32(1))},
		},
	}}}
}

func thresholds(base string, steps ...any) *dashboard.ThresholdsConfigBuilder {
	ts := []dashboard.Threshold{{Value: nil, Color: base}}
	for i := 0; i+1 < len(steps); i += 2 {
		ts = append(ts, dashboard.Threshold{Value: ptr(steps[i].(float64)), Color: steps[i+1].(string)})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(ts)
}

// checkLink opens the per-check dashboard for the check named by expr
// (a Grafana data-link expression), keeping time range and regions.
func checkLink(expr string) *dashboard.DashboardLinkBuilder {
	return dashboard.NewDashboardLinkBuilder("Open check " + expr).
		Type(dashboard.DashboardLinkTypeLink).
		Url("/d/vigil-check/vigil-check?var-check=" + expr + "&${region:queryparam}&${bucket:queryparam}&${__url_time_range}")
}

// noFooter is a hidden table footer with a valid reducer list (Grafana
// expects an array there, not null).
func noFooter() *common.TableFooterOptionsBuilder {
	return common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"}).CountRows(false)
}

func tableLegend(calcs ...string) *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		ShowLegend(true).
		DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementBottom).
		Calcs(calcs)
}

func organize(order []string, rename map[string]string) dashboard.DataTransformerConfig {
	index := make(map[string]int, len(order))
	for i, name := range order {
		index[name] = i
	}
	return dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
		"indexByName": index, "renameByName": rename, "excludeByName": map[string]bool{},
	}}
}

// availabilityThresholds colour availability: red under 99 % (or 1 point
// under the objective when that is below 99 %), yellow under the objective,
// green above.
func (bd *board) availabilityThresholds() *dashboard.ThresholdsConfigBuilder {
	obj, red := bd.opts.Objective, 99.0
	if obj <= red {
		red = obj - 1
	}
	return thresholds("red", red, "yellow", obj, "green")
}

func overview(o Options) *board {
	bd := newBoard(o, DashboardOverview, "vigil-overview", "vigil / overview",
		"Latest verdict per check × region, availability and state history from vigil_verdict.")
	bd.bucketVariable()
	bd.regionVariable(qVarRegionVerdict)

	const matrix = "Verdict matrix (latest state, check × region)"
	bd.b.WithPanel(table.NewPanelBuilder().
		Title(matrix).
		Description("Worst latest state among each check's targets and vantages in a region. A verdict past its expiry at the end of the range is unknown.").
		Datasource(bd.ds()).
		WithTarget(bd.flux(matrix, "A", qMatrix)).
		Mappings(severityMappings()).
		CellOptions(common.TableCellOptions{TableColoredBackgroundCellOptions: &common.TableColoredBackgroundCellOptions{Type: common.TableCellDisplayModeColorBackground}}).
		OverrideByName("check", []dashboard.DynamicConfigValue{
			{Id: "custom.cellOptions", Value: map[string]any{"type": "auto"}},
			{Id: "custom.width", Value: 240},
		}).
		Align(common.FieldTextAlignmentCenter).
		DataLinks([]cog.Builder[dashboard.DashboardLink]{checkLink("${__data.fields.check}")}).
		Footer(noFooter()).
		Span(14).Height(10))

	const avail = "Availability over the range"
	bd.b.WithPanel(bargauge.NewPanelBuilder().
		Title(avail).
		Description("Share of passing runs per check in the selected regions.").
		Datasource(bd.ds()).
		WithTarget(bd.flux(avail, "A", qAvailability)).
		Unit("percent").Min(90).Max(100).Decimals(3).
		Thresholds(bd.availabilityThresholds()).
		DisplayName("${__field.labels.check}").
		DataLinks([]cog.Builder[dashboard.DashboardLink]{checkLink("${__field.labels.check}")}).
		Orientation(common.VizOrientationHorizontal).
		DisplayMode(common.BarGaugeDisplayModeBasic).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)).
		Span(10).Height(10))

	const history = "State history (check × region)"
	bd.b.WithPanel(statetimeline.NewPanelBuilder().
		Title(history).
		Description("Worst state per check and region in each interval.").
		Datasource(bd.ds()).
		WithTarget(bd.flux(history, "A", qStateHistory)).
		Mappings(severityMappings()).
		DisplayName("${__field.labels.check} ${__field.labels.region}").
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		FillOpacity(80).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(false)).
		Span(24).Height(10))

	const ttfb = "TTFB p95 per check"
	bd.b.WithPanel(timeseries.NewPanelBuilder().
		Title(ttfb).
		Datasource(bd.ds()).
		WithTarget(bd.flux(ttfb, "A", qTTFBByCheck)).
		Unit("ms").
		DisplayName("${__field.labels.check}").
		Thresholds(thresholds("green", bd.opts.ttfbMS(), "red")).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		Legend(tableLegend("mean", "max", "lastNotNull")).
		Span(24).Height(9))
	return bd
}

func check(o Options) *board {
	bd := newBoard(o, DashboardCheck, "vigil-check", "vigil / check",
		"One check in depth: TTFB by region, phase breakdown, failures by cause and the latest failures.")
	bd.bucketVariable()
	bd.checkVariable()
	bd.regionVariable(qVarRegionVerdict)

	const avail = "Availability by region"
	bd.b.WithPanel(stat.NewPanelBuilder().
		Title(avail).
		Datasource(bd.ds()).
		WithTarget(bd.flux(avail, "A", qCheckAvailability)).
		Unit("percent").Decimals(3).
		DisplayName("${__field.labels.region}").
		Thresholds(bd.availabilityThresholds()).
		ColorMode(common.BigValueColorModeBackground).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}).Values(false)).
		Span(8).Height(8))

	const states = "State by target × region"
	bd.b.WithPanel(statetimeline.NewPanelBuilder().
		Title(states).
		Datasource(bd.ds()).
		WithTarget(bd.flux(states, "A", qCheckStates)).
		Mappings(severityMappings()).
		DisplayName("${__field.labels.target} ${__field.labels.region}").
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		FillOpacity(80).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(false)).
		Span(16).Height(8))

	const current = "Current state (since when)"
	bd.b.WithPanel(table.NewPanelBuilder().
		Title(current).
		Description("Latest verdict per target × region × vantage, worst first, and since when its pair has been in that state (the verdict's since: down since 10:41, for 12 minutes, 5 seconds to the end of the range). Both sort as times and durations. Past its expiry a verdict is unknown, since its expiry. Empty where not known.").
		Datasource(bd.ds()).
		WithTarget(bd.flux(current, "A", qCurrentState)).
		WithTransformation(organize([]string{"target", "region", "vantage", "state", "since", "for"}, nil)).
		Mappings(stateMappings()).
		OverrideByName("state", []dashboard.DynamicConfigValue{
			{Id: "custom.cellOptions", Value: map[string]any{"type": "color-background"}},
		}).
		// since is Unix ms and for whole seconds (qCurrentState): numbers,
		// so the table sorts them as times and durations.
		OverrideByName("since", []dashboard.DynamicConfigValue{{Id: "unit", Value: "dateTimeAsIso"}}).
		OverrideByName("for", []dashboard.DynamicConfigValue{{Id: "unit", Value: "dtdurations"}}).
		Filterable(true).
		Footer(noFooter()).
		Span(24).Height(8))

	const ttfb = "TTFB p50 / p95 by region"
	bd.b.WithPanel(timeseries.NewPanelBuilder().
		Title(ttfb).
		Description("Time to first byte from the start of the run, per region.").
		Datasource(bd.ds()).
		WithTarget(bd.flux(ttfb, "A", fmt.Sprintf(qTTFBQuantile, "0.5"))).
		WithTarget(bd.flux(ttfb, "B", fmt.Sprintf(qTTFBQuantile, "0.95"))).
		Unit("ms").
		OverrideByQuery("A", []dashboard.DynamicConfigValue{{Id: "displayName", Value: "p50 ${__field.labels.region}"}}).
		OverrideByQuery("B", []dashboard.DynamicConfigValue{
			{Id: "displayName", Value: "p95 ${__field.labels.region}"},
			{Id: "custom.lineStyle", Value: map[string]any{"fill": "dash", "dash": []int{10, 10}}},
		}).
		Thresholds(thresholds("green", bd.opts.ttfbMS(), "red")).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		Legend(tableLegend("mean", "max", "lastNotNull")).
		Span(12).Height(9))

	const phases = "Phase breakdown (mean)"
	bd.b.WithPanel(timeseries.NewPanelBuilder().
		Title(phases).
		Description("dns + connect + tls + wait (server time to first byte) + transfer, stacked; wait is TTFB minus dns, connect and tls.").
		Datasource(bd.ds()).
		WithTarget(bd.flux(phases, "A", qPhases)).
		WithTransformation(organize([]string{"_time", "dns", "connect", "tls", "wait", "transfer"}, nil)).
		Unit("ms").
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).
		FillOpacity(60).
		Legend(tableLegend("mean", "max")).
		Span(12).Height(9))

	const causes = "Failures by cause"
	bd.b.WithPanel(barchart.NewPanelBuilder().
		Title(causes).
		Description("Failed runs by cause; slow runs (failed only a ttfb or duration objective: available) are under Recent slow runs.").
		Datasource(bd.ds()).
		WithTarget(bd.flux(causes, "A", qFailuresByCause)).
		XField("cause").
		Orientation(common.VizOrientationHorizontal).
		ShowValue(common.VisibilityModeAlways).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdFixed).FixedColor("red")).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(false)).
		Span(8).Height(9))

	const recent = "Recent failures"
	bd.b.WithPanel(runsTable(bd, recent, "The last 100 failed runs, newest first (slow runs are under Recent slow runs).", qRecentFailures))
	const slow = "Recent slow runs"
	bd.b.WithPanel(runsTable(bd, slow, "The last 100 runs that failed only a ttfb or duration objective (slow, not down), newest first.", qRecentSlow).
		Span(24))
	return bd
}

func proxy(o Options) *board {
	bd := newBoard(o, DashboardProxy, "vigil-proxy", "vigil / proxy",
		"What the proxies see on live traffic (vigil_signal): requests, errors, latency and ejections per origin.")
	bd.bucketVariable()
	bd.regionVariable(qVarRegionSignal)

	series := func(title, unit string, span uint32, target *FluxQueryBuilder) *timeseries.PanelBuilder {
		return timeseries.NewPanelBuilder().
			Title(title).
			Datasource(bd.ds()).
			WithTarget(target).
			Unit(unit).
			DisplayName("${__field.labels.origin}").
			Legend(tableLegend("sum", "max", "lastNotNull")).
			Span(span).Height(8)
	}
	// noSpan: an interval without requests is null in qErrorRate and
	// qSignalP95, drawn as a gap, not bridged.
	noSpan := common.BoolOrFloat64{Bool: ptr(false)}
	const requests = "Requests per origin (per interval)"
	bd.b.WithPanel(series(requests, "short", 12, bd.flux(requests, "A", fmt.Sprintf(qSignalSum, "requests"))))
	const errRate = "Error rate per origin (5xx + conn errors + timeouts)"
	bd.b.WithPanel(series(errRate, "percent", 12, bd.flux(errRate, "A", qErrorRate)).
		Description("Share of an origin's requests that failed, per interval. No value (a gap) where no request went through the origin: out of rotation or idle.").
		SpanNulls(noSpan))
	const s5xx = "5xx per origin (per interval)"
	bd.b.WithPanel(series(s5xx, "short", 8, bd.flux(s5xx, "A", fmt.Sprintf(qSignalSum, "status_5xx"))))
	const conn = "Connection errors per origin (per interval)"
	bd.b.WithPanel(series(conn, "short", 8, bd.flux(conn, "A", fmt.Sprintf(qSignalSum, "conn_errors"))))
	const timeouts = "Timeouts per origin (per interval)"
	bd.b.WithPanel(series(timeouts, "short", 8, bd.flux(timeouts, "A", fmt.Sprintf(qSignalSum, "timeouts"))))

	const p95 = "Latency p95 per origin (worst proxy)"
	bd.b.WithPanel(timeseries.NewPanelBuilder().
		Title(p95).
		Description("The worst p95 a proxy saw for the origin, per interval. No value (a gap) where no request went through the origin: out of rotation or idle.").
		Datasource(bd.ds()).
		WithTarget(bd.flux(p95, "A", qSignalP95)).
		Unit("ms").
		SpanNulls(noSpan).
		DisplayName("${__field.labels.origin}").
		Legend(tableLegend("mean", "max")).
		Span(24).Height(8))

	const ejected = "Ejections (origin × proxy)"
	bd.b.WithPanel(statetimeline.NewPanelBuilder().
		Title(ejected).
		Description("Whether each proxy instance had the origin out of rotation (passively ejected, down by the canaries' verdicts, or drained).").
		Datasource(bd.ds()).
		WithTarget(bd.flux(ejected, "A", qEjected)).
		Mappings(ejectedMappings()).
		DisplayName("${__field.labels.origin} @ ${__field.labels.vantage}").
		ShowValue(common.VisibilityModeNever).
		MergeValues(true).
		FillOpacity(80).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(false)).
		Span(24).Height(8))
	return bd
}

func boards(o Options) []*board { return []*board{overview(o), check(o), proxy(o)} }

// Dashboards builds the dashboards with the default Options: the files
// `go generate ./reporting/grafana` writes to examples/grafana/dashboards.
func Dashboards() (map[string][]byte, error) { return Options{}.Dashboards() }

// Dashboards builds the dashboards and returns their JSON (Grafana's
// classic dashboard model, indented, newline-terminated) by name
// (DashboardOverview, DashboardCheck, DashboardProxy), every panel and
// variable on o's datasource and bucket. The output is deterministic. An
// invalid o is an error (Validate).
func (o Options) Dashboards() (map[string][]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("grafana: %w", err)
	}
	out := make(map[string][]byte, 3)
	for _, bd := range boards(o) {
		d, err := bd.b.Build()
		if err != nil {
			return nil, fmt.Errorf("grafana: dashboard %s: %w", bd.name, err)
		}
		// Stable panel ids, in layout order, for links and alert annotations.
		for i := range d.Panels {
			if p := d.Panels[i].Panel; p != nil && p.Id == nil {
				p.Id = ptr(uint32(i + 1))
			}
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return nil, fmt.Errorf("grafana: dashboard %s: %w", bd.name, err)
		}
		raw, err := unescapeHTML(buf.Bytes())
		if err != nil {
			return nil, fmt.Errorf("grafana: dashboard %s: %w", bd.name, err)
		}
		out[bd.name] = raw
	}
	return out, nil
}

// Queries returns every Flux query of every generated panel, template
// variable and alert rule, in dashboard order, with ${bucket} replaced by
// DefaultBucket.
func Queries() []NamedQuery { return Options{}.Queries() }

// Queries is Queries for o's bucket (o valid).
func (o Options) Queries() []NamedQuery {
	var qs []NamedQuery
	for _, bd := range boards(o) {
		qs = append(qs, bd.queries...)
	}
	qs = append(qs, alertQueries(o)...)
	return qs
}

// unescapeHTML undoes encoding/json's HTML escaping of <, > and & (the
// SDK's nested MarshalJSON methods apply it whatever the outer encoder
// says) so Flux's |> stays readable in the committed files. It checks the
// result still decodes to the same value.
func unescapeHTML(raw []byte) ([]byte, error) {
	out := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(raw))
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(a, b) {
		return nil, fmt.Errorf("unescaping <, >, & changed the dashboard")
	}
	return []byte(out), nil
}

// dashboardNames lists the names of Dashboards() in a stable order.
func dashboardNames(m map[string][]byte) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// runsTable is a table of runs (qRecentFailures, qRecentSlow).
func runsTable(bd *board, title, desc, query string) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Title(title).
		Description(desc).
		Datasource(bd.ds()).
		WithTarget(bd.flux(title, "A", query)).
		WithTransformation(organize(
			[]string{"_time", "region", "target", "vantage", "state", "cause", "status_code", "ttfb_ms", "err", "url", "artifact"},
			map[string]string{"_time": "time", "status_code": "status", "ttfb_ms": "ttfb"})).
		OverrideByName("ttfb_ms", []dashboard.DynamicConfigValue{{Id: "unit", Value: "ms"}}).
		Filterable(true).
		Footer(noFooter()).
		Span(16).Height(9)
}
