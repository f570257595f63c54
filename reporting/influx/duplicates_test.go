package influx_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// gaugeOf returns vigil_duplicate_canaries by "region/vantage".
func gaugeOf(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[l["region"]+"/"+l["vantage"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestDuplicateCanaries: two canaries sharing InfluxDB with the same
// region and vantage (instances "eu-1-aaaa" and "eu-2-bbbb") are found
// both by the second one's own check soon after it starts and by a reader
// of the store (the proxy, the alerter, the status page): a warning naming
// the region, the vantage and both instances, vigil_duplicate_canaries 2,
// and the series' verdict marked. Two regions, and a canary that replaced
// a stopped one (a restart), are no duplicates. The instance survives the
// store: it reads back from the points.
func TestDuplicateCanaries(t *testing.T) {
	srv := influxtest.Start(t)
	defer influx.SetOwnCheck(100*time.Millisecond, time.Minute)()
	defer influx.SetDupRefresh(50 * time.Millisecond)()
	cases := []struct {
		name    string
		regionB string
		restart bool
		dup     bool
	}{
		{name: "same region and vantage", regionB: "eu-west", dup: true},
		{name: "two regions", regionB: "us-east"},
		{name: "restart", regionB: "eu-west", restart: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := srv.NewDatabase(t)
			var wlogs, rlogs checktest.SyncBuffer
			writeWatch := reporting.NewDuplicateWatch(slog.New(slog.NewTextHandler(&wlogs, nil)))
			readWatch := reporting.NewDuplicateWatch(slog.New(slog.NewTextHandler(&rlogs, nil)))
			a := openStore(t, srv.URL, db, t.TempDir(), influx.Options{Duplicates: writeWatch})
			b := openStore(t, srv.URL, db, t.TempDir(), influx.Options{Duplicates: writeWatch})
			reader := openStore(t, srv.URL, db, t.TempDir(), influx.Options{Duplicates: readWatch})
			pub := func(st *influx.Store, inst, region string) {
				t.Helper()
				now := time.Now()
				v := reporting.Verdict{Check: "home", Target: "origin-a", Tier: "shallow", Region: region, Vantage: "v1",
					State: reporting.StateHealthy, OK: true, At: now, Expires: now.Add(time.Minute), Instance: inst}
				if err := st.Publish(context.Background(), []reporting.Verdict{v}); err != nil {
					t.Fatal(err)
				}
			}
			flush := func(st *influx.Store) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := st.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				pub(a, "eu-1-aaaa", "eu-west")
				time.Sleep(20 * time.Millisecond)
			}
			flush(a)
			// B starts; A goes on writing unless it was restarted as B.
			deadline := time.Now().Add(3 * time.Second)
			for i := 0; i < 15 && time.Now().Before(deadline); i++ {
				pub(b, "eu-2-bbbb", tc.regionB)
				if !tc.restart {
					pub(a, "eu-1-aaaa", "eu-west")
				}
				flush(a)
				flush(b)
				if tc.dup && strings.Contains(wlogs.String(), "duplicate canaries") {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			// The reader marks what its background read of the instances
			// found (at most dupRefresh old): read until it is marked, or
			// for a while when nothing should be.
			var vs []reporting.Verdict
			for i := 0; i < 50; i++ {
				var err error
				vs, err = reader.Verdicts(context.Background(), time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if tc.dup && len(vs) > 0 && len(vs[0].Duplicates) > 0 {
					break
				}
				time.Sleep(100 * time.Millisecond)
				if !tc.dup && i >= 5 {
					break
				}
			}
			marked := 0
			for _, v := range vs {
				if v.Instance == "" {
					t.Errorf("verdict read back without its instance: %+v", v)
				}
				if len(v.Duplicates) > 0 {
					marked++
					if strings.Join(v.Duplicates, ",") != "eu-1-aaaa,eu-2-bbbb" {
						t.Errorf("Duplicates = %v, want both instances", v.Duplicates)
					}
				}
			}
			w, r := wlogs.String(), rlogs.String()
			if !tc.dup {
				if marked > 0 || strings.Contains(w+r, "duplicate canaries") || len(gaugeOf(t, readWatch.Collector())) > 0 ||
					len(gaugeOf(t, writeWatch.Collector())) > 0 {
					t.Fatalf("no duplicates expected: %d marked\nwriter log:\n%s\nreader log:\n%s", marked, w, r)
				}
				return
			}
			if marked != 1 {
				t.Errorf("%d verdicts marked, want 1: %+v", marked, vs)
			}
			for what, out := range map[string]string{"the second canary's own check": w, "a reader": r} {
				for _, want := range []string{"level=WARN", "duplicate canaries", "region=eu-west", "vantage=v1",
					"eu-1-aaaa", "eu-2-bbbb", "agent.vantage or agent.region"} {
					if !strings.Contains(out, want) {
						t.Errorf("%s: log lacks %q:\n%s", what, want, out)
					}
				}
			}
			if !strings.Contains(w, "this canary's writes") {
				t.Errorf("the warning at start does not come from the canary's own check:\n%s", w)
			}
			if g := gaugeOf(t, readWatch.Collector()); g["eu-west/v1"] != 2 {
				t.Errorf("vigil_duplicate_canaries = %v, want eu-west/v1 = 2", g)
			}
		})
	}
}
