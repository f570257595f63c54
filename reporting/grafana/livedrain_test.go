package grafana

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// TestLiveErrorsRuleLeavesOutDrained evaluates the vigil-live-errors rule
// in a real InfluxDB 1.8 over signals written by vigil's InfluxDB store
// and checks that, as the built-in live_errors rule (LiveFigures), it
// leaves out per origin every signal of a proxy instance (region ×
// vantage) that had the origin drained in the window: a drain is planned
// work and never pages. Pool web, the default thresholds (5 %, 100
// requests, 50 % ejected, 5m):
//   - od is drained on eu-west for the last 2 minutes and every request
//     fails there, before the drain and in flight, then it stays ejected:
//     nothing is left to judge, and its series is still there at 0 (so a
//     firing alert resolves as usual, not as a missing series);
//   - om fails the same way on eu-west and on edge-1 (a proxy without a
//     region), drained on both, and fails 10 % of its requests on
//     us-east, not drained: it fires with us-east's figures only and
//     names the drained proxies as the alerter does;
//   - ou fails on eu-west, never drained: it fires;
//   - oo was drained on eu-west 7 minutes ago, before the window, and
//     fails in it: it fires;
//   - ox fails on a proxy older than out_by (no such field): it fires.
func TestLiveErrorsRuleLeavesOutDrained(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	var sigs []reporting.Signal
	add := func(origin, region string, ago time.Duration, requests, s5xx int, outBy string) {
		vantage := "proxy-" + region
		if region == "" {
			vantage = "edge-1"
		}
		s := reporting.Signal{Pool: "web", Origin: origin, Region: region, Vantage: vantage, At: now.Add(-ago),
			Window: time.Minute, Requests: requests, Status5xx: s5xx, P95: 80 * time.Millisecond, Out: outBy != "", OutBy: outBy}
		if s.Ejected = outBy == "drained,passive_ejected"; s.Ejected {
			s.Reason = "consecutive_5xx"
		}
		sigs = append(sigs, s)
	}
	for i := 0; i < 5; i++ {
		ago := time.Duration(i)*time.Minute + 10*time.Second
		var outBy string
		switch i {
		case 0:
			outBy = "drained,passive_ejected"
		case 1:
			outBy = "drained"
		}
		for _, o := range []string{"od", "om"} {
			add(o, "eu-west", ago, 100, 100, outBy)
		}
		add("om", "", ago, 100, 100, outBy)
		add("om", "us-east", ago, 100, 10, "")
		add("ou", "eu-west", ago, 100, 100, "")
		add("oo", "eu-west", ago, 100, 100, "")
	}
	add("oo", "eu-west", 7*time.Minute, 100, 0, "drained")
	publish(t, db, nil, sigs)
	// ox's proxy predates out_by: its signals have no such field, and
	// count.
	var sb strings.Builder
	for i := 0; i < 5; i++ {
		at := now.Add(-time.Duration(i)*time.Minute - 10*time.Second)
		fmt.Fprintf(&sb, "vigil_signal,pool=web,origin=ox,region=eu-west,vantage=proxy-eu-west requests=100i,status_5xx=100i,ejected=false %d\n", at.UnixNano())
		sigs = append(sigs, reporting.Signal{Pool: "web", Origin: "ox", Region: "eu-west", Vantage: "proxy-eu-west", At: at, Requests: 100, Status5xx: 100})
	}
	db.write(t, sb.String())

	eval := now.Add(time.Second)
	rule := provisionedRule(t, "vigil-live-errors")
	got := firingAnnotations(t, db, rule, eval)

	var cfg vigilalerting.Config
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tr := range vigilalerting.LiveFigures(sigs, eval, cfg.LiveErrors.Window) {
		if tr.Failing(cfg.LiveErrors) {
			want = append(want, tr.Origin+"/"+tr.Pool)
		}
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got)), want) || !slices.Equal(want, []string{"om/web", "oo/web", "ou/web", "ox/web"}) {
		t.Errorf("firing %v; the built-in rule fails %v; want om/web, oo/web, ou/web and ox/web (od drained where it fails)", slices.Sorted(maps.Keys(got)), want)
	}
	if w := "pool web origin om: 10.0% of live requests failed over 5m (50 of 500); ejected by the proxy's passive detector in 0 of 5 signals; drained on edge-1, eu-west/proxy-eu-west (left out)"; got["om/web"]["summary"] != w {
		t.Errorf("om summary %q, want %q", got["om/web"]["summary"], w)
	}
	if w := "pool web origin ou: 100.0% of live requests failed over 5m (500 of 500); ejected by the proxy's passive detector in 0 of 5 signals"; got["ou/web"]["summary"] != w {
		t.Errorf("ou summary %q, want %q", got["ou/web"]["summary"], w)
	}
	if p, ok := evalRule(t, db, rule, eval)["A"]["od/web"]; !ok || p.value != 0 {
		t.Errorf("od: series %v (present %v), want one at 0: drained where it fails, not judged", p, ok)
	}
}
