package grafana

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The Ejections panel shows an origin out of rotation for any reason: out
// by verdicts or drained (out=true, ejected=false) as well as passively
// ejected, and, for signals written before the out field existed, ejected
// alone.
func TestEjectionsPanelShowsAnyEjection(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	var sb strings.Builder
	for i := 0; i < 10; i++ {
		at := now.Add(-time.Duration(10-i) * 30 * time.Second)
		for _, s := range []struct {
			origin, fields string
		}{
			{"by-verdict", "ejected=false,out=true,out_by=\"verdict_down\""},
			{"drained", "ejected=false,out=true,out_by=\"drained\""},
			{"passive", "ejected=true,out=true,out_by=\"passive_ejected\""},
			{"old-passive", "ejected=true"}, // written before out existed
			{"in-rotation", "ejected=false,out=false,out_by=\"\""},
		} {
			fmt.Fprintf(&sb, "vigil_signal,pool=web,origin=%s,region=eu-west,vantage=proxy-1 requests=10i,%s %d\n",
				s.origin, s.fields, at.UnixNano())
		}
	}
	db.write(t, sb.String())
	var flux string
	for _, q := range Queries() {
		if q.Dashboard == DashboardProxy && q.Panel == "Ejections (origin × proxy)" {
			flux = Interpolate(q.Flux, map[string][]string{"region": {AllValue}}, now.Add(-time.Hour), now.Add(time.Second), time.Minute)
		}
	}
	if flux == "" {
		t.Fatal("no Ejections (origin × proxy) panel query")
	}
	res, err := db.query(flux)
	if err != nil {
		t.Fatalf("%v\nquery:\n%s", err, flux)
	}
	oi, vi := slices.Index(res.header, "origin"), slices.Index(res.header, "_value")
	if oi < 0 || vi < 0 {
		t.Fatalf("columns %v lack origin or _value", res.header)
	}
	got := map[string]map[string]bool{}
	for _, row := range res.rows {
		if got[row[oi]] == nil {
			got[row[oi]] = map[string]bool{}
		}
		got[row[oi]][row[vi]] = true
	}
	for origin, want := range map[string]string{"by-verdict": "1", "drained": "1", "passive": "1", "old-passive": "1", "in-rotation": "0"} {
		if vals := got[origin]; len(vals) != 1 || !vals[want] {
			t.Errorf("origin %s: panel values %v, want only %s", origin, vals, want)
		}
	}
}
