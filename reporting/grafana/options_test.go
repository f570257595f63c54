package grafana

import (
	"encoding/json"
	"errors"
	"net/http"
	"io"
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
	if n := strings.Count(string(raw), `from(bucket: "`+o.Bucket+`")`); n != 3 {
		t.Errorf("alert rules read bucket %s in %d queries, want 3", o.Bucket, n)
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
