package canary

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// TriggerConfig is `agent.triggers`: when the proxy's live traffic shows an
// origin degrading, the canary runs that origin's deep and synthetic checks
// at once instead of waiting for their next slot.
type TriggerConfig struct {
	// Disabled turns passive triggers off (default false).
	Disabled bool `mapstructure:"disabled"`
	// FailureRate is the share of failed requests (5xx, connection errors,
	// timeouts) over For that triggers the checks (default 1%).
	FailureRate *units.Percent `mapstructure:"failure_rate"`
	// For is the window the failure rate is measured over (default 60s).
	For time.Duration `mapstructure:"for"`
	// MinRequests is the fewest requests in the window for the rate to
	// count (default 20).
	MinRequests int `mapstructure:"min_requests"`
	// MinGap is the least time between two triggered runs of one check ×
	// target (default 30s): a rate limit, so a degraded origin is not
	// hammered by its own canary.
	MinGap time.Duration `mapstructure:"min_gap"`
	// Tiers are the tiers of the checks that run (default deep, synthetic).
	Tiers []string `mapstructure:"tiers"`
	// Poll is how often the canary reads new signals (default 5s).
	Poll time.Duration `mapstructure:"poll"`
}

// ValidateAndSetDefaults fills the trigger defaults.
func (t *TriggerConfig) ValidateAndSetDefaults() error {
	var errs []error
	if t.FailureRate == nil {
		p := units.Percent(1)
		t.FailureRate = &p
	}
	if t.For == 0 {
		t.For = 60 * time.Second
	}
	if t.MinRequests == 0 {
		t.MinRequests = 20
	}
	if t.MinGap == 0 {
		t.MinGap = 30 * time.Second
	}
	if t.Poll == 0 {
		t.Poll = 5 * time.Second
	}
	if len(t.Tiers) == 0 {
		t.Tiers = []string{reporting.TierDeep, reporting.TierSynthetic}
	}
	for i, tier := range t.Tiers {
		switch tier {
		case reporting.TierShallow, reporting.TierDeep, reporting.TierSynthetic:
		default:
			errs = append(errs, fmt.Errorf("tiers[%d]: %q: want shallow, deep or synthetic", i, tier))
		}
	}
	for k, d := range map[string]time.Duration{"for": t.For, "min_gap": t.MinGap, "poll": t.Poll} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s: must be positive, got %s", k, d))
		}
	}
	if t.MinRequests < 0 {
		errs = append(errs, fmt.Errorf("min_requests: must be positive, got %d", t.MinRequests))
	}
	return errors.Join(errs...)
}

// WatchSignals reads the proxy's passive observations from src until ctx
// ends and, when an origin's failure rate over cfg.For reaches
// cfg.FailureRate (with at least cfg.MinRequests requests) or the proxy's
// passive detector ejected it (consecutive failures, outlier, latency p95),
// runs that origin's checks of cfg.Tiers out of cycle, each at most once per
// cfg.MinGap. A triggered run that fails on a healthy pair makes the state
// machine confirm sooner (interval/4), so the interval stays tight until the
// verdict settles. cfg must have passed ValidateAndSetDefaults.
func (c *Canary) WatchSignals(ctx context.Context, src reporting.SignalSource, cfg TriggerConfig) error {
	if cfg.Disabled || src == nil {
		return nil
	}
	w := newSignalWatch(c, cfg)
	t := time.NewTicker(cfg.Poll)
	defer t.Stop()
	since := c.now().Add(-cfg.For)
	var wg sync.WaitGroup
	defer wg.Wait()
	var readLog failureLog
	for {
		sigs, err := src.Signals(ctx, since)
		if err == nil || ctx.Err() == nil {
			readLog.record(c.log, c.now(), "passive triggers: reading signals", err)
		}
		for _, s := range sigs {
			if s.At.After(since) {
				since = s.At
			}
		}
		for _, pt := range w.observe(c.now(), sigs) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if r := recover(); r != nil {
						c.log.Error("passive trigger panicked", "panic", r, "stack", string(debug.Stack()))
					}
				}()
				if _, err := c.TriggerContext(ctx, pt.check, pt.target); err != nil && ctx.Err() == nil {
					c.log.Warn("passive trigger failed", "check", pt.check, "target", pt.target, "error", err)
				}
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// failureLogEvery is the least time between two log lines about the same
// run of failures (the first is logged at once).
const failureLogEvery = time.Minute

// failureLog logs a repeated operation's failures without a line per try:
// the first failure, then at most one line per failureLogEvery saying how
// many were left out (suppressed), and one line when it works again. The
// zero value is ready; not safe for concurrent use.
type failureLog struct {
	failures   int       // in a row
	suppressed int       // failures not logged since the last line
	since      time.Time // of the first failure in a row
	last       time.Time // of the last line
}

// record notes one try of what (e.g. "passive triggers: reading signals")
// at now: err nil when it worked.
func (l *failureLog) record(log *slog.Logger, now time.Time, what string, err error) {
	switch {
	case err == nil && l.failures > 0:
		log.Info(what+" recovered", "failures", l.failures, "failed_for", now.Sub(l.since).Round(time.Second).String())
		*l = failureLog{}
	case err == nil:
	case l.failures == 0:
		l.failures, l.since, l.last = 1, now, now
		log.Warn(what+" failed", "error", err)
	default:
		l.failures++
		if now.Sub(l.last) < failureLogEvery {
			l.suppressed++
			return
		}
		log.Warn(what+" failed", "error", err, "failures", l.failures, "suppressed", l.suppressed,
			"failing_for", now.Sub(l.since).Round(time.Second).String())
		l.suppressed, l.last = 0, now
	}
}

type pairRef struct{ check, target string }

// signalWatch keeps the recent signals per origin and decides which pairs
// to trigger.
type signalWatch struct {
	c        *Canary
	cfg      TriggerConfig
	tiers    map[string]bool
	window   map[string][]reporting.Signal // origin → signals within cfg.For
	last     map[pairRef]time.Time         // last trigger per pair
	episodes map[string]*triggerEpisode    // origin → its degradation now triggering checks
	counter  *triggerCounter
	// uncovered is when each pool × origin was last warned about as
	// degraded with no check of the watched tiers to run (uncoveredKey).
	uncovered map[string]time.Time
}

// uncoveredWarnEvery is the least time between two warnings that a pool ×
// origin's live traffic degrades with no check of the watched tiers
// covering it.
const uncoveredWarnEvery = 10 * time.Minute

// triggerEpisode is one stretch of an origin's live traffic calling for
// checks: logged once when it starts (naming the checks it ran) and once
// when it ends, not at every triggered run (every min_gap for as long as an
// origin stays ejected).
type triggerEpisode struct {
	reason string
	since  time.Time
	clear  time.Time // when the condition stopped holding; zero while it holds
	runs   int       // triggered runs
}

// triggerCounter is vigil_passive_triggers_total. Its series are labelled
// by target: at each scrape it first deletes those of targets a reload
// removed from the config, as the per-pair series, made at scrape time
// from the configured pairs, disappear with their pair.
type triggerCounter struct {
	vec     *prometheus.CounterVec
	mu      sync.Mutex
	c       *Canary
	targets map[string]bool // with a series
}

func (t *triggerCounter) inc(target, reason string) {
	t.mu.Lock()
	t.targets[target] = true
	t.vec.WithLabelValues(target, reason).Inc()
	t.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (t *triggerCounter) Describe(ch chan<- *prometheus.Desc) { t.vec.Describe(ch) }

// Collect implements prometheus.Collector.
func (t *triggerCounter) Collect(ch chan<- prometheus.Metric) {
	t.mu.Lock()
	if len(t.targets) > 0 {
		conf := t.c.configuredTargets()
		for target := range t.targets {
			if !conf[target] {
				t.vec.DeletePartialMatch(prometheus.Labels{"target": target})
				delete(t.targets, target)
			}
		}
	}
	t.mu.Unlock()
	t.vec.Collect(ch)
}

// configuredTargets returns the targets of the configured pairs.
func (c *Canary) configuredTargets() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	for k := range c.byName {
		out[k[1]] = true
	}
	return out
}

func newSignalWatch(c *Canary, cfg TriggerConfig) *signalWatch {
	w := &signalWatch{c: c, cfg: cfg, tiers: map[string]bool{}, window: map[string][]reporting.Signal{},
		last: map[pairRef]time.Time{}, episodes: map[string]*triggerEpisode{}, uncovered: map[string]time.Time{}}
	for _, t := range cfg.Tiers {
		w.tiers[t] = true
	}
	w.counter = &triggerCounter{c: c, targets: map[string]bool{}, vec: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_passive_triggers_total",
		Help: "Out-of-cycle check runs started because live traffic showed the origin degrading, by reason. A target's series are removed when a reload removes the target.",
	}, []string{"target", "reason"})}
	if err := c.reg.Register(w.counter); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if tc, ok := are.ExistingCollector.(*triggerCounter); ok {
				tc.mu.Lock()
				tc.c = c
				tc.mu.Unlock()
				w.counter = tc
			}
		}
	}
	return w
}

// observe adds signals and returns the pairs to run now.
func (w *signalWatch) observe(now time.Time, sigs []reporting.Signal) []pairRef {
	for _, s := range sigs {
		if s.Origin != "" {
			w.window[s.Origin] = append(w.window[s.Origin], s)
		}
	}
	w.forgetRemoved(now)
	var out []pairRef
	for origin, list := range w.window {
		// Keep the signals whose window ends within cfg.For.
		keep := list[:0]
		for _, s := range list {
			if now.Sub(s.At) <= w.cfg.For {
				keep = append(keep, s)
			}
		}
		w.window[origin] = keep
		if len(keep) == 0 {
			delete(w.window, origin)
			continue
		}
		ep := w.episodes[origin]
		reason := w.degraded(keep)
		if reason == "" {
			if ep != nil && ep.clear.IsZero() {
				ep.clear = now
			}
			continue
		}
		pairs := w.pairsOf(origin)
		if len(pairs) == 0 {
			w.warnUncovered(now, origin, keep, reason)
			if ep != nil {
				w.endEpisode(origin, ep, now, "no check of the watched tiers is configured for it")
			}
			continue
		}
		var started []string
		for _, p := range pairs {
			if last, ok := w.last[p]; ok && now.Sub(last) < w.cfg.MinGap {
				continue
			}
			w.last[p] = now
			w.counter.inc(origin, reason)
			started = append(started, p.check)
			out = append(out, p)
		}
		if ep == nil {
			ep = &triggerEpisode{reason: reason, since: now}
			w.episodes[origin] = ep
			sort.Strings(started)
			// check lists the checks run, comma-separated; they run again
			// every min_gap while the episode lasts, without a line.
			w.c.log.Info("live traffic degraded: running check out of cycle",
				slog.String("check", strings.Join(started, ",")), slog.String("target", origin),
				slog.String("reason", reason), slog.String("min_gap", w.cfg.MinGap.String()))
		}
		ep.clear = time.Time{}
		ep.runs += len(started)
	}
	// An episode ends once its origin's traffic has been fine (or absent)
	// for min_gap: traffic hovering at the threshold makes one episode,
	// not two lines per poll.
	for origin, ep := range w.episodes {
		if _, ok := w.window[origin]; !ok && ep.clear.IsZero() {
			ep.clear = now
		}
		if !ep.clear.IsZero() && now.Sub(ep.clear) >= w.cfg.MinGap {
			w.endEpisode(origin, ep, now, "")
		}
	}
	return out
}

// endEpisode logs the end of an origin's trigger episode and forgets it.
func (w *signalWatch) endEpisode(origin string, ep *triggerEpisode, now time.Time, why string) {
	attrs := []any{slog.String("target", origin), slog.String("reason", ep.reason), slog.Int("runs", ep.runs),
		slog.String("lasted", now.Sub(ep.since).Round(time.Second).String())}
	if why != "" {
		attrs = append(attrs, slog.String("why", why))
	}
	w.c.log.Info("live traffic recovered: no more checks out of cycle", attrs...)
	delete(w.episodes, origin)
}

// forgetRemoved forgets the last trigger of pairs a reload removed, and
// ends the episodes of targets it removed: a pair added back starts afresh.
func (w *signalWatch) forgetRemoved(now time.Time) {
	if len(w.last) == 0 && len(w.episodes) == 0 {
		return
	}
	targets := map[string]bool{}
	w.c.mu.Lock()
	for p := range w.last {
		if w.c.byName[[2]string{p.check, p.target}] == nil {
			delete(w.last, p)
		}
	}
	if len(w.episodes) > 0 {
		for k := range w.c.byName {
			targets[k[1]] = true
		}
	}
	w.c.mu.Unlock()
	for origin, ep := range w.episodes {
		if !targets[origin] {
			w.endEpisode(origin, ep, now, "the target left the config")
		}
	}
}

// warnUncovered logs, at most once per pool × origin per
// uncoveredWarnEvery, that the origin's live traffic degrades (reason, as
// degraded gives it, over its signals list) and no check of the watched
// tiers covers it: nothing runs out of cycle, and only such a check
// (one that fetches what users fetch) can see what they get.
func (w *signalWatch) warnUncovered(now time.Time, origin string, list []reporting.Signal, reason string) {
	pools := map[string]bool{}
	for _, s := range list {
		pools[s.Pool] = true
	}
	why := w.degradedText(list, reason)
	tiers := strings.Join(w.cfg.Tiers, " or ")
	for _, pool := range slices.Sorted(maps.Keys(pools)) {
		k := pool + "\x00" + origin
		if last, ok := w.uncovered[k]; ok && now.Sub(last) < uncoveredWarnEvery {
			continue
		}
		w.uncovered[k] = now
		attrs := []any{slog.String("pool", pool), slog.String("target", origin), slog.String("reason", reason),
			slog.String("tiers", strings.Join(w.cfg.Tiers, ","))}
		if others := w.checksOf(origin); others != "" {
			attrs = append(attrs, slog.String("other_checks", others))
		}
		w.c.log.Warn(fmt.Sprintf("live traffic degraded on pool %s origin %s (%s) but no %s check covers %s: "+
			"only %s checks are triggered; add one (tier: %s) that fetches what users fetch",
			pool, origin, why, tiers, origin, strings.Join(w.cfg.Tiers, " and "), w.cfg.Tiers[0]), attrs...)
	}
	for k, last := range w.uncovered {
		if now.Sub(last) >= uncoveredWarnEvery {
			delete(w.uncovered, k)
		}
	}
}

// degradedText says what degraded found: "ejected by the proxy's passive
// detector: consecutive_5xx", "12% of 250 requests failed over 1m0s".
func (w *signalWatch) degradedText(list []reporting.Signal, reason string) string {
	req, bad, latest := sumSignals(list)
	if reason == "ejected" {
		if latest.Reason != "" {
			return "ejected by the proxy's passive detector: " + latest.Reason
		}
		return "ejected by the proxy's passive detector"
	}
	return fmt.Sprintf("%d of %d requests failed over %s", bad, req, w.cfg.For)
}

// checksOf lists the configured checks of target with their tiers,
// "healthz (shallow), …" ("" when none).
func (w *signalWatch) checksOf(target string) string {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	var out []string
	for k, e := range w.c.byName {
		if k[1] != target {
			continue
		}
		if p := e.pair.Load(); p != nil {
			out = append(out, k[0]+" ("+p.Check.Tier+")")
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// sumSignals sums an origin's signals' requests and failures (5xx,
// connection errors, timeouts) and returns the newest signal.
func sumSignals(list []reporting.Signal) (req, bad int, latest reporting.Signal) {
	latest = list[0]
	for _, s := range list {
		req += s.Requests
		bad += s.Status5xx + s.ConnErrors + s.Timeouts
		if s.At.After(latest.At) {
			latest = s
		}
	}
	return req, bad, latest
}

// degraded names why the origin's recent traffic calls for a check, or "".
func (w *signalWatch) degraded(list []reporting.Signal) string {
	req, bad, latest := sumSignals(list)
	if latest.Ejected {
		return "ejected"
	}
	if req >= w.cfg.MinRequests && req > 0 && float64(bad)/float64(req) >= w.cfg.FailureRate.Fraction() {
		return "failure_rate"
	}
	return ""
}

// pairsOf lists the configured pairs of the watched tiers for a target.
func (w *signalWatch) pairsOf(target string) []pairRef {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	var out []pairRef
	for k, e := range w.c.byName {
		if k[1] != target {
			continue
		}
		if p := e.pair.Load(); p != nil && w.tiers[p.Check.Tier] {
			out = append(out, pairRef{k[0], k[1]})
		}
	}
	return out
}
