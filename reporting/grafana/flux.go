package grafana

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
)

// DatasourceUID is the uid of the InfluxDB (Flux) datasource every generated
// panel, variable and alert rule queries. The provisioning file
// examples/grafana/provisioning/datasources/vigil.yaml creates it.
const DatasourceUID = "vigil-influxdb"

// DatasourceType is Grafana's plugin id for InfluxDB.
const DatasourceType = "influxdb"

// DefaultBucket is the default value of the dashboards' $bucket variable and
// the bucket the alert rules read: database "vigil", retention policy
// "autogen" on InfluxDB 1.8 (a bucket of that name works on 2.x).
const DefaultBucket = "vigil/autogen"

// Measurement names written by the InfluxDB sink (package reporting/influx).
const (
	MeasurementVerdict = "vigil_verdict"
	MeasurementSignal  = "vigil_signal"
)

// datasource is the reference every panel and query carries.
func datasource() common.DataSourceRef {
	typ, uid := DatasourceType, DatasourceUID
	return common.DataSourceRef{Type: &typ, Uid: &uid}
}

// FluxQuery is a Grafana InfluxDB target in Flux mode: the JSON shape the
// InfluxDB datasource stores for a panel query ({"refId", "datasource",
// "query"}). The foundation SDK has no InfluxDB query type, so this is a
// custom variant (see the SDK's "custom query type" how-to).
type FluxQuery struct {
	// RefID names the query within its panel or rule ("A", "B", …).
	RefID string `json:"refId"`
	// Hide keeps the query from the visualisation when true; nil: shown.
	Hide *bool `json:"hide,omitempty"`
	// Datasource is the InfluxDB datasource; NewFluxQueryBuilder sets
	// DatasourceUID.
	Datasource *common.DataSourceRef `json:"datasource,omitempty"`
	// Query is the Flux text, with Grafana variables not yet substituted.
	Query string `json:"query"`
}

var (
	_ variants.Dataquery              = FluxQuery{}
	_ cog.Builder[variants.Dataquery] = (*FluxQueryBuilder)(nil)
)

// ImplementsDataqueryVariant marks FluxQuery as a dataquery for the SDK.
func (FluxQuery) ImplementsDataqueryVariant() {}

// DataqueryType is the datasource plugin id, "influxdb".
func (FluxQuery) DataqueryType() string { return DatasourceType }

// Validate reports a query without refId or text.
func (q FluxQuery) Validate() error {
	if q.RefID == "" {
		return fmt.Errorf("flux query: refId is empty")
	}
	if strings.TrimSpace(q.Query) == "" {
		return fmt.Errorf("flux query %s: query is empty", q.RefID)
	}
	return nil
}

// Equals compares two dataqueries field by field.
func (q FluxQuery) Equals(other variants.Dataquery) bool {
	o, ok := other.(FluxQuery)
	if !ok {
		return false
	}
	a, _ := json.Marshal(q)
	b, _ := json.Marshal(o)
	return string(a) == string(b)
}

// FluxQueryVariantConfig lets the SDK's runtime unmarshal dashboards that
// hold FluxQuery targets (cog.NewRuntime().RegisterDataqueryVariant).
func FluxQueryVariantConfig() variants.DataqueryConfig {
	return variants.DataqueryConfig{
		Identifier: DatasourceType,
		DataqueryUnmarshaler: func(raw []byte) (variants.Dataquery, error) {
			var q FluxQuery
			err := json.Unmarshal(raw, &q)
			return q, err
		},
	}
}

// FluxQueryBuilder builds a FluxQuery against the vigil datasource.
type FluxQueryBuilder struct {
	q FluxQuery
}

// NewFluxQueryBuilder starts a query with the given Flux text and refId.
func NewFluxQueryBuilder(refID, flux string) *FluxQueryBuilder {
	ds := datasource()
	return &FluxQueryBuilder{q: FluxQuery{RefID: refID, Datasource: &ds, Query: flux}}
}

// Hide hides the query's result from the panel (it still runs).
func (b *FluxQueryBuilder) Hide(hide bool) *FluxQueryBuilder {
	b.q.Hide = &hide
	return b
}

// Build returns the query or its validation error.
func (b *FluxQueryBuilder) Build() (variants.Dataquery, error) {
	if err := b.q.Validate(); err != nil {
		return FluxQuery{}, err
	}
	return b.q, nil
}

// AllValue is what Grafana substitutes for a multi-value variable set to
// "All": the variables' allValue, a regex matching anything.
const AllValue = ".*"

// Interpolate renders a panel's Flux text the way Grafana does before it
// sends it to InfluxDB: dashboard variables first (${name:regex},
// ${name}, $name), then v.timeRangeStart / v.timeRangeStop as RFC 3339 time
// literals and v.windowPeriod as a duration literal (Grafana's Flux
// backend replaces the text; it does not pass a `v` record).
//
// vars maps a variable name to its selected values; a single value of
// AllValue stands for "All". ${name:regex} renders one value escaped,
// several as (a|b). ${name} and $name render one value as is and several
// as {a,b} (Grafana's default glob format).
func Interpolate(flux string, vars map[string][]string, start, stop time.Time, window time.Duration) string {
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	// Longest first so $check does not eat $checks.
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, name := range names {
		vals := vars[name]
		flux = strings.ReplaceAll(flux, "${"+name+":regex}", regexFormat(vals))
		flux = strings.ReplaceAll(flux, "${"+name+"}", globFormat(vals))
		flux = strings.ReplaceAll(flux, "$"+name, globFormat(vals))
	}
	flux = strings.ReplaceAll(flux, "v.timeRangeStart", start.UTC().Format(time.RFC3339Nano))
	flux = strings.ReplaceAll(flux, "v.timeRangeStop", stop.UTC().Format(time.RFC3339Nano))
	flux = strings.ReplaceAll(flux, "v.windowPeriod", window.String())
	return flux
}

func regexFormat(vals []string) string {
	if len(vals) == 1 && vals[0] == AllValue {
		return AllValue
	}
	esc := make([]string, len(vals))
	for i, v := range vals {
		// Grafana's regex format also escapes "/", the Flux regex delimiter.
		esc[i] = strings.ReplaceAll(regexp.QuoteMeta(v), "/", `\/`)
	}
	if len(esc) == 1 {
		return esc[0]
	}
	return "(" + strings.Join(esc, "|") + ")"
}

func globFormat(vals []string) string {
	if len(vals) == 1 {
		return vals[0]
	}
	return "{" + strings.Join(vals, ",") + "}"
}
