package canary

import (
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/alerting"
)

// Metric names follow blackbox_exporter where one exists (probe_*), with the
// labels check, target, tier and region; the series set is bounded by the
// config (one per configured pair, and per phase or state). Per-pair series
// are produced at scrape time from the pairs' latest verdicts, so a removed
// pair's series disappear on reload and an expired verdict shows as unknown.
//
// probe_http_duration_seconds and probe_http_status_code exist for http
// checks (scripts: the status code only), not for tcp and tls checks;
// probe_icmp_duration_seconds (resolve, setup, rtt) for icmp checks.
// probe_http_duration_seconds uses blackbox_exporter's phase names:
// resolve (DNS), connect, tls, processing (TTFB minus resolve, connect and
// tls: the server's wait) and transfer (first byte → body read). With
// follow_redirects resolve, connect and tls are summed over the hops and
// TTFB runs to the last hop's first byte, so processing holds the earlier
// hops' waits, as in blackbox_exporter.
//
// vigil_ttfb_seconds is the last run's time to first byte as the built-in
// TTFB SLO rule reads it from the verdict (Verdict.TTFB), for every check
// kind that has one: http (start of the run → first byte of the final
// response), script (the first main step's that got a response), tcp
// (first byte read); absent while the last run got no first byte, which
// the built-in rule skips too. The generated Prometheus rules
// (vigil:ttfb_seconds) use it where the pair's canaries export no TTFB
// histogram, so a TTFB SLO on a script check works from Prometheus
// although scripts export no probe_http_duration_seconds.
//
// With agent.latency_histograms, vigil_check_duration_seconds and
// vigil_check_ttfb_seconds count every run in the buckets of
// alerting.LatencyBuckets; the generated TTFB rule prefers the TTFB one,
// which sees every run, not the last one at each scrape. The TTFB one
// counts the runs that are TTFB samples (reporting.Verdict.TTFBSample): a
// run that timed out before its first byte is observed at its duration,
// at or above its timeout, so histogram_quantile and the TTFB rule see an
// origin slower than the timeout as slow; runs that failed otherwise
// (refused, DNS, TLS…) are not observed.
//
// probe_ssl_earliest_cert_expiry is the earliest NotAfter of the
// certificates the server presented; probe_ssl_last_chain_expiry_timestamp_seconds
// is, over the verified chains, the latest of each chain's earliest
// NotAfter (absent when nothing was verified: insecure_skip_verify or a
// failed verification). Both as in blackbox_exporter.
var (
	pairLabels  = []string{"check", "target", "tier", "region"}
	descSuccess = prometheus.NewDesc("probe_success",
		"Whether the last run of the check against the target passed (1) or not (0).", pairLabels, nil)
	descDuration = prometheus.NewDesc("probe_duration_seconds",
		"Duration of the last run, seconds.", pairLabels, nil)
	descPhase = prometheus.NewDesc("probe_http_duration_seconds",
		"Duration of the last run's HTTP phases (resolve, connect, tls, processing, transfer), seconds.",
		append(append([]string{}, pairLabels...), "phase"), nil)
	descICMPPhase = prometheus.NewDesc("probe_icmp_duration_seconds",
		"Duration of the last ping's phases (resolve, setup, rtt), seconds.",
		append(append([]string{}, pairLabels...), "phase"), nil)
	descTTFB = prometheus.NewDesc("vigil_ttfb_seconds",
		"Time to first byte of the last run (http, script, tcp checks; absent when the run got no first byte), seconds.", pairLabels, nil)
	descStatus = prometheus.NewDesc("probe_http_status_code",
		"HTTP status code of the last run (0 when none).", pairLabels, nil)
	descHTTPVersion = prometheus.NewDesc("probe_http_version",
		"HTTP version of the last run's answer (1.1, 2), when the run got one.", pairLabels, nil)
	descCertExpiry = prometheus.NewDesc("probe_ssl_earliest_cert_expiry",
		"Earliest NotAfter of the certificates the server presented (leaf and intermediates) in the last TLS run, Unix seconds.", pairLabels, nil)
	descChainExpiry = prometheus.NewDesc("probe_ssl_last_chain_expiry_timestamp_seconds",
		"Over the verified chains of the last TLS run, the latest of each chain's earliest NotAfter, Unix seconds.", pairLabels, nil)
	descState = prometheus.NewDesc("vigil_verdict_state",
		"1 for the pair's current verdict state (unknown once the verdict expired), 0 for the others.",
		append(append([]string{}, pairLabels...), "state"), nil)
	descStreak = prometheus.NewDesc("vigil_verdict_streak",
		"Consecutive runs with the same pass/fail outcome as the last one.", pairLabels, nil)
	descHeld = prometheus.NewDesc("vigil_verdict_held_until_timestamp_seconds",
		"While flap damping holds the pair unhealthy whatever its runs say: when the hold-down ends, Unix seconds. Absent otherwise.", pairLabels, nil)
	descChecks = prometheus.NewDesc("vigil_checks_total",
		"Runs of the check against the target by result: pass, fail, or slow (failed only a ttfb or duration objective: available, but over the latency objective). A run the agent could not make for its own trouble (cause agent or browser_unavailable) judges no target and is not counted here, only in vigil_check_failures_total.",
		[]string{"check", "target", "region", "result"}, nil)
	descFailures = prometheus.NewDesc("vigil_check_failures_total",
		"Failed runs (fail and slow) of the check against the target by cause, from the closed set (dns, connect_refused, timeout, status, body, ttfb, …): tells timeouts, refusals and wrong answers apart, and runs that could not complete (network, TLS, timeout, browser, internal) from answers an assertion refused; also the runs the agent could not make (agent, browser_unavailable), which vigil_checks_total leaves out. A series appears at the first failure with that cause.",
		[]string{"check", "target", "region", "cause"}, nil)
	descDurHist = prometheus.NewDesc("vigil_check_duration_seconds",
		"Duration of each run of the check against the target, seconds (agent.latency_histograms).",
		[]string{"check", "target", "region"}, nil)
	descTTFBHist = prometheus.NewDesc("vigil_check_ttfb_seconds",
		"Time to first byte of each run that got one, seconds; a run that timed out before its first byte is observed at its duration (at least its timeout) (agent.latency_histograms).",
		[]string{"check", "target", "region"}, nil)
	descSkipped = prometheus.NewDesc("vigil_skipped_runs_total",
		"Scheduled runs skipped because the previous run of the pair was still in flight.",
		[]string{"check", "target", "region"}, nil)
	descPairs = prometheus.NewDesc("vigil_canary_pairs",
		"Configured check × target pairs.", nil, nil)
	descPubDropped = prometheus.NewDesc("vigil_canary_publish_dropped_total",
		"Verdicts dropped because the canary's publish queue to the sink was full.", nil, nil)
)

var allStates = []reporting.State{reporting.StateUnknown, reporting.StateHealthy,
	reporting.StateDegraded, reporting.StateUnhealthy}

type metrics struct {
	c              *Canary
	lag            prometheus.Histogram
	inFlight       prometheus.Gauge
	reloadOK       prometheus.Gauge
	reloadTime     prometheus.Gauge
	publishDropped atomic.Uint64
}

func newMetrics(c *Canary) *metrics {
	m := &metrics{
		c: c,
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_schedule_lag_seconds",
			Help:    "Actual start of a scheduled run minus its planned start (includes waiting for the concurrency limit), seconds.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_runs_in_flight", Help: "Check runs executing now."}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_config_last_reload_successful",
			Help: "1 if the last config reload succeeded (or none was tried), 0 if it failed and the old config runs."}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_config_last_reload_success_timestamp_seconds",
			Help: "When the config was last loaded successfully, Unix seconds."}),
	}
	m.reloadOK.Set(1)
	m.reloadTime.SetToCurrentTime()
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.lag, m.inFlight, m.reloadOK, m.reloadTime, (*pairCollector)(m)}
}

// pairCollector emits the per-pair series from the canary's entries.
type pairCollector metrics

// Describe implements prometheus.Collector.
func (pc *pairCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSuccess, descDuration, descPhase, descICMPPhase, descTTFB, descStatus,
		descCertExpiry, descChainExpiry, descHTTPVersion, descState, descStreak, descHeld, descChecks, descFailures, descDurHist, descTTFBHist, descSkipped, descPairs, descPubDropped} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (pc *pairCollector) Collect(ch chan<- prometheus.Metric) {
	c := pc.c
	now := c.now()
	c.mu.Lock()
	region := c.cfg.Agent.Region
	hists := c.cfg.Agent.LatencyHistograms
	es := make([]*entry, 0, len(c.entries))
	for _, e := range c.entries {
		es = append(es, e)
	}
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descPairs, prometheus.GaugeValue, float64(len(es)))
	ch <- prometheus.MustNewConstMetric(descPubDropped, prometheus.CounterValue, float64(pc.publishDropped.Load()))
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	for _, e := range es {
		p := e.pair.Load()
		check, target, tier := p.Check.Name, p.Target.Name, p.Check.Tier
		ch <- prometheus.MustNewConstMetric(descChecks, prometheus.CounterValue, float64(e.passes.Load()), check, target, region, "pass")
		ch <- prometheus.MustNewConstMetric(descChecks, prometheus.CounterValue, float64(e.fails.Load()), check, target, region, "fail")
		ch <- prometheus.MustNewConstMetric(descChecks, prometheus.CounterValue, float64(e.slows.Load()), check, target, region, "slow")
		for i := range e.failed {
			if n := e.failed[i].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(descFailures, prometheus.CounterValue, float64(n), check, target, region, string(checks.AllCauses[i]))
			}
		}
		if hists {
			ch <- e.dur.metric(descDurHist, check, target, region)
			ch <- e.ttfb.metric(descTTFBHist, check, target, region)
		}
		ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.CounterValue, float64(e.skipped.Load()), check, target, region)
		e.mu.Lock()
		v, has := e.latest, e.has
		certExpiry, chainExpiry := e.certExpiry, e.lastRes.LastChainExpiry
		e.mu.Unlock()
		state := reporting.StateUnknown
		if has {
			state = v.Current(now)
		}
		for _, s := range allStates {
			val := 0.0
			if s == state {
				val = 1
			}
			gauge(descState, val, check, target, tier, region, string(s))
		}
		if !has {
			continue
		}
		gauge(descSuccess, b2f(v.OK), check, target, tier, region)
		gauge(descDuration, v.Duration.Seconds(), check, target, tier, region)
		gauge(descStreak, float64(v.Streak), check, target, tier, region)
		if state == reporting.StateUnhealthy && v.HeldUntil.After(now) {
			gauge(descHeld, float64(v.HeldUntil.Unix()), check, target, tier, region)
		}
		if v.TTFB > 0 {
			gauge(descTTFB, v.TTFB.Seconds(), check, target, tier, region)
		}
		if !certExpiry.IsZero() {
			gauge(descCertExpiry, float64(certExpiry.Unix()), check, target, tier, region)
		}
		if !chainExpiry.IsZero() {
			gauge(descChainExpiry, float64(chainExpiry.Unix()), check, target, tier, region)
		}
		switch p.Check.Kind() {
		case "http":
		case "icmp":
			// As /probe and blackbox_exporter: resolve (DNS), setup (the
			// socket, until the echo request went out) and rtt (until the
			// reply, 0 without one).
			rtt := max(v.TTFB-v.DNS-v.Connect, 0)
			if v.TTFB == 0 {
				rtt = 0
			}
			gauge(descICMPPhase, v.DNS.Seconds(), check, target, tier, region, "resolve")
			gauge(descICMPPhase, v.Connect.Seconds(), check, target, tier, region, "setup")
			gauge(descICMPPhase, rtt.Seconds(), check, target, tier, region, "rtt")
			continue
		case "script":
			gauge(descStatus, float64(v.StatusCode), check, target, tier, region)
			continue
		default: // tcp, tls: no HTTP series, as in blackbox_exporter
			continue
		}
		gauge(descStatus, float64(v.StatusCode), check, target, tier, region)
		if ver, ok := httpVersion(v.Proto); ok {
			gauge(descHTTPVersion, ver, check, target, tier, region)
		}
		processing := max(v.TTFB-v.DNS-v.Connect-v.TLS, 0)
		if v.TTFB == 0 {
			processing = 0
		}
		gauge(descPhase, v.DNS.Seconds(), check, target, tier, region, "resolve")
		gauge(descPhase, v.Connect.Seconds(), check, target, tier, region, "connect")
		gauge(descPhase, v.TLS.Seconds(), check, target, tier, region, "tls")
		gauge(descPhase, processing.Seconds(), check, target, tier, region, "processing")
		gauge(descPhase, v.Transfer.Seconds(), check, target, tier, region, "transfer")
	}
}

// httpVersion maps "HTTP/1.1" to 1.1 and "HTTP/2.0" to 2, as
// blackbox_exporter's probe_http_version does.
func httpVersion(proto string) (float64, bool) {
	var major, minor int
	if _, err := fmt.Sscanf(proto, "HTTP/%d.%d", &major, &minor); err != nil || major < 1 || minor < 0 || minor > 9 {
		return 0, false
	}
	return float64(major) + float64(minor)/10, true
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// causeIndex maps each cause to its place in checks.AllCauses (the index of
// an entry's failure counters).
var causeIndex = func() map[checks.Cause]int {
	m := make(map[checks.Cause]int, len(checks.AllCauses))
	for i, c := range checks.AllCauses {
		m[c] = i
	}
	return m
}()

// latencyBuckets are the upper bounds of the latency histograms, seconds:
// from a loopback health check to a slow browser transaction, with the
// usual latency objectives as bounds. They are alerting.LatencyBuckets,
// which the generated Prometheus TTFB rule is built on.
var latencyBuckets = alerting.LatencyBuckets

// latencyHist is one pair's latency histogram, lock-free: a count per
// bucket (the last one past every bound) and the sum in µs.
type latencyHist struct {
	counts [len(latencyBuckets) + 1]atomic.Uint64
	sumUS  atomic.Uint64
}

func (h *latencyHist) observe(d time.Duration) {
	s := d.Seconds()
	i := sort.SearchFloat64s(latencyBuckets[:], s)
	h.counts[i].Add(1)
	h.sumUS.Add(uint64(max(d.Microseconds(), 0)))
}

// metric is the histogram as Prometheus reads it (cumulative buckets).
func (h *latencyHist) metric(d *prometheus.Desc, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(latencyBuckets))
	var cum uint64
	for i, ub := range latencyBuckets {
		cum += h.counts[i].Load()
		buckets[ub] = cum
	}
	count := cum + h.counts[len(latencyBuckets)].Load()
	return prometheus.MustNewConstHistogram(d, count, float64(h.sumUS.Load())/1e6, buckets, labels...)
}
