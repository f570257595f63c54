package influx_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// TestSinceIsATypedField: a verdict's since (when its pair entered its
// state) is written as the integer field since, Unix ns, beside expires,
// so a dashboard can read it without parsing verdict_json; a verdict that
// does not know it writes 0. Reading stays with verdict_json: a point
// written before the field existed (verdict_json alone carries "si") still
// reads back its Since, and so does one whose since field disagrees.
func TestSinceIsATypedField(t *testing.T) {
	srv := influxtest.Start(t)
	bucket := srv.NewDatabase(t)
	db := strings.SplitN(bucket, "/", 2)[0]
	st := openStore(t, srv.URL, bucket, t.TempDir(), influx.Options{})
	ctx := context.Background()

	now := time.Now().UTC().Truncate(time.Millisecond)
	since := now.Add(-12*time.Minute - 5*time.Second).Add(123456 * time.Nanosecond)
	down := reporting.Verdict{Check: "api", Target: "edge-a", Region: "eu-west", Vantage: "eu-1", Tier: reporting.TierShallow,
		State: reporting.StateUnhealthy, Cause: "status", StatusCode: 503, Streak: 7, Interval: 30 * time.Second,
		At: now, Expires: now.Add(time.Minute), Since: since}
	fresh := down
	fresh.Target, fresh.State, fresh.OK, fresh.Since = "edge-b", reporting.StateUnknown, true, time.Time{}
	if err := st.Publish(ctx, []reporting.Verdict{down, fresh}); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := st.Flush(fctx); err != nil {
		t.Fatal(err)
	}

	out, err := srv.Query(db, `SELECT "since" FROM "vigil_verdict" GROUP BY "target"`)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Results []struct {
			Series []struct {
				Tags    map[string]string `json:"tags"`
				Columns []string          `json:"columns"`
				Values  [][]any           `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := map[string]string{}
	for _, r := range res.Results {
		for _, s := range r.Series {
			for _, v := range s.Values {
				got[s.Tags["target"]] = fmt.Sprint(v[1])
			}
		}
	}
	want := map[string]string{"edge-a": fmt.Sprint(since.UnixNano()), "edge-b": "0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("since field by target = %v, want %v (InfluxDB answered %s)", got, want, out)
	}
	// Its type is integer, as expires'.
	types, err := srv.Query(db, `SHOW FIELD KEYS FROM "vigil_verdict"`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(types, `["since","integer"]`) {
		t.Errorf("field keys %s: want since as integer", types)
	}

	// A point as written before the field existed: verdict_json alone
	// says since ("si"); and one whose since field says another time:
	// verdict_json wins.
	old := since.Add(-time.Hour)
	lines := fmt.Sprintf("vigil_verdict,check=api,region=us-east,target=edge-a,tier=shallow,vantage=us-1 state=\"unhealthy\",ok=false,expires=%di,verdict_json=\"{\\\"s\\\":\\\"unhealthy\\\",\\\"ok\\\":false,\\\"d\\\":[0,0,0,0,0,0,30000000000],\\\"st\\\":3,\\\"x\\\":%d,\\\"si\\\":%d}\" %d\n",
		now.Add(time.Minute).UnixNano(), now.Add(time.Minute).UnixNano(), old.UnixNano(), now.UnixNano()) +
		fmt.Sprintf("vigil_verdict,check=api,region=ap-south,target=edge-a,tier=shallow,vantage=ap-1 state=\"unhealthy\",ok=false,since=5i,verdict_json=\"{\\\"s\\\":\\\"unhealthy\\\",\\\"ok\\\":false,\\\"d\\\":[0,0,0,0,0,0,30000000000],\\\"st\\\":3,\\\"si\\\":%d}\" %d\n",
			old.UnixNano(), now.UnixNano())
	resp, err := http.Post(srv.URL+"/write?db="+db+"&precision=ns", "text/plain", strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("write: %s", resp.Status)
	}
	vs, err := st.Verdicts(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	sinces := map[string]time.Time{}
	for _, v := range vs {
		sinces[v.Target+"@"+v.Region] = v.Since
	}
	for k, w := range map[string]time.Time{"edge-a@eu-west": since, "edge-b@eu-west": {}, "edge-a@us-east": old, "edge-a@ap-south": old} {
		if g, ok := sinces[k]; !ok || !g.Equal(w) {
			t.Errorf("Verdicts: %s since %v, want %v (all: %v)", k, g, w, sinces)
		}
	}
}
