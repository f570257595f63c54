package canary

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
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
	c       *Canary
	cfg     TriggerConfig
	tiers   map[string]bool
	window  map[string][]reporting.Signal // origin → signals within cfg.For
	last    map[pairRef]time.Time         // last trigger per pair
	counter *prometheus.CounterVec
}

func newSignalWatch(c *Canary, cfg TriggerConfig) *signalWatch {
	w := &signalWatch{c: c, cfg: cfg, tiers: map[string]bool{}, window: map[string][]reporting.Signal{},
		last: map[pairRef]time.Time{}}
	for _, t := range cfg.Tiers {
		w.tiers[t] = true
	}
	w.counter = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_passive_triggers_total",
		Help: "Out-of-cycle check runs started because live traffic showed the origin degrading, by reason.",
	}, []string{"target", "reason"})
	if err := c.reg.Register(w.counter); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			w.counter = are.ExistingCollector.(*prometheus.CounterVec)
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
		reason := w.degraded(keep)
		if reason == "" {
			continue
		}
		for _, p := range w.pairsOf(origin) {
			if last, ok := w.last[p]; ok && now.Sub(last) < w.cfg.MinGap {
				continue
			}
			w.last[p] = now
			w.counter.WithLabelValues(origin, reason).Inc()
			w.c.log.Info("live traffic degraded: running check out of cycle",
				slog.String("check", p.check), slog.String("target", origin), slog.String("reason", reason))
			out = append(out, p)
		}
	}
	return out
}

// degraded names why the origin's recent traffic calls for a check, or "".
func (w *signalWatch) degraded(list []reporting.Signal) string {
	var req, bad int
	latest := list[0]
	for _, s := range list {
		req += s.Requests
		bad += s.Status5xx + s.ConnErrors + s.Timeouts
		if s.At.After(latest.At) {
			latest = s
		}
	}
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
