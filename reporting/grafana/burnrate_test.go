package grafana

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"
)

// provisionedRule reads one rule of the committed alerting provisioning
// file, the one Grafana loads.
func provisionedRule(t *testing.T, uid string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(examples, "provisioning", "alerting", "vigil-slo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return ruleOf(t, raw, uid)
}

// ruleOf reads the rule uid of an alerting provisioning file.
func ruleOf(t *testing.T, raw []byte, uid string) map[string]any {
	t.Helper()
	var doc struct {
		Groups []struct {
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var uids []any
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r["uid"] == uid {
				return r
			}
			uids = append(uids, r["uid"])
		}
	}
	t.Fatalf("no rule %s in the alert rules (they have %v)", uid, uids)
	return nil
}

// firing evaluates a provisioned rule the way Grafana does, for the
// expressions it uses: each Flux query over its relative range ending at
// now, "reduce last" and "threshold gt" per series. A series is named by
// its label columns (every column but _value, _time, _start, _stop,
// result and table) in column-name order, joined by "/": "check/target",
// or "check/region" for the dead-man rules. It returns the firing series
// → the summary annotation with $labels and $values filled in.
func firing(t *testing.T, db *influxd, rule map[string]any, now time.Time) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, ann := range firingAnnotations(t, db, rule, now) {
		out[k] = ann["summary"]
	}
	return out
}

// firingAnnotations is firing with every annotation of each firing
// series rendered. As Grafana does, $values holds, for each query and
// expression, its series with the alert's labels, or else one whose
// labels include the alert's or are included in them: a query may carry
// more labels than the alert, for its annotations only.
func firingAnnotations(t *testing.T, db *influxd, rule map[string]any, now time.Time) map[string]map[string]string {
	t.Helper()
	values := evalRule(t, db, rule, now)
	// includes reports whether a has every label of b.
	includes := func(a, b map[string]string) bool {
		for k, v := range b {
			if w, ok := a[k]; !ok || w != v {
				return false
			}
		}
		return true
	}
	ann, _ := rule["annotations"].(map[string]any)
	out := map[string]map[string]string{}
	for k, p := range values[rule["condition"].(string)] {
		if p.value == 0 {
			continue
		}
		vals := map[string]templateValue{}
		for ref, vs := range values {
			if m, ok := vs[k]; ok {
				vals[ref] = templateValue{Labels: m.labels, Value: m.value}
				continue
			}
			for _, m := range vs {
				if includes(m.labels, p.labels) || includes(p.labels, m.labels) {
					vals[ref] = templateValue{Labels: m.labels, Value: m.value}
				}
			}
		}
		out[k] = map[string]string{}
		for name, text := range ann {
			out[k][name] = renderSummary(t, text.(string), p.labels, vals)
		}
	}
	return out
}

// rulePoint is one series' labels and value in a rule's evaluation.
type rulePoint struct {
	labels map[string]string
	value  float64
}

// evalRule evaluates a provisioned rule as firing does and returns every
// query's and expression's series by refId, each series by name (see
// firing). Besides "reduce last" and "threshold gt" it evaluates a math
// expression "$X >= $Y" between series of the same labels, as Grafana
// pairs them.
func evalRule(t *testing.T, db *influxd, rule map[string]any, now time.Time) map[string]map[string]rulePoint {
	t.Helper()
	type point = rulePoint
	type series = map[string]point // series name → labels and value
	values := map[string]series{}
	data, _ := rule["data"].([]any)
	for _, d := range data {
		q, _ := d.(map[string]any)
		ref, _ := q["refId"].(string)
		model, _ := q["model"].(map[string]any)
		switch {
		case q["datasourceUid"] == DatasourceUID:
			rng, _ := q["relativeTimeRange"].(map[string]any)
			from, _ := rng["from"].(int)
			flux := Interpolate(model["query"].(string), nil, now.Add(-time.Duration(from)*time.Second), now, time.Minute)
			res, err := db.query(flux)
			if err != nil {
				t.Fatalf("rule query %s: %v\n%s", ref, err, flux)
			}
			vi := slices.Index(res.header, "_value")
			var cols []string
			for _, c := range res.header {
				if !strings.HasPrefix(c, "_") && c != "result" && c != "table" && c != "" {
					cols = append(cols, c)
				}
			}
			sort.Strings(cols)
			if vi < 0 || len(cols) == 0 {
				t.Fatalf("rule query %s: columns %v, want labels and _value", ref, res.header)
			}
			values[ref] = series{}
			for _, row := range res.rows {
				v, err := strconv.ParseFloat(row[vi], 64)
				if err != nil {
					t.Fatalf("rule query %s: _value %q: %v", ref, row[vi], err)
				}
				var parts []string
				labels := map[string]string{}
				for _, c := range cols {
					parts = append(parts, row[slices.Index(res.header, c)])
					labels[c] = row[slices.Index(res.header, c)]
				}
				// Rows are per series: the last one stays.
				values[ref][strings.Join(parts, "/")] = point{labels, v}
			}
		case model["type"] == "reduce" && model["reducer"] == "last":
			values[ref] = values[model["expression"].(string)]
		case model["type"] == "threshold":
			conds, _ := model["conditions"].([]any)
			c0, _ := conds[0].(map[string]any)
			ev, _ := c0["evaluator"].(map[string]any)
			params, _ := ev["params"].([]any)
			if len(conds) != 1 || ev["type"] != "gt" || len(params) != 1 {
				t.Fatalf("threshold %s: %v: only one gt condition is evaluated here", ref, conds)
			}
			var limit float64
			switch l := params[0].(type) {
			case float64:
				limit = l
			case int:
				limit = float64(l)
			}
			out := series{}
			for k, p := range values[model["expression"].(string)] {
				if p.value > limit {
					out[k] = point{p.labels, 1}
				} else {
					out[k] = point{p.labels, 0}
				}
			}
			values[ref] = out
		case model["type"] == "math":
			m := regexp.MustCompile(`^\$(\w+) >= \$(\w+)$`).FindStringSubmatch(fmt.Sprint(model["expression"]))
			if m == nil {
				t.Fatalf("math %s: %v: only $X >= $Y is evaluated here", ref, model["expression"])
			}
			out := series{}
			for k, p := range values[m[1]] {
				q, ok := values[m[2]][k]
				if !ok {
					t.Fatalf("math %s: series %s of $%s has none in $%s (%v)", ref, k, m[1], m[2], values[m[2]])
				}
				out[k] = point{p.labels, 0}
				if p.value >= q.value {
					out[k] = point{p.labels, 1}
				}
			}
			values[ref] = out
		default:
			t.Fatalf("expression %s of type %v is not evaluated here", ref, model["type"])
		}
	}
	return values
}

// templateValue is an expression's value in an annotation template, as
// Grafana passes it in $values: {{ $values.B }} prints the number
// (strconv 'f', shortest), {{ $values.B.Value }} is the float64,
// {{ $values.B.Labels.name }} a label of its series.
type templateValue struct {
	Labels map[string]string
	Value  float64
}

func (v templateValue) String() string { return strconv.FormatFloat(v.Value, 'f', -1, 64) }

// renderSummary executes an annotation as Grafana does: Go text/template
// with $labels and $values defined first, and Grafana's reReplaceAll.
func renderSummary(t *testing.T, text string, labels map[string]string, values map[string]templateValue) string {
	t.Helper()
	funcs := template.FuncMap{"reReplaceAll": func(pattern, repl, text string) string {
		return regexp.MustCompile(pattern).ReplaceAllString(text, repl)
	}}
	tmpl, err := template.New("summary").Option("missingkey=error").Funcs(funcs).
		Parse("{{- $labels := .Labels -}}{{- $values := .Values -}}" + text)
	if err != nil {
		t.Fatalf("summary %q: %v", text, err)
	}
	var sb strings.Builder
	if err := tmpl.Execute(&sb, map[string]any{"Labels": labels, "Values": values}); err != nil {
		t.Fatalf("summary %q: %v", text, err)
	}
	return sb.String()
}

// TestBurnRateRuleNeedsQuorum evaluates the provisioned
// vigil-availability-burn rule over the sample data in a real InfluxDB
// 1.8: edge-b fails in eu-west and us-east for the last 5 minutes (2
// regions, the quorum) and pages; edge-a fails every 10th run in us-east
// only, a 100× burn of a 99.9% budget over 1h and 5m in one region, and
// pages nobody, as vigil's alerter with quorum 2 would not.
func TestBurnRateRuleNeedsQuorum(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	db.write(t, sampleLines(now))
	got := firing(t, db, provisionedRule(t, "vigil-availability-burn"), now.Add(time.Second))
	want := map[string]string{}
	for _, check := range sampleChecks {
		want[check+"/edge-b"] = check + " × edge-b burns its error budget above 14.4x over 1h and 5m in 2 regions"
	}
	if len(got) != len(want) {
		t.Errorf("firing %v, want only edge-b of each check (edge-a burns in us-east only, below quorum %d)", got, Quorum)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: summary %q, want %q", k, got[k], w)
		}
	}

	// The region count per pair, as the rule's query gives it.
	res, err := db.query(Interpolate(strings.ReplaceAll(burnQuery(Options{}.withDefaults()), "${bucket}", DefaultBucket), nil, now.Add(-BurnRateLong), now.Add(time.Second), time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]string{}
	for _, row := range res.rows {
		counts[row[slices.Index(res.header, "check")]+"/"+row[slices.Index(res.header, "target")]] = row[slices.Index(res.header, "_value")]
	}
	for _, check := range sampleChecks {
		// ap-south's slow-only edge-a runs are available: not burning.
		if counts[check+"/edge-a"] != "1" || counts[check+"/edge-b"] != "2" {
			t.Errorf("regions burning: %v, want %s/edge-a 1 (us-east) and %s/edge-b 2", counts, check, check)
		}
	}
}

// TestSlowPageBurnRule: vigil-availability-burn-6h is the alerter's second
// page pair, 6× the budget over 6h and 30m, with the same quorum: edge-c
// failing 4 runs of 360 in the last 6 hours in two regions (11× a 99.9 %
// budget), one of them 15 minutes ago and none in the last 5, pages from it
// and not from the 1h/5m rule; it holds for 30m, the pair's short window,
// as burn_rate.keep_firing_for.
func TestSlowPageBurnRule(t *testing.T) {
	rule := provisionedRule(t, "vigil-availability-burn-6h")
	if rule["keepFiringFor"] != "30m" {
		t.Errorf("keepFiringFor = %v, want 30m", rule["keepFiringFor"])
	}
	labels, _ := rule["labels"].(map[string]any)
	if labels["severity"] != "page" || labels["rule"] != "burn_rate" {
		t.Errorf("labels %v", labels)
	}
	db := startInfluxd(t)
	now := time.Now()
	var sb strings.Builder
	// One run a minute for 6 hours; in eu-west and us-east runs 50, 150,
	// 250 and 345 of edge-c fail.
	for i := 0; i < 360; i++ {
		at := now.Add(-time.Duration(360-i) * time.Minute)
		for _, region := range sampleRegions {
			ok := !(region != "ap-south" && (i%100 == 50 || i == 345))
			fmt.Fprintf(&sb, "vigil_verdict,check=api,region=%s,target=edge-c,tier=shallow,vantage=%s-1 ok=%t,cause=%q,state=\"healthy\",ttfb_ms=100 %d\n",
				region, region, ok, map[bool]string{true: "", false: "status"}[ok], at.UnixNano())
		}
	}
	db.write(t, sb.String())
	got := firing(t, db, rule, now.Add(time.Second))
	want := "api × edge-c burns its error budget above 6x over 6h and 30m in 2 regions"
	if len(got) != 1 || got["api/edge-c"] != want {
		t.Errorf("6h rule firing %v, want api/edge-c: %q", got, want)
	}
	if fast := firing(t, db, provisionedRule(t, "vigil-availability-burn"), now.Add(time.Second)); len(fast) != 0 {
		t.Errorf("1h/5m rule firing %v for a 6x burn", fast)
	}
}
