package grafana

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"

	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// DatasourceUID is the default uid of the InfluxDB (Flux) datasource every
// generated panel, variable and alert rule queries (Options.DatasourceUID).
// The provisioning file examples/grafana/provisioning/datasources/vigil.yaml
// creates it.
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

// Options are what a Grafana installation may need to differ in the
// generated dashboards and alert rules. The zero value generates the
// committed files under examples/grafana.
type Options struct {
	// DatasourceUID is the uid of an existing InfluxDB datasource in Flux
	// mode that every panel, variable and alert rule queries instead of
	// the provisioned one: at most 40 letters, digits, "-" and "_", as
	// Grafana's uids. "": DatasourceUID (vigil-influxdb).
	DatasourceUID string
	// Bucket is the default of the dashboards' $bucket variable and the
	// bucket the alert rules read: "db/rp" on InfluxDB 1.8, a bucket name
	// on 2.x. "": DefaultBucket (vigil/autogen).
	Bucket string
	// Quorum is how many regions must agree before a rule fires (origin
	// down, certificate, TTFB, burn rate), and below how many reporting
	// regions the quorum-lost rule fires; keep it equal to the alerter's
	// alerting.quorum. A check with OneRegion in Checks needs 1. 0: Quorum
	// (2).
	Quorum int
	// TTFBP95 is the TTFB p95 objective of the TTFB rule and the
	// dashboards' TTFB thresholds. 0: TTFBP95ThresholdMS (600 ms).
	TTFBP95 time.Duration
	// Objective is the availability objective in percent (99.9) of the
	// burn-rate rule and the dashboards' availability colours, above 0 and
	// below 100. 0: SLOTarget × 100 (99.9). With Alerting, the rules take
	// the objectives of SLOs instead, and this sets the dashboards only.
	Objective float64

	// Alerting, when not nil, is vigil's alerting section, validated
	// (alerting.Config.ValidateAndSetDefaults: defaults set), and the
	// alert rules follow it as vigil's alerter and
	// alerting.PrometheusRules do: each rule's disabled, for,
	// keep_firing_for and severity, ttfb.min_samples, burn_rate.min_runs
	// and no_ticket, dead_man, quorum_lost and live_errors (its
	// thresholds); Quorum, when set, overrides its quorum.
	// The SLO rules then come from SLOs, one set per SLO. nil: the default
	// rules listed at AlertRules, over every check.
	Alerting *vigilalerting.Config
	// SLOs are the slos section (validated: windows set), read only with
	// Alerting: a TTFB rule for each SLO with ttfb_p95 over its window and
	// the burn-rate rules for each SLO with an objective, over its check
	// (and target). Empty: no TTFB or burn-rate rule.
	SLOs []vigilalerting.SLO
	// Checks are the configured checks with their intervals and tiers, as
	// alerting.PrometheusRules takes them: one dead-man rule per distinct
	// interval over its checks only, the tier label of the burn-rate
	// rules, the interval their runs floor counts with (a check not
	// listed: the interval_ms of the region's newest run), and, with
	// OneRegion, a quorum of 1 in every rule that counts regions (origin
	// down, certificate, TTFB, burn rate, quorum lost), as vigil's alerter
	// counts a push check with push.region. nil: one dead-man rule over
	// every check, with alerting.DeadManPromWindow.
	Checks []vigilalerting.CheckInterval
	// GeneratedBy is the command the alert rules file says wrote it.
	// "": the examples' `go generate ./reporting/grafana`.
	GeneratedBy string
}

// Errors of Options.Validate.
var (
	ErrDatasourceUID = errors.New("not a Grafana datasource uid")
	ErrBucket        = errors.New("not usable as the bucket")
	ErrObjective     = errors.New("not a usable objective")
)

// maxUIDLen is the longest uid Grafana accepts (util.MaxUIDLength).
const maxUIDLen = 40

// Validate reports an Options field Grafana or Flux would refuse: a
// datasource uid longer than 40 characters or with a character other than
// a letter, digit, "-" or "_" (Grafana's uid rule), or a bucket that is
// blank or holds a character that would break out of the alert rules'
// Flux string literal (", \, $ for Flux's ${} interpolation, a control
// character) or split the $bucket variable (",": a custom variable's
// values are comma-separated).
func (o Options) Validate() error {
	if n := len([]rune(o.DatasourceUID)); n > maxUIDLen {
		return fmt.Errorf("datasource uid %q: %w: %d characters, at most %d", o.DatasourceUID, ErrDatasourceUID, n, maxUIDLen)
	}
	for _, r := range o.DatasourceUID {
		if !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return fmt.Errorf("datasource uid %q: %w: %q is not a letter, digit, - or _", o.DatasourceUID, ErrDatasourceUID, string(r))
		}
	}
	if o.Bucket != "" && strings.TrimSpace(o.Bucket) == "" {
		return fmt.Errorf("bucket %q: %w: blank", o.Bucket, ErrBucket)
	}
	for _, r := range o.Bucket {
		if r == '"' || r == '\\' || r == '$' || r == ',' || unicode.IsControl(r) {
			return fmt.Errorf("bucket %q: %w: %q would break the Flux string or the $bucket variable", o.Bucket, ErrBucket, string(r))
		}
	}
	if o.Quorum < 0 {
		return fmt.Errorf("quorum %d: %w: at least 1 region", o.Quorum, ErrObjective)
	}
	if o.TTFBP95 < 0 || o.TTFBP95 > 0 && o.TTFBP95 < time.Millisecond {
		return fmt.Errorf("ttfb p95 %s: %w: at least 1ms", o.TTFBP95, ErrObjective)
	}
	if o.Objective < 0 || o.Objective >= 100 || math.IsNaN(o.Objective) {
		return fmt.Errorf("objective %g%%: %w: above 0%% and below 100%%", o.Objective, ErrObjective)
	}
	if o.Alerting != nil {
		for i, s := range o.SLOs {
			if s.Name == "" || s.Check == "" || !fluxSafe(s.Name) || !fluxSafe(s.Check) || !fluxSafe(s.Target) {
				return fmt.Errorf("slos[%d]: name %q, check %q, target %q: %w: want letters, digits, _ . : -", i, s.Name, s.Check, s.Target, ErrObjective)
			}
			if s.Objective < 0 || s.Objective >= 100 || s.TTFBP95 < 0 || s.Window < 0 || (s.TTFBP95 > 0 && s.Window == 0) {
				return fmt.Errorf("slos[%d] (%s): %w: objective %s, ttfb_p95 %s, window %s", i, s.Name, ErrObjective, s.Objective, s.TTFBP95, s.Window)
			}
		}
	}
	for i, c := range o.Checks {
		if !fluxSafe(c.Check) {
			return fmt.Errorf("checks[%d]: name %q: %w: want letters, digits, _ . : -", i, c.Check, ErrObjective)
		}
	}
	return nil
}

// fluxSafe reports whether a check, target or SLO name can be written in
// a Flux string literal and a label as is: the characters vigil's config
// allows in names (letters, digits, _ . : -).
func fluxSafe(s string) bool {
	for _, r := range s {
		if !(r == '_' || r == '.' || r == ':' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// withDefaults fills the empty fields with their defaults.
func (o Options) withDefaults() Options {
	if o.DatasourceUID == "" {
		o.DatasourceUID = DatasourceUID
	}
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if o.Quorum == 0 {
		o.Quorum = Quorum
		if o.Alerting != nil && o.Alerting.Quorum > 0 {
			o.Quorum = o.Alerting.Quorum
		}
	}
	if o.TTFBP95 == 0 {
		o.TTFBP95 = time.Duration(TTFBP95ThresholdMS * float64(time.Millisecond))
	}
	if o.Objective == 0 {
		o.Objective = SLOTarget * 100
	}
	return o
}

// ttfbMS is the TTFB objective in milliseconds (defaults set).
func (o Options) ttfbMS() float64 { return float64(o.TTFBP95) / float64(time.Millisecond) }

// target is the availability objective as a share, 0..1 (defaults set).
func (o Options) target() float64 { return o.Objective / 100 }

// ref is the datasource reference every panel and query carries.
func (o Options) ref() common.DataSourceRef {
	typ, uid := DatasourceType, o.withDefaults().DatasourceUID
	return common.DataSourceRef{Type: &typ, Uid: &uid}
}

// datasource is the reference to the default datasource, DatasourceUID.
func datasource() common.DataSourceRef { return Options{}.ref() }

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

// Datasource points the query at another datasource (Options.ref).
func (b *FluxQueryBuilder) Datasource(ref common.DataSourceRef) *FluxQueryBuilder {
	b.q.Datasource = &ref
	return b
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
