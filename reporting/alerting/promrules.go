package alerting

//go:generate go run ./gen -o ../../examples/prometheus/vigil-slo-rules.yml

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DeadManPromWindow is the window of the generated dead-man alert when the
// checks' intervals are not known (DeadManPromWindowFor): a region × check
// whose vigil_checks_total did not grow over it.
const DeadManPromWindow = 10 * time.Minute

// deadManPromMinWindow is the shortest window, a few scrapes of a
// Prometheus that scrapes every 15-60 s.
const deadManPromMinWindow = 2 * time.Minute

// LatencyBuckets are the upper bounds, in seconds, of the canary's latency
// histograms (vigil_check_ttfb_seconds, vigil_check_duration_seconds with
// agent.latency_histograms; package canary exports them with these
// bounds). The generated TTFB rule reads the p95 from them: for an
// objective that is one of these bounds, "p95 above the objective" is
// decided from the share of runs above it, as exact as the built-in rule;
// for another, the p95 is interpolated within its bucket and may be off by
// up to the bucket's width. The bounds are the usual latency objectives,
// at most a third apart from 50 ms to 1 s. Do not modify.
var LatencyBuckets = [...]float64{.005, .01, .025, .05, .075, .1, .15, .2, .25, .3, .4, .5, .6, .75, .8, 1, 1.5, 2, 2.5, 3, 5, 10, 30}

// CheckInterval is a configured check and its run interval (for a cron
// check, the longest time between two of its runs), for the generated
// dead-man rules (PrometheusRules).
type CheckInterval struct {
	Check    string
	Interval time.Duration
	// Tier is the check's tier (shallow, deep, synthetic): the tier label
	// of the generated burn-rate alerts of its SLOs, whose counters carry
	// no tier. "": no label.
	Tier string
	// OneRegion is set for a check only one region judges (an enabled
	// push check with push.region: its pings reach that region's agents
	// alone): every generated alert counting regions counts a quorum of 1
	// for it, as the alerter does (Alerter.SetOneRegion): VigilCheckDown
	// and VigilCertificate fire from its one region, as do the TTFB and
	// burn-rate alerts of its SLOs, and VigilQuorumLost only when that
	// region is silent.
	OneRegion bool
}

// DeadManPromWindowFor is the window of the generated dead-man alert for a
// check run every interval, the equivalent of the built-in rule's
// dead_man.intervals × the check's interval: at least 2m (a few scrapes);
// DeadManPromWindow when the interval is not known (0). cfg must be
// validated.
func DeadManPromWindowFor(cfg Config, interval time.Duration) time.Duration {
	if interval <= 0 {
		return DeadManPromWindow
	}
	return max(deadManPromMinWindow, time.Duration(max(cfg.DeadMan.Intervals, 1))*interval)
}

// DeadManPromFor is the `for` of the generated dead-man alert for a check
// run every interval, the equivalent of the built-in rule's dead_man.for:
// how long a region × check must stay silent past its window
// (DeadManPromWindowFor) before it fires, so a process pause (SIGSTOP, a
// frozen VM) that the canary catches up on sends nothing.
//
// A set dead_man.for is used as is; otherwise 2 × the interval, as the
// built-in rule waits. When the interval is not known (0) it waits
// 2 × DeadManPromWindow / dead_man.intervals, twice the interval the fixed
// window stands for (6m40s at the default 3 intervals). cfg must be
// validated (defaults set).
func DeadManPromFor(cfg Config, interval time.Duration) time.Duration {
	if cfg.DeadMan.For > 0 {
		return cfg.DeadMan.For
	}
	if interval > 0 {
		return 2 * interval
	}
	return 2 * DeadManPromWindow / time.Duration(max(cfg.DeadMan.Intervals, 1))
}

// DeadManForgetFor is how long a region × check run every interval may be
// silent before it is forgotten (its dead-man alert resolves):
// dead_man.forget_after, or twice the dead-man window and pending period
// (DeadManPromWindowFor + DeadManPromFor) when that is longer, so a daily
// or cron check whose window and pending period reach forget_after is not
// forgotten before its alert can fire, and then fires about as long as it
// took to fire (10 days for a daily check at the defaults). interval 0 (not
// known): dead_man.forget_after. cfg must be validated.
func DeadManForgetFor(cfg Config, interval time.Duration) time.Duration {
	if interval <= 0 {
		return cfg.DeadMan.ForgetAfter
	}
	return max(cfg.DeadMan.ForgetAfter, 2*(DeadManPromWindowFor(cfg, interval)+DeadManPromFor(cfg, interval)))
}

// deadManGroup is one generated dead-man alert: the checks run every
// interval; no checks: every check (intervals not known, interval 0).
type deadManGroup struct {
	interval time.Duration
	checks   []string
}

// deadManGroups groups checks by interval, shortest first: one alert per
// interval, labelled with it (promtool rejects two alerting rules with the
// same name and labels). A check listed twice keeps its longest interval.
// Without checks there is one group for every check.
func deadManGroups(checks []CheckInterval) []deadManGroup {
	longest := map[string]time.Duration{}
	for _, c := range checks {
		if c.Check != "" && c.Interval > 0 {
			longest[c.Check] = max(longest[c.Check], c.Interval)
		}
	}
	if len(longest) == 0 {
		return []deadManGroup{{}}
	}
	byInterval := map[time.Duration][]string{}
	for name, iv := range longest {
		byInterval[iv] = append(byInterval[iv], name)
	}
	out := make([]deadManGroup, 0, len(byInterval))
	for iv, names := range byInterval {
		sort.Strings(names)
		out = append(out, deadManGroup{interval: iv, checks: names})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].interval < out[j].interval })
	return out
}

// burnRunsFloor is the least run rate, per second, of the generated
// burn-rate ratios' denominator for check: 1 / its interval in checks
// ("1 / 15" for a check run every 15 s; the longest when listed twice), so
// a window's error ratio is failed runs ÷ max(runs, window ÷ interval), as
// the built-in burn_rate rule computes it (counts.expected): a young
// store's or a new check's few runs count against a full window, as if the
// runs not made had passed. "" when checks do not give its interval (no
// floor).
func burnRunsFloor(checks []CheckInterval, check string) string {
	var iv time.Duration
	for _, c := range checks {
		if c.Check == check {
			iv = max(iv, c.Interval)
		}
	}
	if iv <= 0 {
		return ""
	}
	return "1 / " + strconv.FormatFloat(iv.Seconds(), 'g', -1, 64)
}

// QuorumRules names the enabled rules a quorum of regions must agree on,
// "down, ttfb, burn_rate and cert_expiry": what a lost quorum blinds, as
// the quorum_lost alerts of the built-in alerter, the Prometheus rules and
// the Grafana rules say.
func (c Config) QuorumRules() string { return c.quorumRules() }

// checkSelector is the label matcher for names: check="a" or
// check=~"a|b"; "" for every check.
func checkSelector(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return `check="` + promEscape(names[0]) + `"`
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return `check=~"` + promEscape(strings.Join(quoted, "|")) + `"`
}

// selector joins label matchers into a selector of metric: metric{a,b}, or
// metric alone without matchers.
func selector(metric string, matchers ...string) string {
	var ms []string
	for _, m := range matchers {
		if m != "" {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return metric
	}
	return metric + "{" + strings.Join(ms, ",") + "}"
}

// deadManExpr is the dead-man expression for the checks matched by
// checkSel: a region × check whose vigil_checks_total did not grow over
// window, among those still exported by a canary that is scraped, or
// exported within forget by a canary that is no longer scraped (its `up`
// is 0, or its target left service discovery). A series that vanished
// from a canary whose `up` is 1 belongs to a check removed from that
// canary's config and is not expected to run.
func deadManExpr(checkSel string, window, forget time.Duration) string {
	return "group by (check, region) (\n" +
		"    " + selector("vigil_checks_total", checkSel) + "\n" +
		"  or\n" +
		"    (present_over_time(" + selector("vigil_checks_total", checkSel, `result="pass"`) + "[" + promDur(forget) + "]) unless on (instance, job) (up == 1))\n" +
		")\n" +
		"unless on (check, region)\n" +
		"  group by (check, region) (increase(" + selector("vigil_checks_total", checkSel) + "[" + promDur(window) + "]) > 0)"
}

// firingAlert is the ALERTS series of the generated rule's firing alert:
// the held branch of the down and certificate alerts applies only while
// they fire, so missing data never starts an alert.
func firingAlert(rule string) string {
	return `ALERTS{alertname="` + alertNames[rule] + `",alertstate="firing",source="prometheus"}`
}

// regionsTmpl is "{{ $value }} regions" in an annotation, "1 region" for one.
const regionsTmpl = "{{ $value }} region{{ if ne $value 1.0 }}s{{ end }}"

// downDetail returns the template pipelines (`query …`) of VigilCheckDown's
// regions and cause, for its annotations (win, which sets the window
// $w cause reads, goes first), as vigil's alerter and the
// Grafana rule describe a down alert: regions is the unhealthy regions of
// the alert's check × target (and tier) that the alert counts, sorted by
// name (those held on their last verdict while their canary is not
// scraped or their verdict expired included, see the held branch), and
// cause is the most common failure cause among them, from
// vigil_check_failures_total over the check's dead-man window (its
// interval × dead_man.intervals, at least 2m; DeadManPromWindow for a check
// not in checks), the agent's own troubles (agent, browser_unavailable)
// left out; an empty result when they did not fail with a cause in it.
// The alert's labels are only check, target and tier: the series it
// counts are queried again when its annotations are expanded.
func downDetail(forget, notScraped string, cfg Config, checks []CheckInterval) (win, regions, cause string) {
	const sel = `{check=%[1]q,target=%[2]q,tier=%[3]q}`
	last := "last_over_time(vigil:verdict_unhealthy" + sel + "[" + forget + "])"
	expr := "(max by (region) (vigil:verdict_unhealthy" + sel + ") or max by (region) ((" + last + notScraped + ") or (" +
		last + ` and ignoring (state) (vigil_verdict_state{state="unknown"} == 1)))) == 1`
	regions = "query (printf `" + expr + "` $labels.check $labels.target $labels.tier) | sortByLabel \"region\""
	// The window by check: a template variable set from the check's name.
	win = "{{ $w := " + strconv.Quote(promDur(DeadManPromWindow)) + " }}"
	byWindow := map[time.Duration][]string{}
	var windows []time.Duration
	for _, g := range deadManGroups(checks) { // shortest interval first
		window := DeadManPromWindowFor(cfg, g.interval)
		if g.interval <= 0 || window == DeadManPromWindow {
			continue
		}
		if byWindow[window] == nil {
			windows = append(windows, window)
		}
		for _, c := range g.checks {
			byWindow[window] = append(byWindow[window], strconv.Quote(c))
		}
	}
	var branches []string
	for _, window := range windows {
		branches = append(branches, "if eq $labels.check "+strings.Join(byWindow[window], " ")+" }}{{ $w = "+
			strconv.Quote(promDur(window))+" }}")
	}
	if len(branches) > 0 {
		win += "{{ " + strings.Join(branches, "{{ else ") + "{{ end }}"
	}
	cause = "query (printf `topk(1, sum by (cause) (increase(vigil_check_failures_total{check=%[1]q,target=%[2]q,cause!~\"agent|browser_unavailable\"}[%[4]s])" +
		" and on (region) (" + expr + ")) > 0)` $labels.check $labels.target $labels.tier $w)"
	return win, regions, cause
}

// CertPromFor is the `for` of the generated certificate alert. The built-in
// cert_expiry rule fires on the first evaluation where quorum regions agree;
// over scrapes, the hour keeps one scrape of a stray certificate (an edge
// serving an old one for a moment) from opening a ticket. An expiry within
// cert_expiry_days does not go away by itself, so the hour costs nothing.
const CertPromFor = time.Hour

// ExampleSLOs and ExampleConfig are the SLOs and alerting settings of the
// reference config, ExampleChecks the checks of
// examples/multi-region/alerter.yaml (healthz every 5s, asset every 15s);
// examples/prometheus/vigil-slo-rules.yml is generated from them.
var (
	ExampleSLOs = []SLO{
		{Name: "asset-availability", Check: "asset", Objective: 99.9, Window: 30 * 24 * time.Hour},
		{Name: "asset-ttfb", Check: "asset", TTFBP95: 600 * time.Millisecond, Window: 5 * time.Minute},
	}
	ExampleConfig = Config{Quorum: 2, StatusPageURL: "http://127.0.0.1:9470"}
	ExampleChecks = []CheckInterval{{Check: "healthz", Interval: 5 * time.Second, Tier: "shallow"},
		{Check: "asset", Interval: 15 * time.Second, Tier: "deep"}}
)

// PrometheusRules renders a Prometheus rule file (recording and alerting
// rules) equivalent to vigil's own rules, over the metrics the canary
// exports: vigil_checks_total{check,target,region,result="pass"|"fail"},
// vigil_verdict_state{check,target,tier,region,state}, vigil_ttfb_seconds,
// vigil_check_ttfb_seconds (when exported) and probe_ssl_earliest_cert_expiry,
// and over `up` of the canaries' scrape targets (matched on instance and
// job: the canaries must be scraped directly, not federated). cfg and slos
// are validated (defaults set) first. Regions are counted with max by
// region, so several vantages (instances) in one region count once.
//
// checks are the configured checks: each distinct interval gets its own
// dead-man alert (labelled interval) over its checks only, as the built-in
// rule judges only configured checks, with the window and `for` of that
// interval (DeadManPromWindowFor, DeadManPromFor). Without checks, one
// dead-man alert with DeadManPromWindow serves every check. A check with
// OneRegion has a quorum of 1 in every alert (see CheckInterval).
//
// Missing data is not a recovery: while VigilCheckDown or VigilCertificate
// fires, a region whose canary is no longer scraped (`up` 0 or gone) or
// whose verdict expired (state unknown) keeps counting with its last
// judging value, for at most dead_man.forget_after, as the built-in rules
// keep a held alert firing. A region × check whose series were scraped
// within dead_man.forget_after and stopped because the canary is no longer
// scraped is dead-man silent like one whose counter stopped growing.
//
// Differences from the built-in alerter: rates come from scrapes, so the
// error ratio is per scrape interval rather than per run; the TTFB p95 is
// histogram_quantile over the TTFB histogram, interpolated within a bucket
// for an objective that is not a bound of LatencyBuckets, or, for pairs
// without the histogram, quantile_over_time over the scraped last-run
// TTFB (see ttfbP95Expr); the dead-man window
// is at least 2m; maintenance windows are not rendered (use Alertmanager
// silences or time_intervals); the certificate alert holds CertPromFor.
func PrometheusRules(cfg Config, slos []SLO, checks ...CheckInterval) ([]byte, error) {
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		return nil, err
	}
	slos = append([]SLO(nil), slos...)
	if err := validateSLOs(slos); err != nil {
		return nil, err
	}
	w := &ruleWriter{}
	w.line(0, "# Generated by vigil from the slos and alerting config sections")
	w.line(0, "# (`vigil alerter -c FILE --prometheus-rules`, or alerting.PrometheusRules;")
	w.line(0, "# `go generate ./reporting/alerting` for the example in examples/prometheus).")
	w.line(0, "# Do not edit: regenerate. Load it with rule_files: in prometheus.yml.")
	w.line(0, "groups:")

	q := strconv.Itoa(cfg.Quorum)
	// ones are the checks only one region judges (OneRegion): every rule
	// counting regions needs 1 for them, as the alerter's quorum(check),
	// and cfg.Quorum for the others. None with a quorum of 1.
	one := map[string]bool{}
	var ones []string
	for _, c := range checks {
		if c.OneRegion && cfg.Quorum > 1 && !one[c.Check] {
			one[c.Check] = true
			ones = append(ones, c.Check)
		}
	}
	sort.Strings(ones)
	onesSel := checkSelector(ones)
	// quorumFor is the quorum of check in an annotation: q, or a template
	// giving 1 for ones.
	quorumFor := q
	if len(ones) > 0 {
		quoted := make([]string, len(ones))
		for i, c := range ones {
			quoted[i] = strconv.Quote(c)
		}
		quorumFor = "{{ if eq $labels.check " + strings.Join(quoted, " ") + " }}1{{ else }}" + q + "{{ end }}"
	}
	forget := promDur(cfg.DeadMan.ForgetAfter)
	// notScraped keeps the series of canaries that are not scraped now:
	// `up` is 0 (the process died, the host is down) or gone (the target
	// left service discovery).
	const notScraped = " unless on (instance, job) (up == 1)"
	// Shared rules.
	w.group("vigil-common")
	// vigil_ttfb_seconds is the verdict's TTFB for every check kind that
	// has one (scripts too, which export no probe_http_duration_seconds),
	// absent for a run without a first byte: the samples the built-in
	// TTFB rule uses.
	w.record("vigil:ttfb_seconds", `vigil_ttfb_seconds`,
		nil, "Time to first byte of the last run, seconds (http, script and tcp checks; absent when the run got no first byte).")
	if !cfg.Down.Disabled {
		w.record("vigil:verdict_unhealthy",
			`vigil_verdict_state{state="unhealthy"} unless ignoring (state) (vigil_verdict_state{state="unknown"} == 1)`,
			nil, "Per canary and pair: 1 while the current verdict is unhealthy, 0 while it judges otherwise; absent while it judges nothing (expired: unknown) or the canary is not scraped.")
		// A region counts with its canaries' current verdicts or, while
		// the alert fires and none is current, with its last judging
		// verdict of the last forget_after. down is the expression over
		// the checks sel matches with quorum n.
		down := func(sel, n string) string {
			unhealthy := selector("vigil:verdict_unhealthy", sel)
			held := "count by (check, target, tier) (\n" +
				"    (\n" +
				"        max by (check, target, tier, region) (" + unhealthy + ")\n" +
				"      or\n" +
				"        max by (check, target, tier, region) (\n" +
				"            (last_over_time(" + unhealthy + "[" + forget + "])" + notScraped + ")\n" +
				"          or\n" +
				"            (last_over_time(" + unhealthy + "[" + forget + "]) and ignoring (state) (" + selector("vigil_verdict_state", sel, `state="unknown"`) + " == 1))\n" +
				"        )\n" +
				"    ) == 1\n" +
				"  ) >= " + n + "\n" +
				"  and on (check, target) " + firingAlert(RuleDown)
			return "count by (check, target, tier) (max by (check, target, tier, region) (" + unhealthy + ") == 1) >= " + n + "\n" +
				"or\n" +
				"(\n  " + held + "\n)"
		}
		expr := down("", q)
		if len(ones) > 0 {
			// The checks one region judges, with quorum 1.
			expr += "\nor\n" + down(onesSel, "1")
		}
		win, regions, cause := downDetail(forget, notScraped, cfg, checks)
		w.alertAnn(RuleDown, "", expr,
			cfg.Down.For, cfg.Down.KeepFiringFor, cfg.Down.Severity, "",
			win+"{{ $labels.check }} × {{ $labels.target }} down in "+
				"{{ with "+regions+" }}{{ len . }} region{{ if ne (len .) 1 }}s{{ end }} ({{ range $i, $r := . }}{{ if $i }}, {{ end }}{{ $r.Labels.region }}{{ end }}; quorum "+quorumFor+")"+
				"{{ else }}"+regionsTmpl+" (quorum "+quorumFor+"){{ end }}"+
				"{{ with "+cause+" }}: {{ (index . 0).Labels.cause }}{{ end }}", true, nil,
			map[string]string{
				"regions": "{{ range $i, $r := " + regions + " }}{{ if $i }},{{ end }}{{ $r.Labels.region }}{{ end }}",
				"cause":   win + "{{ with " + cause + " }}{{ (index . 0).Labels.cause }}{{ end }}",
			}, cfg)
	}
	if !cfg.Cert.Disabled {
		days := strconv.Itoa(cfg.CertExpiryDays)
		// cert is the expression over the checks sel matches with quorum n.
		cert := func(sel, n string) string {
			expiry := selector("probe_ssl_earliest_cert_expiry", sel)
			held := "count by (check, target, tier) (\n" +
				"    (\n" +
				"        min by (check, target, tier, region) (" + expiry + " > 0)\n" +
				"      or\n" +
				"        min by (check, target, tier, region) ((last_over_time(" + expiry + "[" + forget + "]) > 0)" + notScraped + ")\n" +
				"    ) - time() < " + days + " * 86400\n" +
				"  ) >= " + n + "\n" +
				"  and on (check, target) " + firingAlert(RuleCert)
			return `count by (check, target, tier) (min by (check, target, tier, region) ((` + expiry + ` > 0) - time()) < ` + days + ` * 86400) >= ` + n + "\n" +
				"or\n" +
				"(\n  " + held + "\n)"
		}
		expr := cert("", q)
		if len(ones) > 0 {
			expr += "\nor\n" + cert(onesSel, "1")
		}
		w.alert(RuleCert, "", expr,
			CertPromFor, 0, cfg.Cert.Severity, "",
			"{{ $labels.check }} × {{ $labels.target }} certificate expires within "+days+" days in "+regionsTmpl, true, cfg)
	}
	if !cfg.DeadMan.Disabled {
		for _, g := range deadManGroups(checks) {
			window := DeadManPromWindowFor(cfg, g.interval)
			var extra map[string]string
			if g.interval > 0 {
				extra = map[string]string{"interval": promDur(g.interval)}
			}
			w.alertLabels(RuleDeadMan, "", deadManExpr(checkSelector(g.checks), window, DeadManForgetFor(cfg, g.interval)),
				DeadManPromFor(cfg, g.interval), 0, cfg.DeadMan.Severity, "",
				"no counted run of check {{ $labels.check }} in region {{ $labels.region }} for "+promDur(window)+
					": the canary is silent, or cannot run the check (its own trouble: vigil_check_failures_total{cause=~\"agent|browser_unavailable\"})", false, extra, cfg)
		}
	}

	if !cfg.QuorumLost.Disabled {
		// quorum_lost: a check with a dead-man silent region and fewer
		// than quorum regions whose runs are counted: its quorum alerts
		// (above and the SLO groups below) cannot fire.
		// A check one region judges (OneRegion) has a quorum of 1: it is
		// lost only when no region reports it.
		rules := cfg.quorumRules()
		for _, g := range deadManGroups(checks) {
			window := DeadManPromWindowFor(cfg, g.interval)
			var extra map[string]string
			if g.interval > 0 {
				extra = map[string]string{"interval": promDur(g.interval)}
			}
			var ones, others []string
			for _, c := range g.checks {
				if one[c] {
					ones = append(ones, c)
				} else {
					others = append(others, c)
				}
			}
			reporting := func(sel string) string {
				return "count by (check) (group by (check, region) (increase(" + selector("vigil_checks_total", sel) + "[" + promDur(window) + "]) > 0))"
			}
			var enough string
			switch {
			case len(ones) == 0:
				enough = "  " + reporting(checkSelector(g.checks)) + " >= " + q
			case len(others) == 0:
				enough = "  " + reporting(checkSelector(ones))
			default:
				enough = "  (\n    " + reporting(checkSelector(others)) + " >= " + q + "\n  or\n    " + reporting(checkSelector(ones)) + "\n  )"
			}
			expr := "count by (check) (\n" + deadManExpr(checkSelector(g.checks), window, DeadManForgetFor(cfg, g.interval)) + "\n)\n" +
				"unless on (check)\n" + enough
			fewer := "fewer regions report than alerting.quorum (" + q + ")"
			if len(ones) > 0 {
				quoted := make([]string, len(ones))
				for i, c := range ones {
					quoted[i] = strconv.Quote(c)
				}
				fewer = "{{ if eq $labels.check " + strings.Join(quoted, " ") + " }}no region reports, its quorum (push.region) is 1{{ else }}" + fewer + "{{ end }}"
			}
			w.alertLabels(RuleQuorumLost, "", expr, DeadManPromFor(cfg, g.interval), 0, cfg.QuorumLost.Severity, "",
				"{{ $labels.check }}: "+fewer+", {{ $value }} silent: "+rules+
					" alerts for {{ $labels.check }} cannot fire until they report again", false, extra, cfg)
		}
	}

	tiers := map[string]string{}
	for _, c := range checks {
		if c.Tier != "" {
			tiers[c.Check] = c.Tier
		}
	}
	for _, s := range slos {
		sel := `check="` + promEscape(s.Check) + `"`
		if s.Target != "" {
			sel += `,target="` + promEscape(s.Target) + `"`
		}
		sloSel := `slo="` + promEscape(s.Name) + `"`
		// The SLO's quorum: 1 for a check one region judges.
		sq := q
		if one[s.Check] {
			sq = "1"
		}
		if s.Objective > 0 && !cfg.BurnRate.Disabled {
			w.group("vigil-slo-" + s.Name)
			budget := strconv.FormatFloat((100-float64(s.Objective))/100, 'g', 10, 64)
			windows := map[time.Duration]bool{}
			var order []time.Duration
			for _, bw := range BurnWindows {
				if bw.Severity == SeverityTicket && cfg.BurnRate.NoTicket {
					continue
				}
				for _, d := range []time.Duration{bw.Short, bw.Long} {
					if !windows[d] {
						windows[d] = true
						order = append(order, d)
					}
				}
			}
			sortDurations(order)
			// The denominator is at least the runs the check's interval
			// makes in the window (burnRunsFloor), as the built-in rule's.
			floor := burnRunsFloor(checks, s.Check)
			for i, d := range order {
				win := promDur(d)
				runs := `sum by (check, target, region) (rate(vigil_checks_total{` + sel + `}[` + win + `]))`
				help := ""
				if floor != "" {
					runs = "clamp_min(" + runs + ", " + floor + ")"
					if i == 0 {
						help = "Failed runs ÷ max(runs, the runs the check's interval makes in the window), per region: runs a young store never saw count as passed."
					}
				}
				w.record("vigil:slo_error_ratio:rate"+win,
					`sum by (check, target, region) (rate(vigil_checks_total{`+sel+`,result="fail"}[`+win+`]))`+
						` / `+runs,
					map[string]string{"slo": s.Name}, help)
			}
			// burn_rate.min_runs: a region counts in a pair once it made
			// that many runs over the pair's long window (increase():
			// extrapolated at the window's edges, so about that many).
			minRuns := cfg.BurnRate.MinRuns > 1
			if minRuns {
				longs := map[time.Duration]bool{}
				var longOrder []time.Duration
				for _, bw := range BurnWindows {
					if (bw.Severity != SeverityTicket || !cfg.BurnRate.NoTicket) && !longs[bw.Long] {
						longs[bw.Long] = true
						longOrder = append(longOrder, bw.Long)
					}
				}
				sortDurations(longOrder)
				for i, d := range longOrder {
					help := ""
					if i == 0 {
						help = "Runs per region over a burn-rate pair's long window, for burn_rate.min_runs."
					}
					w.record("vigil:slo_runs:increase"+promDur(d),
						`sum by (check, target, region) (increase(vigil_checks_total{`+sel+`}[`+promDur(d)+`]))`,
						map[string]string{"slo": s.Name}, help)
				}
			}
			w.record("vigil:slo_error_budget_remaining:ratio",
				`1 - avg_over_time(vigil:slo_error_ratio:rate5m{`+sloSel+`}[`+promDur(s.Window)+`]) / `+budget,
				map[string]string{"slo": s.Name},
				"Share of the error budget left over the SLO window (1: untouched, below 0: exhausted), per region.")
			// page pairs are the fast burn, ticket pairs the slow burn.
			burn := map[string]string{SeverityPage: "fast burn", SeverityTicket: "slow burn"}
			for _, sev := range []string{SeverityPage, SeverityTicket} {
				var terms []string
				var names []string
				for _, bw := range BurnWindows {
					if bw.Severity != sev || (sev == SeverityTicket && cfg.BurnRate.NoTicket) {
						continue
					}
					th := "(" + strconv.FormatFloat(bw.Factor, 'g', -1, 64) + " * " + budget + ")"
					guard := ""
					if minRuns {
						guard = "  and on (check, target, region)\n" +
							"    vigil:slo_runs:increase" + promDur(bw.Long) + "{" + sloSel + "} >= " + strconv.Itoa(cfg.BurnRate.MinRuns) + "\n"
					}
					terms = append(terms, "count by (check, target) (\n"+
						"    vigil:slo_error_ratio:rate"+promDur(bw.Long)+"{"+sloSel+"} > "+th+"\n"+
						"  and\n"+
						"    vigil:slo_error_ratio:rate"+promDur(bw.Short)+"{"+sloSel+"} > "+th+"\n"+
						guard+
						") >= "+sq)
					names = append(names, bw.Name())
				}
				if len(terms) == 0 {
					continue
				}
				// vigil_checks_total has no tier: the label comes from the
				// file's checks.
				var extra map[string]string
				if t := tiers[s.Check]; t != "" {
					extra = map[string]string{"tier": t}
				}
				w.alertLabels(RuleBurnRate, s.Name, strings.Join(terms, "\nor\n"), 0, burnKeepProm(cfg, sev), sev, strings.Join(names, ","),
					"{{ $labels.check }} × {{ $labels.target }}: error budget of "+s.Name+" (objective "+s.Objective.String()+
						"): "+burn[sev]+" in "+regionsTmpl+" ("+strings.Join(names, " or ")+")", true, extra, cfg)
			}
		}
		if s.TTFBP95 > 0 && !cfg.TTFB.Disabled {
			w.group("vigil-slo-" + s.Name)
			obj := strconv.FormatFloat(s.TTFBP95.Seconds(), 'g', -1, 64)
			w.record("vigil:ttfb_seconds:p95_"+promDur(s.Window), ttfbP95Expr(s, sel, tiers[s.Check], cfg.TTFB.MinSamples),
				map[string]string{"slo": s.Name}, ttfbBucketNote(s.TTFBP95))
			keep := cfg.TTFB.KeepFiringFor
			if cfg.TTFB.keepDefault {
				keep = ttfbKeepDefault(s)
			}
			w.alert(RuleTTFB, s.Name,
				`count by (check, target, tier) (vigil:ttfb_seconds:p95_`+promDur(s.Window)+`{`+sloSel+`} > `+obj+ttfbSlowRunsExpr(s, sel)+`) >= `+sq,
				cfg.TTFB.For, keep, cfg.TTFB.Severity, "",
				"{{ $labels.check }} × {{ $labels.target }} TTFB p95 over "+promDur(s.Window)+" above "+s.TTFBP95.String()+
					" in "+regionsTmpl, true, cfg)
		}
	}
	liveRules(w, cfg)
	selfRules(w, cfg)
	return w.buf.Bytes(), nil
}

// The generated alerts on vigil's own health (selfRules): their rule
// label, and their alertname.
const (
	RuleAlerterNotEvaluating = "alerter_not_evaluating"
	RuleVerdictSourceDown    = "verdict_source_down"
	RuleInfluxPointsDropped  = "influx_points_dropped"
)

var selfAlertNames = map[string]string{
	RuleAlerterNotEvaluating: "VigilAlerterNotEvaluating",
	RuleVerdictSourceDown:    "VigilProxyVerdictSourceDown",
	RuleInfluxPointsDropped:  "VigilInfluxPointsDropped",
}

// AlerterStalePromFor is how long the generated VigilAlerterNotEvaluating
// waits for a successful evaluation: 3 × evaluation_interval, at least
// 2m (a few scrapes). cfg must be validated.
func AlerterStalePromFor(cfg Config) time.Duration {
	return max(deadManPromMinWindow, 3*cfg.EvaluationInterval)
}

// VerdictSourcePromFor is the `for` of the generated
// VigilProxyVerdictSourceDown, and InfluxDroppedPromWindow the window of
// VigilInfluxPointsDropped.
const (
	VerdictSourcePromFor    = 2 * time.Minute
	InfluxDroppedPromWindow = 10 * time.Minute
)

// Runbook texts of the self-health alerts (their description annotation;
// README.md, "Prometheus rules", says the same).
const (
	runbookAlerterNotEvaluating = "While no evaluation works, vigil's alerter sends nothing: no alert fires or resolves, " +
		"so a new outage pages no one. Usually InfluxDB (store.influxdb) is down or unreachable from the alerter: " +
		"see the alerter's log (`alerting: evaluation failed`), its /healthz and vigil_alert_evaluation_errors_total, " +
		"and InfluxDB's health. If the alerter is down (its target's `up` is 0), restart it. An alerter removed from " +
		"the scrape targets (a rollout, a retired instance) is not watched; this fires without an instance when no " +
		"alerter reports at all. Until one evaluates again, watch the status page or Grafana by hand."
	runbookVerdictSourceDown = "The proxy cannot read this verdict source: it keeps the last verdicts until they are older " +
		"than verdicts.max_age, then routes on passive detection alone. See the proxy's /healthz and log " +
		"(`verdict source … failing since`), and whether the canary or store behind the source is up and " +
		"reachable from the proxy."
	runbookInfluxPointsDropped = "Points written to InfluxDB were lost for good: reason=spool_full means the outbox " +
		"grew past store.influxdb.spool_max in a long outage and its oldest points were deleted, reason=rejected " +
		"that InfluxDB refused points as malformed. History, SLO budgets and alerts computed from InfluxDB miss them. " +
		"Check InfluxDB's health and the writer's log; for spool_full, a larger spool_max rides out longer outages."
)

// selfRules writes the alerts on vigil's own health (group vigil-self):
//
//   - VigilAlerterNotEvaluating (page): an alerter's last successful
//     evaluation (vigil_alert_last_evaluation_success_timestamp_seconds)
//     is older than AlerterStalePromFor: the store is unreadable, or the
//     alerter is still discovered but down (`up` 0: its last value, kept
//     for dead_man.forget_after). An alerter that left service discovery
//     (no `up` series: a rollout gave its pod another address, or it was
//     retired) is not watched, or every rollout would page for
//     forget_after while its successor evaluates fine; absent_over_time
//     fires when no alerter has reported over AlerterStalePromFor at all,
//     so removing the last one still pages. Left out with
//     alerting.disabled;
//   - VigilProxyVerdictSourceDown (ticket): vigil_proxy_verdict_source_up
//     is 0 for VerdictSourcePromFor, its source label renamed
//     verdict_source;
//   - VigilInfluxPointsDropped (ticket): vigil_influx_points_dropped_total
//     grew over InfluxDroppedPromWindow.
func selfRules(w *ruleWriter, cfg Config) {
	w.group("vigil-self")
	if !cfg.Disabled {
		const g = "vigil_alert_last_evaluation_success_timestamp_seconds"
		stale := promDur(AlerterStalePromFor(cfg))
		sec := strconv.FormatFloat(AlerterStalePromFor(cfg).Seconds(), 'f', -1, 64)
		w.selfAlert(RuleAlerterNotEvaluating,
			"time() - (\n"+
				"    max by (instance, job) ("+g+")\n"+
				"  or\n"+
				"    max by (instance, job) (last_over_time("+g+"["+promDur(cfg.DeadMan.ForgetAfter)+"]) and on (instance, job) (up == 0))\n"+
				") > "+sec+"\n"+
				"or\n"+
				"absent_over_time("+g+"["+stale+"])",
			0, SeverityPage,
			"vigil alerter {{ with $labels.instance }}{{ . }} {{ end }}has not evaluated its rules for over "+stale+
				" (store unreadable, alerter down, or no alerter scraped): no vigil alert fires or resolves, so a new outage pages no one",
			runbookAlerterNotEvaluating, cfg)
	}
	// The series' source (the verdicts URL) becomes verdict_source: every
	// generated alert is labelled source="prometheus".
	w.selfAlert(RuleVerdictSourceDown,
		`label_replace(vigil_proxy_verdict_source_up == 0, "verdict_source", "$1", "source", "(.*)")`, VerdictSourcePromFor, SeverityTicket,
		"vigil proxy {{ $labels.instance }} cannot read verdict source {{ $labels.verdict_source }} (for "+promDur(VerdictSourcePromFor)+
			"): it routes on its last verdicts until they age out, then on passive detection alone",
		runbookVerdictSourceDown, cfg)
	win := promDur(InfluxDroppedPromWindow)
	w.selfAlert(RuleInfluxPointsDropped, "increase(vigil_influx_points_dropped_total["+win+"]) > 0", 0, SeverityTicket,
		"{{ $labels.instance }} dropped about {{ $value | printf \"%.0f\" }} InfluxDB points in "+win+
			" (reason {{ $labels.reason }}): they are lost for good",
		runbookInfluxPointsDropped, cfg)
}

// selfAlert writes one alert of selfRules: labelled rule, severity and
// source="prometheus", annotated summary, description (the runbook text)
// and runbook_url (alerting.runbook_url with {rule} replaced, {check}
// empty). No status_url: these are about vigil, not a check.
func (w *ruleWriter) selfAlert(rule, expr string, hold time.Duration, severity, summary, runbook string, cfg Config) {
	w.line(6, "- alert: "+selfAlertNames[rule])
	w.expr(8, expr)
	if hold > 0 {
		w.line(8, "for: "+promDur(hold))
	}
	labels := map[string]string{"rule": rule, "severity": severity, "source": "prometheus"}
	w.line(8, "labels:")
	for _, k := range sortedKeys(labels) {
		w.line(10, k+": "+yq(labels[k]))
	}
	ann := map[string]string{"summary": summary, "description": runbook}
	if cfg.RunbookURL != "" {
		ann["runbook_url"] = strings.NewReplacer("{rule}", rule, "{check}", "").Replace(cfg.RunbookURL)
	}
	w.line(8, "annotations:")
	for _, k := range sortedKeys(ann) {
		w.line(10, k+": "+yq(ann[k]))
	}
}

// ttfbP95Expr is the recorded TTFB p95 of SLO s over its window, per
// check × target × region, for the pairs matched by sel:
//
//   - where a canary of the region exports the vigil_check_ttfb_seconds
//     histogram (agent.latency_histograms), histogram_quantile over the
//     region's runs in the window (its canaries' buckets summed, as the
//     built-in rule pools a region's vantages), when they hold at least
//     minSamples runs (ttfb.min_samples, as the built-in rule; counted
//     with increase(), so an estimate at the window's edges). Every run
//     counts once, whatever the scrape interval. tier, which the histogram
//     does not carry, comes from the file's checks ("": none);
//   - elsewhere, quantile_over_time of the scraped last-run TTFB gauge,
//     worst vantage of the region: runs between two scrapes are not seen
//     and a run seen by several scrapes counts several times.
//
// An objective at or above the histogram's last bound (LatencyBuckets)
// uses the gauge only: histogram_quantile cannot report a p95 above that
// bound.
func ttfbP95Expr(s SLO, sel, tier string, minSamples int) string {
	win := promDur(s.Window)
	gauge := `max by (check, target, tier, region) (quantile_over_time(0.95, vigil:ttfb_seconds{` + sel + `}[` + win + `]))`
	if s.TTFBP95.Seconds() >= LatencyBuckets[len(LatencyBuckets)-1] {
		return gauge
	}
	hist := "histogram_quantile(0.95, sum by (check, target, region, le) (rate(vigil_check_ttfb_seconds_bucket{" + sel + "}[" + win + "])))\n" +
		"  and on (check, target, region)\n" +
		"    sum by (check, target, region) (increase(vigil_check_ttfb_seconds_count{" + sel + "}[" + win + "])) >= " + strconv.Itoa(max(minSamples, 1))
	if tier != "" {
		hist = "label_replace(\n  " + strings.ReplaceAll(hist, "\n", "\n  ") + ",\n  \"tier\", \"" + promEscape(tier) + "\", \"\", \"\"\n)"
	} else {
		hist = "(\n  " + strings.ReplaceAll(hist, "\n", "\n  ") + "\n)"
	}
	return hist + "\nor\n(\n  " + gauge + "\n    unless on (check, target, region) vigil_check_ttfb_seconds_count{" + sel + "}\n)"
}

// ttfbSlowRunsExpr is the TTFB alert's TTFBMinSlowRuns condition for the
// regions whose p95 comes from the vigil_check_ttfb_seconds histogram: it
// leaves out a region with fewer than 2 runs (under 1.5 by increase(),
// which extrapolates) above the largest bucket bound at or below the
// objective in the window, so one slow run does not breach. Exact when the
// objective is a bucket bound; otherwise runs between that bound and the
// objective count as slow too (the condition can only keep a breach). ""
// when the objective is below the first bound or at or above the last
// (the p95 comes from the gauge, whose scrapes cannot count runs).
func ttfbSlowRunsExpr(s SLO, sel string) string {
	sec := s.TTFBP95.Seconds()
	if sec >= LatencyBuckets[len(LatencyBuckets)-1] {
		return ""
	}
	le := ""
	for _, ub := range LatencyBuckets {
		if ub <= sec {
			le = strconv.FormatFloat(ub, 'g', -1, 64)
		}
	}
	if le == "" {
		return ""
	}
	win := promDur(s.Window)
	return "\n  unless on (check, target, region)\n    (\n" +
		"        sum by (check, target, region) (increase(vigil_check_ttfb_seconds_count{" + sel + "}[" + win + "]))\n" +
		"      - sum by (check, target, region) (increase(vigil_check_ttfb_seconds_bucket{" + sel + `,le="` + le + `"}[` + win + "]))\n" +
		"    ) < 1.5"
}

// ttfbBucketNote says how exactly the histogram's buckets resolve the
// objective obj (the comment above the recorded p95).
func ttfbBucketNote(obj time.Duration) string {
	sec := obj.Seconds()
	const pre = "TTFB p95 per region: from vigil_check_ttfb_seconds (agent.latency_histograms) where a canary exports it, else from the last-run gauge. "
	last := LatencyBuckets[len(LatencyBuckets)-1]
	if sec >= last {
		return "TTFB p95 per region from the last-run gauge: the objective " + obj.String() + " is above the histogram's last bound " +
			secDur(last).String() + ", where histogram_quantile stops."
	}
	lower := 0.0
	for _, ub := range LatencyBuckets {
		if sec == ub {
			return pre + obj.String() + " is a bucket bound: the p95 is above it exactly when more than 5% of the window's runs are above it."
		}
		if sec < ub {
			return pre + obj.String() + " lies between the bucket bounds " + secDur(lower).String() + " and " + secDur(ub).String() +
				": a p95 in that bucket is interpolated and may be off by up to " + secDur(ub-lower).String() + "."
		}
		lower = ub
	}
	return pre
}

// secDur converts seconds to a Duration, rounded to the microsecond.
func secDur(sec float64) time.Duration {
	return time.Duration(sec*1e6+0.5) * time.Microsecond
}

// ruleWriter writes the rule file by hand so the output is stable and
// readable; every string is YAML single-quoted or a literal block.
type ruleWriter struct {
	buf    bytes.Buffer
	groups map[string]bool
}

func (w *ruleWriter) line(indent int, s string) {
	w.buf.WriteString(strings.Repeat(" ", indent))
	w.buf.WriteString(s)
	w.buf.WriteByte('\n')
}

// group opens a group unless it is already the open one.
func (w *ruleWriter) group(name string) {
	if w.groups == nil {
		w.groups = map[string]bool{}
	}
	if w.groups[name] {
		return
	}
	w.groups[name] = true
	w.line(2, "- name: "+yq(name))
	w.line(4, "rules:")
}

func (w *ruleWriter) expr(indent int, e string) {
	if !strings.Contains(e, "\n") {
		w.line(indent, "expr: "+yq(e))
		return
	}
	w.line(indent, "expr: |")
	for _, l := range strings.Split(e, "\n") {
		w.line(indent+2, l)
	}
}

func (w *ruleWriter) record(name, expr string, labels map[string]string, help string) {
	if help != "" {
		w.line(6, "# "+help)
	}
	w.line(6, "- record: "+name)
	w.expr(8, expr)
	if len(labels) > 0 {
		w.line(8, "labels:")
		for _, k := range sortedKeys(labels) {
			w.line(10, k+": "+yq(labels[k]))
		}
	}
}

// alert writes an alerting rule. hold is its `for`, keep its
// `keep_firing_for` (0: none); windows is the burn-rate pairs,
// comma-separated as in the built-in alerter's Alertmanager annotation;
// hasTarget: the alert is per check × target, and its status_url narrows
// the check page to the target as the built-in alerter's does.
func (w *ruleWriter) alert(rule, slo, expr string, hold, keep time.Duration, severity, windows, summary string, hasTarget bool, cfg Config) {
	w.alertLabels(rule, slo, expr, hold, keep, severity, windows, summary, hasTarget, nil, cfg)
}

// alertLabels is alert with extra labels.
func (w *ruleWriter) alertLabels(rule, slo, expr string, hold, keep time.Duration, severity, windows, summary string, hasTarget bool,
	extra map[string]string, cfg Config) {
	w.alertAnn(rule, slo, expr, hold, keep, severity, windows, summary, hasTarget, extra, nil, cfg)
}

// alertAnn is alertLabels with extra annotations.
func (w *ruleWriter) alertAnn(rule, slo, expr string, hold, keep time.Duration, severity, windows, summary string, hasTarget bool,
	extra, moreAnn map[string]string, cfg Config) {
	w.line(6, "- alert: "+alertNames[rule])
	w.expr(8, expr)
	if hold > 0 {
		w.line(8, "for: "+promDur(hold))
	}
	if keep > 0 {
		// Prometheus 2.42 and later.
		w.line(8, "keep_firing_for: "+promDur(keep))
	}
	labels := map[string]string{"rule": rule, "severity": severity, "source": "prometheus"}
	if slo != "" {
		labels["slo"] = slo
	}
	for k, v := range extra {
		labels[k] = v
	}
	w.line(8, "labels:")
	for _, k := range sortedKeys(labels) {
		w.line(10, k+": "+yq(labels[k]))
	}
	ann := map[string]string{"summary": summary}
	for k, v := range moreAnn {
		ann[k] = v
	}
	if windows != "" {
		ann["windows"] = windows
	}
	if cfg.StatusPageURL != "" {
		ann["status_url"] = strings.TrimSuffix(cfg.StatusPageURL, "/") + "/check/{{ $labels.check }}"
		if hasTarget {
			ann["status_url"] += "?target={{ $labels.target | urlquery }}"
		}
	}
	if cfg.RunbookURL != "" {
		ann["runbook_url"] = strings.NewReplacer("{rule}", rule, "{check}", "{{ $labels.check }}").Replace(cfg.RunbookURL)
	}
	w.line(8, "annotations:")
	for _, k := range sortedKeys(ann) {
		w.line(10, k+": "+yq(ann[k]))
	}
}

// yq single-quotes a YAML scalar.
func yq(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// promEscape escapes a PromQL double-quoted label value.
func promEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// promDur writes a duration the PromQL way (PromDuration).
func promDur(d time.Duration) string { return PromDuration(d) }

// PromDuration writes a duration the PromQL way: 5m, 1h, 1d, 30d, 600ms,
// and compound where needed: 6m40s, 1h30m. The Grafana rules write theirs
// the same way.
func PromDuration(d time.Duration) string {
	if d%time.Second != 0 {
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	return b.String()
}

func sortDurations(ds []time.Duration) { sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] }) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
