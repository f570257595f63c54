package grafana

import (
	"context"
	"encoding/json"
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
// the InfluxDB store writes, as numbers Grafana sorts and formats: since
// in Unix milliseconds and for in whole seconds to the end of the range,
// both long columns (not text). edge-a down in eu-west since 12m5.48s
// before the end of the range (for 725 s), healthy in us-east for 2
// hours, edge-b past its expiry in eu-west unknown since its expires; a
// point written before the field existed (verdict_json alone carries
// "si") is read from verdict_json; of a pair whose tier changed (two
// series), the newest verdict counts. Worst first. A check whose verdicts
// know no since still has both columns, empty (null).
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
	raw := flux
	flux = Interpolate(raw, map[string][]string{"check": {"api"}, "region": {AllValue}}, now.Add(-time.Hour), now, time.Minute)
	res, err := db.query(flux)
	if err != nil {
		t.Fatalf("%v\n%s", err, flux)
	}
	for _, c := range []string{"since", "for"} {
		if j := slices.Index(res.header, c); j < 0 || res.types[j] != "long" {
			t.Errorf("column %s: types %v of %v, want long (a number, not text)", c, res.types, res.header)
		}
	}
	rows := func(res *fluxResult) []string {
		t.Helper()
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
		return got
	}
	ms := func(t time.Time) string { return fmt.Sprint(t.UnixMilli()) }
	want := []string{
		"edge-a eu-west eu-west-1 unhealthy " + ms(down) + " 725",
		"edge-b eu-west eu-west-1 unknown " + ms(expired) + " 180",
		"edge-b us-east us-east-1 degraded " + ms(now.Add(-time.Hour)) + " 3600",
		"edge-a us-east us-east-1 healthy " + ms(now.Add(-2*time.Hour)) + " 7200",
		"edge-c eu-west eu-west-1 healthy " + ms(now.Add(-time.Minute)) + " 60",
	}
	if got := rows(res); !slices.Equal(got, want) {
		t.Errorf("Current state rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A check whose verdict does not know since (0, and no "si"): the
	// columns are there, empty.
	db.write(t, fmt.Sprintf("vigil_verdict,check=legacy,region=eu-west,target=edge-a,tier=shallow,vantage=eu-west-1 "+
		"state=\"healthy\",ok=true,since=0i,verdict_json=\"{\\\"s\\\":\\\"healthy\\\",\\\"ok\\\":true}\" %d\n", at.UnixNano()))
	flux = Interpolate(raw, map[string][]string{"check": {"legacy"}, "region": {AllValue}}, now.Add(-time.Hour), now, time.Minute)
	if res, err = db.query(flux); err != nil {
		t.Fatalf("%v\n%s", err, flux)
	}
	if got, want := rows(res), []string{"edge-a eu-west eu-west-1 healthy  "}; !slices.Equal(got, want) {
		t.Errorf("without since: rows %q, want %q", got, want)
	}
}

// TestCurrentStatePanelTypes: the generated Current state table formats
// since as a date (unit dateTimeAsIso on its Unix ms) and for as a
// duration (unit dtdurations on its seconds), and no transformation turns
// them into text.
func TestCurrentStatePanelTypes(t *testing.T) {
	boards, err := Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title           string `json:"title"`
			Transformations []struct {
				ID      string         `json:"id"`
				Options map[string]any `json:"options"`
			} `json:"transformations"`
			FieldConfig struct {
				Overrides []struct {
					Matcher struct {
						ID      string `json:"id"`
						Options string `json:"options"`
					} `json:"matcher"`
					Properties []struct {
						ID    string `json:"id"`
						Value any    `json:"value"`
					} `json:"properties"`
				} `json:"overrides"`
			} `json:"fieldConfig"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(boards[DashboardCheck], &d); err != nil {
		t.Fatal(err)
	}
	for _, p := range d.Panels {
		if p.Title != "Current state (since when)" {
			continue
		}
		units := map[string]any{}
		for _, o := range p.FieldConfig.Overrides {
			for _, prop := range o.Properties {
				if o.Matcher.ID == "byName" && prop.ID == "unit" {
					units[o.Matcher.Options] = prop.Value
				}
			}
		}
		if units["since"] != "dateTimeAsIso" || units["for"] != "dtdurations" {
			t.Errorf("units by field %v: want since dateTimeAsIso, for dtdurations", units)
		}
		for _, tr := range p.Transformations {
			if tr.ID == "convertFieldType" {
				t.Errorf("transformation %s %v: since and for are numbers from the query", tr.ID, tr.Options)
			}
		}
		return
	}
	t.Fatal("no Current state panel on the check dashboard")
}
