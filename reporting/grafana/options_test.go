package grafana

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// datasourceUIDs collects the uid of every datasource reference in a
// decoded dashboard or rule file: objects under a "datasource" key and
// rule queries' datasourceUid.
func datasourceUIDs(v any, out map[string]int) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if ds, ok := e.(map[string]any); ok && k == "datasource" {
				if uid, ok := ds["uid"].(string); ok {
					out[uid]++
				}
			}
			if uid, ok := e.(string); ok && k == "datasourceUid" {
				out[uid]++
			}
			datasourceUIDs(e, out)
		}
	case []any:
		for _, e := range x {
			datasourceUIDs(e, out)
		}
	}
}

// TestOptionsPointAtAnotherDatasource: with Options a user's own InfluxDB
// datasource and bucket replace vigil-influxdb and vigil/autogen in every
// panel, variable and alert rule.
func TestOptionsPointAtAnotherDatasource(t *testing.T) {
	o := Options{DatasourceUID: "P951FEA4DE68E13C5", Bucket: "telemetry/autogen"}
	boards, err := o.Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range boards {
		var d any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		uids := map[string]int{}
		datasourceUIDs(d, uids)
		if len(uids) != 1 || uids[o.DatasourceUID] == 0 {
			t.Errorf("dashboard %s: datasource uids %v, want only %s", name, uids, o.DatasourceUID)
		}
		if strings.Contains(string(raw), DefaultBucket) || !strings.Contains(string(raw), `"`+o.Bucket+`"`) {
			t.Errorf("dashboard %s: $bucket does not default to %s", name, o.Bucket)
		}
	}
	raw, err := o.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	uids := map[string]int{}
	datasourceUIDs(doc, uids)
	delete(uids, exprUID)
	if len(uids) != 1 || uids[o.DatasourceUID] == 0 {
		t.Errorf("alert rules: datasource uids %v, want only %s (and %s)", uids, o.DatasourceUID, exprUID)
	}
	if strings.Contains(string(raw), DatasourceUID) || strings.Contains(string(raw), DefaultBucket) {
		t.Errorf("alert rules still name %s or %s:\n%s", DatasourceUID, DefaultBucket, raw)
	}
	want := 0
	for _, r := range alertRules(o.withDefaults()) {
		for _, f := range r.flux {
			// A burn-rate query reads the bucket twice (its runs and,
			// over the short window, the checks' intervals).
			want += strings.Count(f.text, `from(bucket: "${bucket}")`)
		}
	}
	if n := strings.Count(string(raw), `from(bucket: "`+o.Bucket+`")`); n != want {
		t.Errorf("alert rules read bucket %s in %d queries, want %d", o.Bucket, n, want)
	}

	// The zero Options are the committed files.
	def, err := Options{}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	if committed, _ := AlertRules(); string(def) != string(committed) {
		t.Error("Options{}.AlertRules() differs from AlertRules()")
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := []Options{{}, {DatasourceUID: strings.Repeat("a", 40)}, {DatasourceUID: "my_influx-2"}, {Bucket: "db/rp"}, {Bucket: "my bucket"}}
	for _, o := range ok {
		if err := o.Validate(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
	bad := []struct {
		o    Options
		want error
		text string
	}{
		{Options{DatasourceUID: strings.Repeat("a", 41)}, ErrDatasourceUID, "41 characters"},
		{Options{DatasourceUID: "my.influx"}, ErrDatasourceUID, `"."`},
		{Options{DatasourceUID: "é"}, ErrDatasourceUID, `"é"`},
		{Options{Bucket: `a"b`}, ErrBucket, `"\""`},
		{Options{Bucket: `a${x}`}, ErrBucket, `"$"`},
		{Options{Bucket: "a,b"}, ErrBucket, `","`},
		{Options{Bucket: "a\nb"}, ErrBucket, `"\n"`},
		{Options{Bucket: " "}, ErrBucket, "blank"},
		{Options{Quorum: -1}, ErrObjective, "quorum -1"},
		{Options{TTFBP95: -time.Second}, ErrObjective, "ttfb p95 -1s"},
		{Options{TTFBP95: time.Microsecond}, ErrObjective, "at least 1ms"},
		{Options{Objective: 100}, ErrObjective, "objective 100%"},
		{Options{Objective: -5}, ErrObjective, "objective -5%"},
	}
	for _, tt := range bad {
		err := tt.o.Validate()
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%+v: error %v, want %v mentioning %s", tt.o, err, tt.want, tt.text)
		}
		if _, err := tt.o.Dashboards(); !errors.Is(err, tt.want) {
			t.Errorf("%+v: Dashboards() error %v", tt.o, err)
		}
		if _, err := tt.o.AlertRules(); !errors.Is(err, tt.want) {
			t.Errorf("%+v: AlertRules() error %v", tt.o, err)
		}
	}
}

// TestOptionsBucketQueriesRealInfluxDB: the panels and rules generated for
// another bucket read it on a real InfluxDB 1.8.
func TestOptionsBucketQueriesRealInfluxDB(t *testing.T) {
	db := startInfluxd(t)
	if _, err := http.Post(db.url+"/query?q=CREATE+DATABASE+telemetry", "", nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	resp, err := http.Post(db.url+"/write?db=telemetry&precision=ns", "text/plain", strings.NewReader(sampleLines(now)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("write: %s: %s", resp.Status, body)
	}
	o := Options{DatasourceUID: "mine", Bucket: "telemetry/autogen"}
	qs := o.Queries()
	if len(qs) != len(Queries()) {
		t.Fatalf("%d queries, want %d", len(qs), len(Queries()))
	}
	vars := map[string][]string{"region": {AllValue}, "check": {"api"}}
	for _, q := range qs {
		if !strings.Contains(q.Flux, `from(bucket: "telemetry/autogen")`) {
			t.Errorf("%s/%s: reads another bucket:\n%s", q.Dashboard, q.Panel, q.Flux)
			continue
		}
		flux := Interpolate(q.Flux, vars, now.Add(-time.Hour), now.Add(time.Second), time.Minute)
		res, err := db.query(flux)
		if err != nil {
			t.Fatalf("%s/%s: %v", q.Dashboard, q.Panel, err)
		}
		if len(res.rows) == 0 {
			t.Errorf("%s/%s: no rows from bucket telemetry/autogen", q.Dashboard, q.Panel)
		}
	}
}

// ruleIn reads the rule uid out of an alert rules document.
func ruleIn(t *testing.T, raw []byte, uid string) map[string]any {
	t.Helper()
	var doc struct {
		Groups []struct {
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Groups[0].Rules {
		if r["uid"] == uid {
			return r
		}
	}
	t.Fatalf("no rule %s", uid)
	return nil
}

// TestOptionsObjectives: the quorum, TTFB objective and availability
// objective of the rules and the dashboards' thresholds follow Options, so
// they can match the alerter's alerting.quorum and slos without editing
// code. Evaluated on a real InfluxDB 1.8: with quorum 3, api × edge-b
// slow in 2 regions fires nothing; with a 700 ms objective ap-south's
// 680-710 ms runs are not all slow, with 100 ms every region is.
func TestOptionsObjectives(t *testing.T) {
	o := Options{Quorum: 3, TTFBP95: 250 * time.Millisecond, Objective: 99.5}
	raw, err := o.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"Origin down in 3 or more regions"`, `"TTFB p95 above 250 ms in 3 or more regions"`,
		`r.p95 > 250.0`, `r.failed / (if r.runs > r.lfloor then r.runs else r.lfloor) > 0.072`, "of a 99.5% availability SLO", "- 2.5"} {
		if !strings.Contains(string(raw), s) {
			t.Errorf("alert rules lack %q", s)
		}
	}
	boards, err := o.Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{DashboardOverview: {`"value": 99.5`, `"value": 250`}, DashboardCheck: {`"value": 99.5`, `"value": 250`}} {
		for _, w := range want {
			if !strings.Contains(string(boards[name]), w) {
				t.Errorf("dashboard %s: no threshold %s", name, w)
			}
		}
		if strings.Contains(string(boards[name]), `"value": 600`) || strings.Contains(string(boards[name]), `"value": 99.9`) {
			t.Errorf("dashboard %s still has the default thresholds", name)
		}
	}

	db := startInfluxd(t)
	now := time.Now()
	db.write(t, sampleLines(now))
	var slow strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&slow, "vigil_verdict,check=api,region=eu-west,target=edge-b,tier=shallow,vantage=eu-west-1 ttfb_ms=910 %d\n",
			now.Add(-time.Duration(i)*30*time.Second).UnixNano())
	}
	db.write(t, slow.String())
	for _, tt := range []struct {
		o    Options
		want int // firing pairs
	}{
		{Options{}, 1},          // api × edge-b: ap-south and eu-west
		{Options{Quorum: 3}, 0}, // 2 regions < 3
		{Options{TTFBP95: 700 * time.Millisecond}, 1},            // ap-south p95 710 > 700
		{Options{TTFBP95: 720 * time.Millisecond}, 0},            // only eu-west above 720
		{Options{TTFBP95: 100 * time.Millisecond, Quorum: 3}, 4}, // every region above 100 ms
	} {
		raw, err := tt.o.AlertRules()
		if err != nil {
			t.Fatal(err)
		}
		got := firing(t, db, ruleIn(t, raw, "vigil-ttfb-p95"), now.Add(time.Second))
		if len(got) != tt.want {
			t.Errorf("%+v: firing %v, want %d pairs", tt.o, got, tt.want)
		}
	}
}
