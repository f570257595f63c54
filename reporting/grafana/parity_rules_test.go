package grafana

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
)

// publish writes verdicts and signals into db through vigil's own InfluxDB
// store (reporting/influx), as a canary and a proxy write them.
func publish(t *testing.T, db *influxd, vs []reporting.Verdict, sigs []reporting.Signal) {
	t.Helper()
	st, err := influx.Open(influx.Config{URL: db.url, Bucket: DefaultBucket, Timeout: 10 * time.Second}, t.TempDir(), influx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if len(vs) > 0 {
		if err := st.Publish(ctx, vs); err != nil {
			t.Fatal(err)
		}
	}
	if len(sigs) > 0 {
		if err := st.PublishSignals(ctx, sigs); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTTFBRuleNeedsTwoSlowRuns: as the alerter's ttfb rule
// (alerting.TTFBMinSlowRuns), a region breaches only with at least 2 runs
// over the objective besides its p95 over it: with fewer than 20 runs in
// the window the p95 is the slowest run. Quorum 1, 5 runs in the 10-minute
// window: api → edge-a has one 900 ms run (p95 900 ms) and does not fire;
// api → edge-b has two and fires.
func TestTTFBRuleNeedsTwoSlowRuns(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	var vs []reporting.Verdict
	slow := map[string]int{"edge-a": 1, "edge-b": 2}
	for _, target := range []string{"edge-a", "edge-b"} {
		for i := 0; i < 5; i++ {
			ttfb := 100 * time.Millisecond
			if i < slow[target] {
				ttfb = 900 * time.Millisecond
			}
			vs = append(vs, reporting.Verdict{Check: "api", Target: target, Region: "eu-west", Vantage: "eu-west-1", Tier: "shallow",
				State: reporting.StateHealthy, OK: true, TTFB: ttfb, Duration: ttfb + 10*time.Millisecond, Interval: time.Minute,
				At: now.Add(-time.Duration(i+1) * time.Minute)})
		}
	}
	publish(t, db, vs, nil)
	raw, err := Options{Quorum: 1}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	got := firing(t, db, ruleOf(t, raw, "vigil-ttfb-p95"), now.Add(time.Second))
	want := map[string]string{"api/edge-b/shallow": "api × edge-b TTFB p95 over 10 minutes above 600 ms in 1 region"}
	if !maps.Equal(got, want) {
		t.Errorf("firing %v, want %v: edge-a's p95 is its one slow run, no breach", got, want)
	}
}

// TestBurnRateRuleRunsFloor: as the alerter's burn_rate rule, a window's
// error ratio is failed runs ÷ max(runs, the runs the check's interval
// makes in it), so a young store's single failure pages nobody. A store
// 4½ minutes old, a check run every 30 s (interval_ms, as vigil writes it)
// in two regions: edge-a failed its first run and passed 9 (1 of 10 is a
// 100× burn of 99.9 %; over the floor, 1 of 120 over 1h is 8.3×, under
// 14.4×, and 1 of 720 over 6h 1.4×, under 6×); edge-b failed all 10 (10 of
// 120, 83×; 10 of 720, 14×) and pages from both page rules.
func TestBurnRateRuleRunsFloor(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	var vs []reporting.Verdict
	for _, region := range []string{"eu-west", "us-east"} {
		for i := 0; i < 10; i++ {
			for _, target := range []string{"edge-a", "edge-b"} {
				ok := target == "edge-a" && i > 0
				v := reporting.Verdict{Check: "api", Target: target, Region: region, Vantage: region + "-1", Tier: "shallow",
					State: reporting.StateHealthy, OK: ok, Interval: 30 * time.Second, TTFB: 80 * time.Millisecond,
					At: now.Add(-270*time.Second + time.Duration(i)*30*time.Second)}
				if !ok {
					v.State, v.Cause, v.Err = reporting.StateUnhealthy, "connect", "connection refused"
				}
				vs = append(vs, v)
			}
		}
	}
	publish(t, db, vs, nil)
	for _, uid := range []string{"vigil-availability-burn", "vigil-availability-burn-6h"} {
		got := firing(t, db, provisionedRule(t, uid), now.Add(time.Second))
		if len(got) != 1 || got["api/edge-b"] == "" {
			t.Errorf("%s: firing %v, want api/edge-b only: edge-a's one failed run of a young store is no burn", uid, got)
		}
	}
}

// TestQuorumLostRule evaluates the quorum_lost rule in a real InfluxDB
// 1.8, as the alerter's: a check with a region silent past the dead-man
// window (10m without the checks' intervals) and fewer than the quorum (2)
// regions reporting. api reports from eu-west only, us-east and ap-south
// went silent 15 and 20 minutes ago: it fires, its summary and regions
// annotation in the alerter's words (which regions report, which must
// report again: 1 of the 2 silent ones). home reports
// from 2 regions with ap-south silent: the quorum holds. web reports from
// one region with none silent: nothing was lost (a quorum above the
// regions that run a check is a config matter). legacy's only region went
// silent 30 hours ago: forgotten.
func TestQuorumLostRule(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	newest := []struct {
		check, region string
		ago           time.Duration
	}{
		{"api", "eu-west", time.Minute}, {"api", "us-east", 15 * time.Minute}, {"api", "ap-south", 20 * time.Minute},
		{"home", "eu-west", time.Minute}, {"home", "us-east", 30 * time.Second}, {"home", "ap-south", 20 * time.Minute},
		{"web", "ap-south", time.Minute},
		{"legacy", "eu-west", 30 * time.Hour},
	}
	var vs []reporting.Verdict
	for _, n := range newest {
		for i := 0; i < 3; i++ {
			vs = append(vs, reporting.Verdict{Check: n.check, Target: "edge-a", Region: n.region, Vantage: n.region + "-1", Tier: "shallow",
				State: reporting.StateHealthy, OK: true, Interval: 30 * time.Second, At: now.Add(-n.ago - time.Duration(i)*30*time.Second)})
		}
	}
	publish(t, db, vs, nil)

	rule := provisionedRule(t, "vigil-quorum-lost")
	labels, _ := rule["labels"].(map[string]any)
	if labels["rule"] != vigilalerting.RuleQuorumLost || labels["severity"] != vigilalerting.SeverityPage || rule["for"] != "7m" {
		t.Errorf("labels %v, for %v: want rule quorum_lost, severity page, for 7m (the dead-man rule's)", labels, rule["for"])
	}
	got := firing(t, db, rule, now.Add(time.Second))
	want := map[string]string{"api": "api: only 1 region (eu-west) reports, alerting.quorum is 2: down, ttfb, burn_rate and cert_expiry alerts for api cannot fire until 1 of ap-south, us-east reports again"}
	if !maps.Equal(got, want) {
		t.Errorf("firing %v, want %v", got, want)
	}
	if ann := firingAnnotations(t, db, rule, now.Add(time.Second)); ann["api"]["regions"] != "ap-south,us-east" {
		t.Errorf("regions annotation %q, want ap-south,us-east", ann["api"]["regions"])
	}

	// From the config: one rule per interval (api every 30 s: window 2m,
	// pending 1m), home's ap-south silent and quorum 3: home fires too;
	// with ttfb disabled the summary leaves it out.
	cfg := vigilalerting.Config{Quorum: 3}
	cfg.TTFB.Disabled = true
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	raw, err := Options{Alerting: &cfg, Checks: []vigilalerting.CheckInterval{{Check: "api", Interval: 30 * time.Second}, {Check: "home", Interval: 30 * time.Second}}}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	rule = ruleOf(t, raw, "vigil-quorum-lost-30s")
	if labels, _ := rule["labels"].(map[string]any); labels["interval"] != "30s" || rule["for"] != "1m" {
		t.Errorf("labels %v, for %v: want interval 30s, for 1m", labels, rule["for"])
	}
	got = firing(t, db, rule, now.Add(time.Second))
	want = map[string]string{
		"api":  "api: only 1 region (eu-west) reports, alerting.quorum is 3: down, burn_rate and cert_expiry alerts for api cannot fire until ap-south, us-east report again",
		"home": "home: only 2 regions (eu-west, us-east) report, alerting.quorum is 3: down, burn_rate and cert_expiry alerts for home cannot fire until ap-south reports again",
	}
	if !maps.Equal(got, want) {
		t.Errorf("quorum 3: firing %v, want %v", got, want)
	}
	cfg.QuorumLost.Disabled = true
	if raw, err = (Options{Alerting: &cfg}).AlertRules(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "quorum_lost") {
		t.Errorf("quorum_lost.disabled: the rules still have a quorum_lost rule")
	}
}

// TestLiveErrorsRule evaluates the live_errors rule in a real InfluxDB 1.8
// over signals written by vigil's InfluxDB store, and checks it fires for
// exactly the pool × origins the built-in alerter's rule fails
// (alerting.LiveFigures, LiveTraffic.Failing) over the same signals, at
// the defaults (5 %, 100 requests, 50 % ejected, 5m): o1 fails 6 % of 1000
// requests over two proxies in two regions; o2 fails all its 50 requests
// (under min_requests); o3 fails 1 % but is ejected in 3 of 5 signals; o4
// fails 4.9 % now and failed everything 7 minutes ago (outside the
// window); o5 is ejected in 2 of 5 signals.
func TestLiveErrorsRule(t *testing.T) {
	db := startInfluxd(t)
	now := time.Now()
	var sigs []reporting.Signal
	add := func(origin, region string, ago time.Duration, requests, s5xx, conn, timeouts int, ejected bool) {
		s := reporting.Signal{Pool: "web", Origin: origin, Region: region, Vantage: "proxy-" + region, At: now.Add(-ago),
			Window: time.Minute, Requests: requests, Status5xx: s5xx, ConnErrors: conn, Timeouts: timeouts, P95: 80 * time.Millisecond,
			Ejected: ejected, Out: ejected}
		if ejected {
			s.Reason, s.OutBy = "consecutive_5xx", "passive_ejected"
		}
		sigs = append(sigs, s)
	}
	for i := 0; i < 5; i++ {
		ago := time.Duration(i)*time.Minute + 10*time.Second
		add("o1", "eu-west", ago, 100, 4, 1, 1, false)
		add("o1", "us-east", ago, 100, 6, 0, 0, false)
		add("o2", "eu-west", ago, 10, 10, 0, 0, false)
		add("o3", "eu-west", ago, 100, 1, 0, 0, i < 3)
		add("o4", "eu-west", ago, 200, 10-i/4, 0, 0, false) // 49 of 1000: 4.9 %
		add("o5", "eu-west", ago, 100, 0, 0, 0, i < 2)
	}
	// Before o4's window: 7 minutes ago.
	add("o4", "eu-west", 7*time.Minute, 1000, 1000, 0, 0, true)
	add("o4", "eu-west", 5*time.Minute+30*time.Second, 1000, 1000, 0, 0, true)
	publish(t, db, nil, sigs)

	eval := now.Add(time.Second)
	rule := provisionedRule(t, "vigil-live-errors")
	labels, _ := rule["labels"].(map[string]any)
	if labels["rule"] != vigilalerting.RuleLiveErrors || labels["severity"] != vigilalerting.SeverityPage || rule["for"] != "2m" {
		t.Errorf("labels %v, for %v: want rule live_errors, severity page, for 2m", labels, rule["for"])
	}
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
	if !slices.Equal(slices.Sorted(maps.Keys(got)), want) || !slices.Equal(want, []string{"o1/web", "o3/web"}) {
		t.Errorf("firing %v; the built-in rule fails %v; want o1/web and o3/web", slices.Sorted(maps.Keys(got)), want)
	}
	if w := "pool web origin o1: 6.0% of live requests failed over 5m (60 of 1000); ejected by the proxy's passive detector in 0 of 10 signals"; got["o1/web"]["summary"] != w {
		t.Errorf("o1 summary %q, want %q", got["o1/web"]["summary"], w)
	}
	if w := "pool web origin o3: 1.0% of live requests failed over 5m (5 of 500); ejected by the proxy's passive detector in 3 of 5 signals"; got["o3/web"]["summary"] != w {
		t.Errorf("o3 summary %q, want %q", got["o3/web"]["summary"], w)
	}

	// The config's thresholds: ratio 1 % fires o3 and o4 by their share
	// too; ejected_share 40 % fires o5; disabled, no rule.
	cfg = vigilalerting.Config{StatusPageURL: "http://127.0.0.1:9470", RunbookURL: "https://runbooks.example/{rule}/{check}"}
	cfg.LiveErrors.Ratio, cfg.LiveErrors.EjectedShare = 1, 40
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	raw, err := Options{Alerting: &cfg}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	rule = ruleOf(t, raw, "vigil-live-errors")
	got = firingAnnotations(t, db, rule, eval)
	want = want[:0]
	for _, tr := range vigilalerting.LiveFigures(sigs, eval, cfg.LiveErrors.Window) {
		if tr.Failing(cfg.LiveErrors) {
			want = append(want, tr.Origin+"/"+tr.Pool)
		}
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got)), want) || len(want) != 4 {
		t.Errorf("ratio 1%%, ejected_share 40%%: firing %v; the built-in rule fails %v (want o1, o3, o4, o5)", slices.Sorted(maps.Keys(got)), want)
	}
	if a := got["o1/web"]; a["status_url"] != "http://127.0.0.1:9470/" || a["runbook_url"] != "https://runbooks.example/live_errors/web" {
		t.Errorf("o1: status_url %q, runbook_url %q", a["status_url"], a["runbook_url"])
	}
	cfg.LiveErrors.Disabled = true
	if raw, err = (Options{Alerting: &cfg}).AlertRules(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "live_errors") {
		t.Errorf("live_errors.disabled: the rules still have a live_errors rule")
	}
}
