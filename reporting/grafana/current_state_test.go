package grafana

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
)

// TestCurrentStateShowsSince: the check dashboard's Current state panel
// says since when each pair has been in its state, from the since field
// the InfluxDB store writes: edge-a down in eu-west since 12m5s before the
// end of the range, healthy in us-east for 2 hours, edge-b past its expiry
// in eu-west unknown since its expires; a point written before the field
// existed (verdict_json alone carries "si") shows no since; of a pair
// whose tier changed (two series), the newest verdict counts. Worst first.
func TestCurrentStateShowsSince(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now().UTC().Truncate(time.Second)
	store, err := influx.Open(influx.Config{URL: db.url, Bucket: DefaultBucket, Timeout: 10 * time.Second}, t.TempDir(), influx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(-20 * time.Second)
	down := now.Add(-12*time.Minute - 5*time.Second - 480*time.Millisecond) // …:33.52Z
	verdict := func(target, region string, state reporting.State, since, expires time.Time) reporting.Verdict {
		return reporting.Verdict{Check: "api", Target: target, Region: region, Vantage: region + "-1", Tier: reporting.TierShallow,
			State: state, OK: state == reporting.StateHealthy, At: at, Expires: expires, Interval: 30 * time.Second, Since: since}
	}
	expired := now.Add(-3 * time.Minute)
	vs := []reporting.Verdict{
		verdict("edge-a", "eu-west", reporting.StateUnhealthy, down, now.Add(time.Minute)),
		verdict("edge-a", "us-east", reporting.StateHealthy, now.Add(-2*time.Hour), now.Add(time.Minute)),
		verdict("edge-b", "eu-west", reporting.StateHealthy, now.Add(-time.Hour), expired),
	}
	vs[2].At = expired.Add(-time.Minute)
	// edge-c's tier changed: its older series (shallow) says unhealthy,
	// its newer one (deep) healthy since a minute ago.
	old := verdict("edge-c", "eu-west", reporting.StateUnhealthy, now.Add(-time.Hour), now.Add(time.Minute))
	old.At = at.Add(-2 * time.Minute)
	recovered := verdict("edge-c", "eu-west", reporting.StateHealthy, now.Add(-time.Minute), now.Add(time.Minute))
	recovered.Tier = reporting.TierDeep
	vs = append(vs, old, recovered)
	if err := store.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := store.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	// As an earlier vigil wrote it: no since field, since in verdict_json.
	db.write(t, fmt.Sprintf("vigil_verdict,check=api,region=us-east,target=edge-b,tier=shallow,vantage=us-east-1 "+
		"state=\"degraded\",ok=false,expires=%di,verdict_json=\"{\\\"s\\\":\\\"degraded\\\",\\\"ok\\\":false,\\\"si\\\":%d}\" %d\n",
		now.Add(time.Minute).UnixNano(), now.Add(-time.Hour).UnixNano(), at.UnixNano()))

	var flux string
	for _, q := range Queries() {
		if q.Dashboard == DashboardCheck && q.Panel == "Current state (since when)" {
			flux = q.Flux
		}
	}
	if flux == "" {
		t.Fatal("no Current state panel on the check dashboard")
	}
	flux = Interpolate(flux, map[string][]string{"check": {"api"}, "region": {AllValue}}, now.Add(-time.Hour), now, time.Minute)
	res, err := db.query(flux)
	if err != nil {
		t.Fatalf("%v\n%s", err, flux)
	}
	var got []string
	for _, row := range res.rows {
		var cells []string
		for _, c := range []string{"target", "region", "vantage", "state", "since", "for"} {
			i := slices.Index(res.header, c)
			if i < 0 {
				t.Fatalf("no column %s in %v", c, res.header)
			}
			cells = append(cells, row[i])
		}
		got = append(got, strings.Join(cells, " "))
	}
	rfc := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	want := []string{
		"edge-a eu-west eu-west-1 unhealthy " + rfc(down) + " 12m5s",
		"edge-b eu-west eu-west-1 unknown " + rfc(expired) + " 3m",
		"edge-b us-east us-east-1 degraded  ",
		"edge-a us-east us-east-1 healthy " + rfc(now.Add(-2*time.Hour)) + " 2h",
		"edge-c eu-west eu-west-1 healthy " + rfc(now.Add(-time.Minute)) + " 1m",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Current state rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
