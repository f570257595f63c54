package alerting

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// LiveErrorsRule configures the live_errors rule: the proxies' live
// traffic to a pool's origin fails although (or while) the canaries'
// checks say what they say. It reads the Signals the proxies publish
// (reporting.SignalSource); a store that has none never fires it.
type LiveErrorsRule struct {
	// Disabled turns the rule off. Default false.
	Disabled bool `mapstructure:"disabled"`
	// Ratio is the share of live requests to an origin that failed (5xx,
	// connection errors, timeouts) over Window, summed over every proxy
	// instance and region, at or above which the rule holds. Default 5%;
	// an explicit 0% is an error (it would hold with no failure).
	Ratio units.Percent `mapstructure:"ratio"`
	// MinRequests is the fewest requests to the origin in Window for
	// Ratio to count. Default 100.
	MinRequests int `mapstructure:"min_requests"`
	// EjectedShare: the rule also holds while the proxies' passive
	// detector held the origin out in at least this share of its signals
	// over Window (an origin ejected, let back and ejected again: the
	// failures are retried away and its ratio stays low). Default 50%; an
	// explicit 0% is an error.
	EjectedShare units.Percent `mapstructure:"ejected_share"`
	// Window is the span the ratio and the ejected share are measured
	// over. Default 5m.
	Window time.Duration `mapstructure:"window"`
	// For is how long the condition must hold before the alert fires.
	// Default 2m when omitted; an explicit 0s fires at once.
	For time.Duration `mapstructure:"for"`
	// Severity of the alert. Default page.
	Severity string `mapstructure:"severity"`
}

// validate sets the rule's defaults and checks it; set holds the keys the
// file set (relative to the alerting section).
func (r *LiveErrorsRule) validate(set units.KeySet) error {
	var errs []error
	if set["live_errors.ratio"] && r.Ratio == 0 {
		errs = append(errs, fmt.Errorf("live_errors.ratio: 0%%: %w (it would hold with no failed request; omit it for 5%%)", ErrNotPositive))
	}
	if set["live_errors.ejected_share"] && r.EjectedShare == 0 {
		errs = append(errs, fmt.Errorf("live_errors.ejected_share: 0%%: %w (omit it for 50%%)", ErrNotPositive))
	}
	if set["live_errors.window"] && r.Window == 0 {
		errs = append(errs, fmt.Errorf("live_errors.window: 0s: %w (omit it for 5m)", ErrNotPositive))
	}
	if set["live_errors.min_requests"] && r.MinRequests == 0 {
		errs = append(errs, fmt.Errorf("live_errors.min_requests: 0: %w (omit it for 100; 1 counts any traffic)", ErrNotPositive))
	}
	if r.Ratio < 0 {
		errs = append(errs, fmt.Errorf("live_errors.ratio: %s: %w", r.Ratio, ErrNotPositive))
	}
	if r.EjectedShare < 0 {
		errs = append(errs, fmt.Errorf("live_errors.ejected_share: %s: %w", r.EjectedShare, ErrNotPositive))
	}
	if r.MinRequests < 0 {
		errs = append(errs, fmt.Errorf("live_errors.min_requests: %d: %w", r.MinRequests, ErrNotPositive))
	}
	if r.Window < 0 {
		errs = append(errs, fmt.Errorf("live_errors.window: %s: %w", r.Window, ErrNotPositive))
	}
	if r.For < 0 {
		errs = append(errs, fmt.Errorf("live_errors.for: %s: %w", r.For, ErrNotPositive))
	}
	if r.Ratio == 0 {
		r.Ratio = 5
	}
	if r.EjectedShare == 0 {
		r.EjectedShare = 50
	}
	if r.MinRequests == 0 {
		r.MinRequests = 100
	}
	if r.Window == 0 {
		r.Window = 5 * time.Minute
	}
	if r.For == 0 && !set["live_errors.for"] {
		r.For = 2 * time.Minute
	}
	errs = append(errs, severity("live_errors.severity", &r.Severity, SeverityPage))
	return errors.Join(errs...)
}

// WithDefaults is r with its omitted values set to their defaults (ratio
// 5%, min_requests 100, ejected_share 50%, window 5m), for readers of a
// validated config's figures that may see a zero one.
func (r LiveErrorsRule) WithDefaults() LiveErrorsRule {
	if r.Ratio <= 0 {
		r.Ratio = 5
	}
	if r.EjectedShare <= 0 {
		r.EjectedShare = 50
	}
	if r.MinRequests <= 0 {
		r.MinRequests = 100
	}
	if r.Window <= 0 {
		r.Window = 5 * time.Minute
	}
	return r
}

// LiveTraffic is one pool × origin's live traffic over the live_errors
// window, summed over every proxy instance and region (LiveFigures).
type LiveTraffic struct {
	Pool, Origin string
	// Regions are the regions of the proxies that reported it, sorted.
	Regions []string
	// Requests, Status5xx, ConnErrors and Timeouts are the window's sums.
	Requests, Status5xx, ConnErrors, Timeouts int
	// Signals counts the signals of the window; Ejected those whose
	// proxy had the origin passively ejected, the latest Reason one.
	Signals, Ejected int
	Reason           string
	// Drained names the proxy instances ("region/vantage") that had the
	// origin drained (reporting.Signal.OutBy "drained") in a signal of the
	// window, sorted. A drain is planned work: every signal of such an
	// instance in the window is left out of the figures above (its
	// requests in flight when drained, a passive ejection while drained,
	// the traffic before the drain), so the origin is not judged there
	// while drained nor for one window after its undrain. An origin
	// drained on every instance that reports it has no signal left
	// (Signals 0): it is not judged at all.
	Drained []string
}

// Failed is the window's failed requests.
func (t LiveTraffic) Failed() int { return t.Status5xx + t.ConnErrors + t.Timeouts }

// Ratio is the window's failed share of requests, 0..1 (0 without
// requests).
func (t LiveTraffic) Ratio() float64 {
	if t.Requests == 0 {
		return 0
	}
	return float64(t.Failed()) / float64(t.Requests)
}

// EjectedShare is the share of the window's signals whose proxy had the
// origin passively ejected, 0..1.
func (t LiveTraffic) EjectedShare() float64 {
	if t.Signals == 0 {
		return 0
	}
	return float64(t.Ejected) / float64(t.Signals)
}

// Failing reports whether the traffic meets r's condition: a failed share
// at or above ratio with at least min_requests, or an ejected share at or
// above ejected_share. r must be validated.
func (t LiveTraffic) Failing(r LiveErrorsRule) bool {
	return (t.Requests >= r.MinRequests && t.Ratio()*100 >= float64(r.Ratio)-1e-9) ||
		(t.Signals > 0 && t.EjectedShare()*100 >= float64(r.EjectedShare)-1e-9)
}

// LiveFigures sums signals (those with At in (now-window, now]) per pool ×
// origin, sorted by pool then origin, leaving out the signals of the proxy
// instances that had the origin drained in the window (LiveTraffic.Drained).
func LiveFigures(signals []reporting.Signal, now time.Time, window time.Duration) []LiveTraffic {
	type key struct{ pool, origin string }
	type instance struct {
		key
		region, vantage string
	}
	from := now.Add(-window)
	inWindow := func(s reporting.Signal) bool { return s.At.After(from) && !s.At.After(now) }
	drained := map[instance]bool{}
	for _, s := range signals {
		if inWindow(s) && drainedSignal(s) {
			drained[instance{key{s.Pool, s.Origin}, s.Region, s.Vantage}] = true
		}
	}
	sums := map[key]*LiveTraffic{}
	regions := map[key]map[string]bool{}
	newest := map[key]time.Time{}
	for _, s := range signals {
		if !inWindow(s) {
			continue
		}
		k := key{s.Pool, s.Origin}
		t := sums[k]
		if t == nil {
			t = &LiveTraffic{Pool: s.Pool, Origin: s.Origin}
			sums[k], regions[k] = t, map[string]bool{}
		}
		if drained[instance{k, s.Region, s.Vantage}] {
			continue
		}
		t.Requests += s.Requests
		t.Status5xx += s.Status5xx
		t.ConnErrors += s.ConnErrors
		t.Timeouts += s.Timeouts
		t.Signals++
		if s.Ejected {
			t.Ejected++
			if s.At.After(newest[k]) && s.Reason != "" {
				t.Reason, newest[k] = s.Reason, s.At
			}
		}
		if s.Region != "" {
			regions[k][s.Region] = true
		}
	}
	for in := range drained {
		name := in.vantage
		if in.region != "" {
			name = in.region + "/" + in.vantage
		}
		sums[in.key].Drained = append(sums[in.key].Drained, name)
	}
	out := make([]LiveTraffic, 0, len(sums))
	for k, t := range sums {
		for r := range regions[k] {
			t.Regions = append(t.Regions, r)
		}
		sort.Strings(t.Regions)
		sort.Strings(t.Drained)
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pool != out[j].Pool {
			return out[i].Pool < out[j].Pool
		}
		return out[i].Origin < out[j].Origin
	})
	return out
}

// drainedSignal reports whether s's proxy had the origin drained at s.At
// (OutBy names "drained").
func drainedSignal(s reporting.Signal) bool {
	for by := range strings.SplitSeq(s.OutBy, ",") {
		if strings.TrimSpace(by) == "drained" {
			return true
		}
	}
	return false
}

// Breakdown is "470 5xx, 3 connection errors, 2 timeouts" (the kinds
// that occurred; "no failure" when none did).
func (t LiveTraffic) Breakdown() string {
	var parts []string
	if t.Status5xx > 0 {
		parts = append(parts, fmt.Sprintf("%d 5xx", t.Status5xx))
	}
	if t.ConnErrors > 0 {
		parts = append(parts, pluralN(t.ConnErrors, "connection error"))
	}
	if t.Timeouts > 0 {
		parts = append(parts, pluralN(t.Timeouts, "timeout"))
	}
	if len(parts) == 0 {
		return "no failure"
	}
	return strings.Join(parts, ", ")
}

// cause is the most common failure kind: status_5xx, connect or timeout
// (the proxy's vigil_proxy_tries_total results), or, with no failed
// request, the passive detector's reason.
func (t LiveTraffic) cause() string {
	best, n := "", 0
	for _, c := range []struct {
		name string
		n    int
	}{{"status_5xx", t.Status5xx}, {"connect", t.ConnErrors}, {"timeout", t.Timeouts}} {
		if c.n > n {
			best, n = c.name, c.n
		}
	}
	if best == "" {
		return t.Reason
	}
	return best
}

// ChecksState describes the latest verdicts of the checks of target as a
// live_errors summary names them, and whether they all pass: "healthz:
// healthy in eu, us; asset: unhealthy in eu". Expired verdicts read
// unknown. No verdict of target: "", false.
func ChecksState(latest []reporting.Verdict, target string, now time.Time) (desc string, pass bool) {
	states := map[string]map[reporting.State][]string{}
	for _, v := range latest {
		if v.Target != target {
			continue
		}
		if states[v.Check] == nil {
			states[v.Check] = map[reporting.State][]string{}
		}
		st := v.Current(now)
		region := v.Region
		if region == "" {
			region = "?"
		}
		states[v.Check][st] = append(states[v.Check][st], region)
	}
	if len(states) == 0 {
		return "", false
	}
	checks := make([]string, 0, len(states))
	for c := range states {
		checks = append(checks, c)
	}
	sort.Strings(checks)
	pass = true
	healthy := false
	var parts []string
	for _, c := range checks {
		var ss []string
		for _, st := range []reporting.State{reporting.StateHealthy, reporting.StateDegraded, reporting.StateUnhealthy, reporting.StateUnknown} {
			rs := states[c][st]
			if len(rs) == 0 {
				continue
			}
			switch st {
			case reporting.StateHealthy, reporting.StateDegraded:
				healthy = true
			case reporting.StateUnhealthy:
				pass = false
			}
			sort.Strings(rs)
			ss = append(ss, string(st)+" in "+strings.Join(dedupe(rs), ", "))
		}
		parts = append(parts, c+": "+strings.Join(ss, ", "))
	}
	return strings.Join(parts, "; "), pass && healthy
}

// dedupe drops repeats from a sorted list.
func dedupe(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// liveSummary is the live_errors alert's summary: what users got and what
// the checks say.
func liveSummary(t LiveTraffic, r LiveErrorsRule, latest []reporting.Verdict, now time.Time, poolWide string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pool %s origin %s: ", t.Pool, t.Origin)
	failing := t.Requests >= r.MinRequests && t.Ratio()*100 >= float64(r.Ratio)-1e-9
	traffic := fmt.Sprintf("%s of live requests failed over %s (%d of %d: %s)",
		units.Share(t.Ratio()), shortDur(r.Window), t.Failed(), t.Requests, t.Breakdown())
	if failing {
		b.WriteString(traffic)
	}
	if t.Signals > 0 && t.EjectedShare()*100 >= float64(r.EjectedShare)-1e-9 {
		if failing {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "ejected by the proxy's passive detector in %d of %d signals over %s", t.Ejected, t.Signals, shortDur(r.Window))
		if t.Reason != "" {
			fmt.Fprintf(&b, " (%s)", t.Reason)
		}
		if !failing {
			b.WriteString(", " + traffic)
		}
	}
	desc, pass := ChecksState(latest, t.Origin, now)
	switch {
	case desc == "":
		fmt.Fprintf(&b, "; no check covers %s: add one that fetches what users fetch", t.Origin)
	case pass:
		fmt.Fprintf(&b, " while its checks pass (%s)", desc)
	default:
		fmt.Fprintf(&b, "; its checks: %s", desc)
	}
	b.WriteString(poolWide)
	return b.String()
}

// evalLive runs the live_errors rule over the proxies' signals of the
// last window: one alert per pool × origin whose live traffic fails
// (LiveTraffic.Failing). Its Check is the pool and its Target the origin.
// A source without signals (not a reporting.SignalSource) gives none.
//
// An origin drained on a proxy instance is not judged there
// (LiveFigures): a drain never pages. When such an origin's alert fires
// and its figures without the drained instances no longer hold, it
// resolves, and e.resolveNotes gives the resolve's summary, which says it
// resolved because of the drain, not a recovery.
func (e *evaluator) evalLive(ctx context.Context, latest []reporting.Verdict) ([]candidate, error) {
	r := e.cfg.LiveErrors
	src, ok := e.src.(reporting.SignalSource)
	if r.Disabled || !ok {
		return nil, nil
	}
	sigs, err := src.Signals(ctx, e.now.Add(-r.Window))
	if err != nil {
		return nil, fmt.Errorf("signals: %w", err)
	}
	figs := LiveFigures(sigs, e.now, r.Window)
	// The pool-wide note counts the origins judged: one drained on every
	// proxy takes no traffic, and is named apart.
	origins, failingIn, drainedIn := map[string]int{}, map[string]int{}, map[string][]string{}
	for _, t := range figs {
		if t.Signals == 0 {
			drainedIn[t.Pool] = append(drainedIn[t.Pool], t.Origin)
			continue
		}
		origins[t.Pool]++
		if t.Failing(r) {
			failingIn[t.Pool]++
		}
	}
	var out []candidate
	for _, t := range figs {
		if !t.Failing(r) {
			if len(t.Drained) > 0 && e.held[heldKey(RuleLiveErrors, t.Pool, t.Origin)] {
				if e.resolveNotes == nil {
					e.resolveNotes = map[string]string{}
				}
				e.resolveNotes[heldKey(RuleLiveErrors, t.Pool, t.Origin)] = liveDrainedResolve(t, r)
			}
			continue
		}
		poolWide := ""
		if n := origins[t.Pool]; n > 1 && failingIn[t.Pool] == n {
			poolWide = fmt.Sprintf("; every origin of pool %s is failing (%d of %d", t.Pool, n, n)
			if d := drainedIn[t.Pool]; len(d) > 0 {
				poolWide += "; drained: " + strings.Join(d, ", ")
			}
			poolWide += ")"
		}
		if len(t.Drained) > 0 {
			poolWide = fmt.Sprintf("; drained on %s (left out)", strings.Join(t.Drained, ", ")) + poolWide
		}
		a := Alert{Rule: RuleLiveErrors, Severity: r.Severity, Check: t.Pool, Target: t.Origin, Regions: t.Regions,
			Value: t.Ratio(), Cause: t.cause()}
		a.Summary = liveSummary(t, r, latest, e.now, poolWide)
		out = append(out, candidate{Alert: a, hold: r.For})
	}
	return out, nil
}

// liveDrainedResolve is the summary of a live_errors alert that resolves
// while its origin is drained on some proxy instance.
func liveDrainedResolve(t LiveTraffic, r LiveErrorsRule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pool %s origin %s: drained on %s: not judged by live_errors while drained "+
		"(a drain is planned work), so this resolve is the drain's, not a recovery", t.Pool, t.Origin, strings.Join(t.Drained, ", "))
	if t.Signals > 0 {
		fmt.Fprintf(&b, "; the other proxies' live traffic does not meet the rule (%s of %d requests failed over %s)",
			units.Share(t.Ratio()), t.Requests, shortDur(r.Window))
	}
	return b.String()
}

// liveRules writes the generated Prometheus equivalents of the
// live_errors rule, over the proxies' metrics summed over every proxy
// instance (one VigilLiveTrafficFailing alert per pool × origin and
// condition, labelled pool and origin):
//
//   - condition="errors": the share of tries to the origin that failed
//     (vigil_proxy_tries_total, every result but ok and local: local is
//     the proxy's own trouble) over the window is at or above ratio, with
//     at least min_requests tries in it;
//   - condition="ejected": the origin was out of rotation
//     (vigil_proxy_origin_available 0, averaged over the proxies that do
//     not have it drained) for at least ejected_share of the window, and
//     the passive detector was at work in it (an ejection by a rule other
//     than verdict, or a failed return probe): out by verdicts or drained
//     alone is no live failure.
//
// As the built-in rule leaves out the signals of a proxy instance that had
// the origin drained in the window (LiveFigures), these leave out the
// tries, ejections and failed return probes of an instance whose
// vigil_proxy_origin_drained was 1 in the window (matched on job and
// instance), and its out-of-rotation time while drained: a drain, and what
// happens to the origin while drained (its requests in flight cut, a
// passive ejection kept by failing probes while it is down), never fires.
//
// Tries, not signals, are counted: the ratio is the one the built-in rule
// computes from the same counts, and the out share is of the window's
// time, where the built-in rule counts signals.
func liveRules(w *ruleWriter, cfg Config) {
	r := cfg.LiveErrors
	if r.Disabled {
		return
	}
	w.group("vigil-live")
	win := promDur(r.Window)
	ratio := strconv.FormatFloat(float64(r.Ratio)/100, 'g', 10, 64)
	share := strconv.FormatFloat(float64(r.EjectedShare)/100, 'g', 10, 64)
	// undrained keeps the series of the proxy instances that did not have
	// the origin drained in the window.
	undrained := func(series string) string {
		return series + " unless on (job, instance, pool, origin) max_over_time(vigil_proxy_origin_drained[" + win + "]) > 0"
	}
	tries := "sum by (pool, origin) (" + undrained("increase(vigil_proxy_tries_total{result!=\"local\"}["+win+"])") + ")"
	w.liveAlert("errors",
		"(\n"+
			"    sum by (pool, origin) ("+undrained("increase(vigil_proxy_tries_total{result!~\"ok|local\"}["+win+"])")+")\n"+
			"  /\n"+
			"    "+tries+"\n"+
			") >= "+ratio+"\n"+
			"  and on (pool, origin)\n"+
			"    "+tries+" >= "+strconv.Itoa(r.MinRequests),
		"pool {{ $labels.pool }} origin {{ $labels.origin }}: {{ $value | humanizePercentage }} of live tries failed over "+win+
			" (vigil_proxy_tries_total); compare with its checks: they may pass while users fail", cfg)
	w.liveAlert("ejected",
		"avg_over_time((avg by (pool, origin) (1 - vigil_proxy_origin_available unless on (job, instance, pool, origin) vigil_proxy_origin_drained == 1))["+win+":]) >= "+share+"\n"+
			"  and on (pool, origin)\n"+
			"    (\n"+
			"        sum by (pool, origin) ("+undrained("increase(vigil_proxy_ejections_total{reason!=\"verdict\"}["+win+"])")+") > 0\n"+
			"      or\n"+
			"        sum by (pool, origin) ("+undrained("increase(vigil_proxy_return_probes_total{result=\"fail\"}["+win+"])")+") > 0\n"+
			"    )",
		"pool {{ $labels.pool }} origin {{ $labels.origin }}: out of rotation {{ $value | humanizePercentage }} of the last "+win+
			" with the proxy's passive detector ejecting it (failed tries retried elsewhere); compare with its checks: they may pass while it fails users", cfg)
}

// liveAlert writes one generated live_errors alert (liveRules).
func (w *ruleWriter) liveAlert(condition, expr, summary string, cfg Config) {
	r := cfg.LiveErrors
	w.line(6, "- alert: "+alertNames[RuleLiveErrors])
	w.expr(8, expr)
	if r.For > 0 {
		w.line(8, "for: "+promDur(r.For))
	}
	labels := map[string]string{"rule": RuleLiveErrors, "severity": r.Severity, "source": "prometheus", "condition": condition}
	w.line(8, "labels:")
	for _, k := range sortedKeys(labels) {
		w.line(10, k+": "+yq(labels[k]))
	}
	ann := map[string]string{"summary": summary}
	if cfg.StatusPageURL != "" {
		ann["status_url"] = strings.TrimSuffix(cfg.StatusPageURL, "/") + "/"
	}
	if cfg.RunbookURL != "" {
		ann["runbook_url"] = strings.NewReplacer("{rule}", RuleLiveErrors, "{check}", "{{ $labels.pool }}").Replace(cfg.RunbookURL)
	}
	w.line(8, "annotations:")
	for _, k := range sortedKeys(ann) {
		w.line(10, k+": "+yq(ann[k]))
	}
}
