package grafana

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"go.yaml.in/yaml/v3"
)

const examples = "../../examples/grafana"

const regenerate = "run `go generate ./reporting/grafana` and commit the result"

// TestDashboardsMatchCommittedFiles fails when the generator's output
// drifts from examples/grafana/dashboards.
func TestDashboardsMatchCommittedFiles(t *testing.T) {
	boards, err := Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	if got := dashboardNames(boards); !reflect.DeepEqual(got, []string{DashboardCheck, DashboardOverview, DashboardProxy}) {
		t.Fatalf("Dashboards() names = %v", got)
	}
	files, _ := filepath.Glob(filepath.Join(examples, "dashboards", "*.json"))
	if len(files) != len(boards) {
		t.Errorf("%d committed dashboard files %v, %d generated: %s", len(files), files, len(boards), regenerate)
	}
	for name, raw := range boards {
		path := filepath.Join(examples, "dashboards", name+".json")
		committed, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v: %s", path, err, regenerate)
			continue
		}
		if !bytes.Equal(committed, raw) {
			t.Errorf("%s differs from the generated dashboard: %s", path, regenerate)
		}
	}
	// Deterministic: a second build gives the same bytes.
	again, err := Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(boards, again) {
		t.Error("Dashboards() is not deterministic")
	}
}

// TestAlertRulesMatchCommittedFile does the same for the alert rules.
func TestAlertRulesMatchCommittedFile(t *testing.T) {
	raw, err := AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(examples, "provisioning", "alerting", "vigil-slo.yaml")
	committed, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v: %s", path, err, regenerate)
	}
	if !bytes.Equal(committed, raw) {
		t.Errorf("%s differs from AlertRules(): %s", path, regenerate)
	}
}

// TestDashboardProviderMatchesCommittedFile: the provider `vigil grafana`
// writes is the committed one.
func TestDashboardProviderMatchesCommittedFile(t *testing.T) {
	committed, err := os.ReadFile(filepath.Join(examples, "provisioning", "dashboards", "vigil.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(committed) != DashboardProvider {
		t.Error("examples/grafana/provisioning/dashboards/vigil.yaml differs from DashboardProvider: keep them equal")
	}
}

// TestDashboardsStructure checks what Grafana needs from each dashboard:
// it unmarshals with the SDK, has a unique uid, the variables, and every
// panel queries the vigil datasource in Flux through $bucket.
func TestDashboardsStructure(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	cog.NewRuntime().RegisterDataqueryVariant(FluxQueryVariantConfig())
	boards, err := Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	wantVars := map[string][]string{
		DashboardOverview: {"bucket", "region"},
		DashboardCheck:    {"bucket", "check", "region"},
		DashboardProxy:    {"bucket", "region"},
	}
	uids := map[string]bool{}
	for name, raw := range boards {
		t.Run(name, func(t *testing.T) {
			var d dashboard.Dashboard
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatalf("SDK cannot read the dashboard back: %v", err)
			}
			if d.Uid == nil || *d.Uid == "" || uids[*d.Uid] {
				t.Fatalf("uid %v missing or duplicated", d.Uid)
			}
			uids[*d.Uid] = true

			var vars []string
			for _, v := range d.Templating.List {
				vars = append(vars, v.Name)
				if v.Name == "bucket" && (v.Current == nil || v.Current.Value.String == nil || *v.Current.Value.String != DefaultBucket) {
					t.Errorf("$bucket default = %+v, want %s", v.Current, DefaultBucket)
				}
				if v.Name == "region" && (v.Multi == nil || !*v.Multi || v.AllValue == nil || *v.AllValue != AllValue) {
					t.Errorf("$region must be multi-valued with allValue %q", AllValue)
				}
				if v.Datasource != nil && (v.Datasource.Uid == nil || *v.Datasource.Uid != DatasourceUID) {
					t.Errorf("variable %s datasource %v", v.Name, v.Datasource)
				}
			}
			if sorted := slices.Sorted(slices.Values(vars)); !reflect.DeepEqual(sorted, wantVars[name]) {
				t.Errorf("variables = %v, want %v", vars, wantVars[name])
			}

			if len(d.Panels) < 4 {
				t.Fatalf("%d panels", len(d.Panels))
			}
			for _, p := range d.Panels {
				panel := p.Panel
				if panel == nil {
					continue
				}
				title := ""
				if panel.Title != nil {
					title = *panel.Title
				}
				if panel.Datasource == nil || panel.Datasource.Uid == nil || *panel.Datasource.Uid != DatasourceUID {
					t.Errorf("panel %q: datasource %v, want uid %s", title, panel.Datasource, DatasourceUID)
				}
				if panel.GridPos == nil || panel.GridPos.W == 0 || panel.GridPos.H == 0 {
					t.Errorf("panel %q: no grid position", title)
				}
				if len(panel.Targets) == 0 {
					t.Errorf("panel %q: no targets", title)
				}
				for _, target := range panel.Targets {
					q, ok := target.(FluxQuery)
					if !ok {
						if pq, ok := target.(*FluxQuery); ok {
							q = *pq
						} else {
							t.Fatalf("panel %q: target %T, want FluxQuery", title, target)
						}
					}
					if !strings.Contains(q.Query, `from(bucket: "${bucket}")`) || !strings.Contains(q.Query, "v.timeRangeStart") {
						t.Errorf("panel %q %s: query must read ${bucket} over the dashboard range:\n%s", title, q.RefID, q.Query)
					}
					if q.Datasource == nil || *q.Datasource.Uid != DatasourceUID {
						t.Errorf("panel %q %s: target datasource %v", title, q.RefID, q.Datasource)
					}
				}
			}
		})
	}
}

// TestQueriesCoverEveryPanel: Queries() lists each panel target once.
func TestQueriesCoverEveryPanel(t *testing.T) {
	boards, err := Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	targets := 0
	for name, raw := range boards {
		var d struct {
			Panels []struct {
				Targets []struct {
					Query string `json:"query"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range d.Panels {
			for _, q := range p.Targets {
				if strings.Contains(q.Query, `from(bucket: "${bucket}")`) {
					targets++
				}
			}
		}
	}
	panelQueries := 0
	for _, q := range Queries() {
		if strings.Contains(q.Flux, "${bucket}") {
			t.Errorf("%s/%s: ${bucket} not substituted", q.Dashboard, q.Panel)
		}
		if q.Dashboard != "alerting" && !strings.HasPrefix(q.Panel, "variable ") {
			panelQueries++
		}
	}
	if targets == 0 || panelQueries != targets {
		t.Errorf("Queries() has %d panel queries, dashboards have %d targets", panelQueries, targets)
	}
}

// TestProvisioningFiles parses every provisioning file and checks the keys
// Grafana needs.
func TestProvisioningFiles(t *testing.T) {
	read := func(t *testing.T, rel string) map[string]any {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(examples, "provisioning", rel))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if doc["apiVersion"] != 1 {
			t.Errorf("%s: apiVersion = %v, want 1", rel, doc["apiVersion"])
		}
		return doc
	}
	t.Run("datasource", func(t *testing.T) {
		doc := read(t, "datasources/vigil.yaml")
		ds := first(t, doc, "datasources")
		want := map[string]any{"uid": DatasourceUID, "type": "influxdb", "url": "http://influxdb:8086", "access": "proxy"}
		for k, v := range want {
			if ds[k] != v {
				t.Errorf("%s = %v, want %v", k, ds[k], v)
			}
		}
		jd, _ := ds["jsonData"].(map[string]any)
		if jd["version"] != "Flux" || jd["defaultBucket"] != DefaultBucket || jd["organization"] == nil {
			t.Errorf("jsonData = %v: want version Flux, defaultBucket %s, organization", jd, DefaultBucket)
		}
		sec, _ := ds["secureJsonData"].(map[string]any)
		if tok, _ := sec["token"].(string); !strings.HasPrefix(tok, "${") {
			t.Errorf("token %q must come from the environment", tok)
		}
	})
	t.Run("dashboards", func(t *testing.T) {
		doc := read(t, "dashboards/vigil.yaml")
		p := first(t, doc, "providers")
		opts, _ := p["options"].(map[string]any)
		if p["type"] != "file" || opts["path"] != "/var/lib/grafana/dashboards/vigil" {
			t.Errorf("provider = %v", p)
		}
	})
	t.Run("alerting", func(t *testing.T) {
		doc := read(t, "alerting/vigil-slo.yaml")
		g := first(t, doc, "groups")
		if g["name"] != AlertGroup || g["folder"] != AlertFolder || g["interval"] != AlertInterval || g["orgId"] != 1 {
			t.Errorf("group = name %v folder %v interval %v orgId %v", g["name"], g["folder"], g["interval"], g["orgId"])
		}
		rules, _ := g["rules"].([]any)
		// down, certificate, ttfb, four burn-rate pairs, dead man, quorum
		// lost, live errors.
		if len(rules) != 10 {
			t.Fatalf("%d rules, want 10", len(rules))
		}
		for _, r := range rules {
			rule := r.(map[string]any)
			for _, k := range []string{"uid", "title", "condition", "data", "for", "noDataState", "execErrState", "labels", "annotations"} {
				if rule[k] == nil {
					t.Errorf("rule %v: no %s", rule["uid"], k)
				}
			}
			for _, k := range []string{"folderUID", "ruleGroup", "orgID"} {
				if _, ok := rule[k]; ok {
					t.Errorf("rule %v: API-only key %s in a provisioning file", rule["uid"], k)
				}
			}
			refs := map[string]bool{}
			for _, d := range rule["data"].([]any) {
				q := d.(map[string]any)
				refs[q["refId"].(string)] = true
				model := q["model"].(map[string]any)
				if model["refId"] != q["refId"] {
					t.Errorf("rule %v: model refId %v != %v", rule["uid"], model["refId"], q["refId"])
				}
				switch q["datasourceUid"] {
				case DatasourceUID:
					rtr := q["relativeTimeRange"].(map[string]any)
					if from, _ := rtr["from"].(int); from <= 0 {
						t.Errorf("rule %v %v: relativeTimeRange.from = %v", rule["uid"], q["refId"], rtr["from"])
					}
					if s, _ := model["query"].(string); !strings.Contains(s, `from(bucket: "`+DefaultBucket+`")`) {
						t.Errorf("rule %v %v: query %q", rule["uid"], q["refId"], s)
					}
				case exprUID:
					if model["type"] == nil || model["expression"] == nil {
						t.Errorf("rule %v %v: expression model %v", rule["uid"], q["refId"], model)
					}
				default:
					t.Errorf("rule %v: datasourceUid %v", rule["uid"], q["datasourceUid"])
				}
			}
			if !refs[rule["condition"].(string)] {
				t.Errorf("rule %v: condition %v is none of its queries", rule["uid"], rule["condition"])
			}
		}
	})
}

func first(t *testing.T, doc map[string]any, key string) map[string]any {
	t.Helper()
	list, _ := doc[key].([]any)
	if len(list) != 1 {
		t.Fatalf("%s: %d entries, want 1", key, len(list))
	}
	m, _ := list[0].(map[string]any)
	return m
}

// TestAlertYAMLRoundTrip: the hand-rolled YAML writer says exactly what the
// SDK's rule model says.
func TestAlertYAMLRoundTrip(t *testing.T) {
	raw, err := AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	rules, err := ruleGroup(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Groups) != 1 || len(doc.Groups[0].Rules) != len(rules) {
		t.Fatalf("groups %+v", doc.Groups)
	}
	for i, r := range rules {
		js, _ := json.Marshal(r)
		var want map[string]any
		_ = json.Unmarshal(js, &want)
		fileRule(want)
		// Compare through JSON so YAML ints and JSON floats meet.
		gotJS, err := json.Marshal(doc.Groups[0].Rules[i])
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		_ = json.Unmarshal(gotJS, &got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("rule %d: YAML says\n%v\nSDK says\n%v", i, got, want)
		}
	}
}

func TestWriteYAMLScalars(t *testing.T) {
	in := map[string]any{
		"plain":     "x: y # not a comment",
		"multi":     "a\n  b\nc",
		"trailing":  "a \nb",
		"quote":     `say "hi" \ there`,
		"unicode":   "check → target",
		"num":       14.4,
		"bool":      true,
		"null":      nil,
		"empty":     map[string]any{},
		"list":      []any{"a", map[string]any{"k": "v", "n": 1.0}, []any{}},
		"weird key": "v",
	}
	var sb strings.Builder
	if err := writeYAML(&sb, in, 0, nil); err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal([]byte(sb.String()), &out); err != nil {
		t.Fatalf("%v\n%s", err, sb.String())
	}
	a, _ := json.Marshal(in)
	b, _ := json.Marshal(out)
	var ja, jb any
	_ = json.Unmarshal(a, &ja)
	_ = json.Unmarshal(b, &jb)
	if !reflect.DeepEqual(ja, jb) {
		t.Errorf("round trip:\n%s\ngot  %s\nwant %s", sb.String(), b, a)
	}
}

func TestInterpolate(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	stop := start.Add(time.Hour)
	tests := []struct {
		name string
		in   string
		vars map[string][]string
		want string
	}{
		{"time range", `range(start: v.timeRangeStart, stop: v.timeRangeStop) every: v.windowPeriod`, nil,
			`range(start: 2026-01-02T03:04:05.000000006Z, stop: 2026-01-02T04:04:05.000000006Z) every: 1m0s`},
		{"regex all", `/^${region:regex}$/`, map[string][]string{"region": {AllValue}}, `/^.*$/`},
		{"regex one", `/^${region:regex}$/`, map[string][]string{"region": {"eu.west/1"}}, `/^eu\.west\/1$/`},
		{"regex many", `/^${region:regex}$/`, map[string][]string{"region": {"a", "b"}}, `/^(a|b)$/`},
		{"plain", `"${check}" $check`, map[string][]string{"check": {"api"}}, `"api" api`},
		{"prefix names", `$checks $check`, map[string][]string{"check": {"a"}, "checks": {"b"}}, `b a`},
		{"glob many", `${region}`, map[string][]string{"region": {"a", "b"}}, `{a,b}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Interpolate(tt.in, tt.vars, start, stop, time.Minute); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestFluxQueryValidate(t *testing.T) {
	if _, err := NewFluxQueryBuilder("", "from()").Build(); err == nil {
		t.Error("empty refId accepted")
	}
	if _, err := NewFluxQueryBuilder("A", "  ").Build(); err == nil {
		t.Error("empty query accepted")
	}
	q, err := NewFluxQueryBuilder("A", "x").Hide(true).Build()
	if err != nil || !q.Equals(FluxQuery{RefID: "A", Query: "x", Hide: ptr(true), Datasource: ptr(datasource())}) {
		t.Errorf("built %+v, %v", q, err)
	}
}
