package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-synthetics/vigil/checks/grpchealth"
)

// Ejection reasons (the `reason` label of vigil_proxy_ejections_total).
const (
	ReasonConsecutive5xx = "consecutive_5xx"
	ReasonFailureRate    = "failure_rate"
	ReasonSuccessRate    = "success_rate"
	ReasonLatencyP95     = "latency_p95"
	ReasonVerdict        = "verdict"
)

var ejectionReasons = []string{ReasonConsecutive5xx, ReasonFailureRate, ReasonSuccessRate, ReasonLatencyP95, ReasonVerdict}

// minOutlierGap is the least gap (in success-rate points, 0..1) below the
// pool median before the success-rate rule ejects, so that tiny spreads
// (99.9% against 100%) never eject.
const minOutlierGap = 0.05

// latency histogram: bucket k holds latencies up to 0.5ms × 1.25^k.
const (
	latBuckets = 64
	latBase    = 500 * time.Microsecond
)

var latLogStep = math.Log(1.25)

func latBucket(d time.Duration) int {
	if d <= latBase {
		return 0
	}
	k := int(math.Ceil(math.Log(float64(d)/float64(latBase)) / latLogStep))
	return min(k, latBuckets-1)
}

func latUpper(k int) time.Duration {
	return time.Duration(float64(latBase) * math.Pow(1.25, float64(k)))
}

// quantile returns the upper bound of the bucket holding quantile q.
func quantile(h *[latBuckets]uint32, q float64) time.Duration {
	var n uint64
	for _, c := range h {
		n += uint64(c)
	}
	if n == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(n)))
	var acc uint64
	for k, c := range h {
		acc += uint64(c)
		if acc >= want {
			return latUpper(k)
		}
	}
	return latUpper(latBuckets - 1)
}

// detector holds one origin's passive observations: a consecutive-failure
// counter and a sliding window of 10 buckets.
type detector struct {
	consecutive atomic.Int64
	// lastFail is when the latest failed try ended (unix nanos; 0: none
	// yet). It survives reset: the ejection count decays only over periods
	// without one.
	lastFail atomic.Int64
	// refusedLogged is set while an incident in which max_ejected refuses
	// to eject the origin has been logged; evaluate clears it once the
	// origin is no longer failing, eject once it is ejected.
	refusedLogged atomic.Bool
	// run counts the failures of the current consecutive run by cause
	// (retryCauses' order, then failures of no known cause).
	run [runSlots]atomic.Int32

	mu      sync.Mutex
	width   int64 // bucket width, nanos
	buckets [10]passiveBucket
}

type passiveBucket struct {
	epoch     int64
	req, fail uint32
	lat       [latBuckets]uint32
}

func newDetector(window time.Duration) *detector {
	return &detector{width: max(int64(window)/10, 1)}
}

// record adds one finished try at now (unix nanos); it returns lat's
// latency bucket.
func (d *detector) record(now int64, failed bool, lat time.Duration) int {
	k := latBucket(lat)
	e := now / d.width
	d.mu.Lock()
	b := &d.buckets[e%10]
	if b.epoch != e {
		*b = passiveBucket{epoch: e}
	}
	b.req++
	if failed {
		b.fail++
	}
	b.lat[k]++
	d.mu.Unlock()
	return k
}

// recentBuckets is how many of the window's 10 buckets (the current one and
// the one before) the window rules look at to tell an origin failing now from
// one that recovered with failures still in its window.
const recentBuckets = 2

// windowSums are a detector's sums over its window.
type windowSums struct {
	req, fail int
	p95       time.Duration
	// recentFail and recentSlow count the failed tries, and the answers
	// slower than the slow bound given, in the last recentBuckets buckets.
	recentFail, recentSlow int
}

// window sums the buckets of the last window at now. An answer is slow when
// its latency bucket lies above slow (as the p95 compared with latency_p95).
func (d *detector) window(now int64, slow time.Duration) (s windowSums) {
	e := now / d.width
	var h [latBuckets]uint32
	d.mu.Lock()
	for i := range d.buckets {
		b := &d.buckets[i]
		if b.epoch <= e-10 || b.epoch > e {
			continue
		}
		s.req += int(b.req)
		s.fail += int(b.fail)
		recent := b.epoch > e-recentBuckets
		if recent {
			s.recentFail += int(b.fail)
		}
		for k, c := range b.lat {
			h[k] += c
			if recent && c != 0 && slow > 0 && latUpper(k) > slow {
				s.recentSlow += int(c)
			}
		}
	}
	d.mu.Unlock()
	s.p95 = quantile(&h, 0.95)
	return s
}

func (d *detector) reset() {
	d.consecutive.Store(0)
	d.clearRun()
	d.mu.Lock()
	d.buckets = [10]passiveBucket{}
	d.mu.Unlock()
}

// observe records one try's outcome on o and applies the consecutive rule
// inline. failed is true for 5xx answers, connection errors, timeouts and
// bodies that broke after their head. lat is the time to the answer's head.
// A failure recorded here has no known cause; observeCause names it.
func (p *pool) observe(o *origin, failed bool, lat time.Duration, now int64) {
	cause := ""
	if failed {
		cause = causeUnknown
	}
	p.observeCause(o, cause, lat, now)
}

// observeCause is observe with the failed try's cause (a Cause* constant;
// "" for a success): the consecutive rule's ejection detail then says what
// failed, "5 consecutive failed tries (3 timeout, 2 status_5xx)".
func (p *pool) observeCause(o *origin, cause string, lat time.Duration, now int64) {
	failed := cause != ""
	o.stats.lat[o.passive.record(now, failed, lat)].Add(1) // the signals' p95
	if !failed {
		if o.passive.consecutive.Load() != 0 {
			o.passive.consecutive.Store(0)
			o.passive.clearRun()
		}
		return
	}
	o.passive.lastFail.Store(now)
	o.passive.run[runIndex(cause)].Add(1)
	n := o.passive.consecutive.Add(1)
	if c := p.cfg.Passive.Consecutive5xx; c > 0 && n >= int64(c) && !o.has(flagPassive) {
		p.eject(o, ReasonConsecutive5xx, time.Unix(0, now), func() string {
			return fmt.Sprintf("%d consecutive failed tries (%s), consecutive_5xx %d", n, o.passive.runCauses(), c)
		})
	}
}

// causeUnknown is the cause of a failure observe records without one.
const causeUnknown = "unknown"

// runSlots is the size of detector.run: a slot per retry cause (their
// index in retryCauses), and the last for failures of no known cause.
const runSlots = 16

// runIndex is cause's slot in detector.run.
func runIndex(cause string) int {
	for i, c := range retryCauses {
		if c == cause && i < runSlots-1 {
			return i
		}
	}
	return runSlots - 1
}

// clearRun zeroes the per-cause counts of the consecutive run.
func (d *detector) clearRun() {
	for i := range d.run {
		if d.run[i].Load() != 0 {
			d.run[i].Store(0)
		}
	}
}

// runCauses says what failed in the current consecutive run, by cause:
// "3 timeout, 2 status_5xx"; failures of no known cause count as "other",
// and a run of those only reads "5xx, connection error or timeout". Under
// concurrent tries the counts are approximate.
func (d *detector) runCauses() string {
	var b strings.Builder
	for i := range d.run {
		v := d.run[i].Load()
		if v == 0 {
			continue
		}
		name := "other"
		if i < runSlots-1 && i < len(retryCauses) {
			name = retryCauses[i]
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", v, name)
	}
	if b.Len() == 0 || d.onlyUnknown() {
		return "5xx, connection error or timeout"
	}
	return b.String()
}

func (d *detector) onlyUnknown() bool {
	for i := range runSlots - 1 {
		if d.run[i].Load() != 0 {
			return false
		}
	}
	return true
}

// ejectedCount counts the origins verdicts or passive detection hold out,
// drained ones aside: a drain is an operator decision, neither capped nor
// counted against max_ejected. Caller holds p.mu.
func (p *pool) ejectedCount() int {
	n := 0
	for _, o := range p.origins {
		if f := o.flags.Load(); f&flagDrained == 0 && f&(flagVerdict|flagPassive) != 0 {
			n++
		}
	}
	return n
}

// allowedEjected is how many origins max_ejected lets verdicts and passive
// detection hold out: its share of the origins not drained, rounded down.
// With all but one origin drained, that one is never ejected (below 100%).
// Caller holds p.mu.
func (p *pool) allowedEjected() int {
	n := 0
	for _, o := range p.origins {
		if !o.has(flagDrained) {
			n++
		}
	}
	return int(math.Floor(p.cfg.MaxEjected.Fraction()*float64(n) + 1e-9))
}

// mayEject reports whether o can be taken out without exceeding max_ejected.
// A drained origin always can: it does not count (undraining it re-applies
// the cap, see fitCap). Caller holds p.mu.
func (p *pool) mayEject(o *origin) bool {
	if o.flags.Load() != 0 {
		return true // drained, or already counted
	}
	return p.ejectedCount() < p.allowedEjected()
}

// yieldPassive ends, early, the passive ejection of an origin that only
// passive detection holds out (the one due back first), so that a verdict
// ejection max_ejected refuses can take its place: verdicts outrank the
// passive rules, which a client can trigger (a URL that answers 5xx).
// It returns that origin and the rule that had ejected it, or nil when no
// such origin holds a place. Caller holds p.mu, and calls returnedEarly
// after releasing it.
func (p *pool) yieldPassive(now time.Time) (*origin, string) {
	var pick *origin
	var until time.Time
	for _, o := range p.origins {
		if o.flags.Load() != flagPassive {
			continue
		}
		o.mu.Lock()
		u := o.ejectUntil
		o.mu.Unlock()
		if pick == nil || u.Before(until) {
			pick, until = o, u
		}
	}
	if pick == nil {
		return nil, ""
	}
	pick.mu.Lock()
	rule := pick.why[bit(flagPassive)]
	pick.mu.Unlock()
	if !pick.clear(flagPassive, now) {
		return nil, "" // its ejection ended meanwhile: mayEject sees the room
	}
	return pick, rule
}

// capReturn is an origin fitCap returned to service, and what held it out.
type capReturn struct {
	o                *origin
	passive, verdict string // the passive rule, the verdict reason ("": not held by it)
}

// fitCap returns origins to service until verdicts and passive detection
// hold out no more than max_ejected allows, after a drain or an undrain
// changed the origins it counts from: passively ejected origins first (the
// one due back first), then the origin taken out last. An origin returned
// from a verdict ejection shows as kept in service by max_ejected, as one
// the cap refused. Caller holds p.mu, and calls capReturned after
// releasing it.
func (p *pool) fitCap(now time.Time) []capReturn {
	var out []capReturn
	for range p.origins {
		if p.ejectedCount() <= p.allowedEjected() {
			break
		}
		if o, rule := p.yieldPassive(now); o != nil {
			out = append(out, capReturn{o: o, passive: rule})
			continue
		}
		var pick *origin
		var since time.Time
		for _, o := range p.origins {
			f := o.flags.Load()
			if f&flagDrained != 0 || f&(flagVerdict|flagPassive) == 0 {
				continue
			}
			o.mu.Lock()
			s := o.since[bit(flagVerdict)]
			if f&flagPassive != 0 && o.since[bit(flagPassive)].After(s) {
				s = o.since[bit(flagPassive)]
			}
			o.mu.Unlock()
			if pick == nil || s.After(since) {
				pick, since = o, s
			}
		}
		if pick == nil {
			break
		}
		r := capReturn{o: pick}
		pick.mu.Lock()
		if pick.has(flagPassive) {
			r.passive = pick.why[bit(flagPassive)]
		}
		if pick.has(flagVerdict) {
			r.verdict = pick.why[bit(flagVerdict)]
		}
		pick.mu.Unlock()
		if pick.clear(flagVerdict, now) {
			pick.mu.Lock()
			pick.verdictSeen = r.verdict // shown as ejection_refused until the verdict clears
			pick.tookSlot = ""
			pick.mu.Unlock()
		}
		pick.clear(flagPassive, now)
		out = append(out, r)
	}
	return out
}

// capReturned finishes and logs the returns fitCap made; cause says what
// changed the cap ("drain of o1").
func (p *pool) capReturned(rs []capReturn, now time.Time, cause string) {
	for _, r := range rs {
		if r.passive != "" {
			p.returnedEarly(r.o, now)
		}
		r.o.m.available.Set(b2f(r.o.Available()))
		attrs := []any{"pool", p.name, "origin", r.o.name, "cause", cause, "max_ejected", p.cfg.MaxEjected.String()}
		if r.passive != "" {
			attrs = append(attrs, "passive", r.passive)
		}
		if r.verdict != "" {
			attrs = append(attrs, "verdicts", r.verdict)
		}
		if !r.o.Available() {
			attrs = append(attrs, "still", r.o.stillOut())
		}
		p.log.Warn("proxy: origin returned early: max_ejected counts from the origins not drained", attrs...)
	}
}

// returnedEarly finishes the passive ejection of o that yieldPassive or
// fitCap ended (its flag is already clear): o starts afresh, as after a
// return at ejected_until.
func (p *pool) returnedEarly(o *origin, now time.Time) {
	o.passive.reset()
	o.passive.refusedLogged.Store(false)
	o.mu.Lock()
	o.lastDecay = now
	o.probeFails = 0
	o.mu.Unlock()
	o.m.available.Set(b2f(o.Available()))
}

// eject takes o out passively for n × ejection (capped), unless max_ejected
// forbids it. detailf gives the numbers that triggered the rule ("failure
// rate 42% (21 of 50 requests in 10s) ≥ 30%"): /api/v1/origins and the log
// show it beside the rule's name. It is a function, called only when the
// text is used: observe calls eject on every failed try while max_ejected
// refuses (the only origin answering 5xx), and that must not allocate.
func (p *pool) eject(o *origin, reason string, now time.Time, detailf func() string) {
	p.mu.Lock()
	if o.has(flagPassive) {
		p.mu.Unlock()
		return
	}
	if !p.mayEject(o) {
		p.mu.Unlock()
		if c := o.m.ejectRefused[reason]; c != nil {
			c.Inc()
		}
		if o.passive.refusedLogged.CompareAndSwap(false, true) {
			detail := detailf()
			o.mu.Lock()
			o.passiveKept = reason + " (" + detail + ")"
			o.mu.Unlock()
			p.log.Warn("proxy: ejection refused by max_ejected", "pool", p.name, "origin", o.name, "reason", reason, "detail", detail, "max_ejected", p.cfg.MaxEjected.String())
		}
		return
	}
	detail := detailf()
	o.mu.Lock()
	o.ejections++
	d := min(time.Duration(o.ejections)*p.cfg.Passive.Ejection, p.cfg.Passive.MaxEjection)
	o.ejectUntil = now.Add(d)
	o.lastDecay = now
	count := o.ejections
	o.ejectDetail = detail
	o.mu.Unlock()
	changed := o.set(flagPassive, reason, now)
	p.mu.Unlock()
	if !changed {
		return
	}
	takenOutNow(o) // cut the tries waiting at it (ejectcut.go)
	o.passive.reset()
	o.passive.refusedLogged.Store(false)
	o.mu.Lock()
	o.passiveKept = ""
	o.mu.Unlock()
	o.m.ejections[reason].Inc()
	o.m.available.Set(0)
	p.log.Warn("proxy: origin ejected", "pool", p.name, "origin", o.name, "reason", reason, "detail", detail, "for", d, "ejections", count)
}

// evaluate is evaluateCtx without a context to end return probes.
func (p *pool) evaluate(now time.Time) { p.evaluateCtx(context.Background(), now) }

// evaluateCtx runs the window rules, returns origins whose ejection ended
// (after a return probe, which ctx ends) and decays ejection counts. It runs
// on a ticker from Run.
func (p *pool) evaluateCtx(ctx context.Context, now time.Time) {
	cfg := &p.cfg.Passive
	ns := now.UnixNano()
	type rate struct {
		o         *origin
		rate      float64
		req, fail int
		recent    bool // a failed try in the last recentBuckets buckets
	}
	var rates []rate
	for _, o := range p.origins {
		o.decay(now, cfg.Ejection)
		if o.has(flagPassive) {
			o.mu.Lock()
			done := !now.Before(o.ejectUntil)
			o.mu.Unlock()
			switch {
			case !done:
			case cfg.probing():
				if o.link.probing.CompareAndSwap(false, true) {
					go p.returnProbe(ctx, o, now)
				}
			default:
				p.endEjection(o, now, "")
			}
			continue
		}
		w := o.passive.window(ns, cfg.LatencyP95)
		req, fail, p95 := w.req, w.fail, w.p95
		if w.recentFail == 0 && w.recentSlow == 0 && o.passive.refusedLogged.Load() {
			// Not failing now: a refusal incident, if any, is over; the
			// next one is logged again.
			o.passive.refusedLogged.Store(false)
			o.mu.Lock()
			o.passiveKept = ""
			o.mu.Unlock()
		}
		// The rate and latency rules eject only an origin failing now: one
		// that failed under max_ejected or below min_requests and has
		// recovered keeps its failures in the window for a while.
		judged := req >= cfg.MinRequests
		if judged && cfg.FailureRate > 0 && float64(fail) >= cfg.FailureRate.Fraction()*float64(req) && w.recentFail > 0 {
			p.eject(o, ReasonFailureRate, now, func() string {
				return fmt.Sprintf("failure rate %s (%d of %d requests in %s) ≥ failure_rate %s",
					pct(float64(fail)/float64(req)), fail, req, cfg.Window, pct(cfg.FailureRate.Fraction()))
			})
			continue
		}
		if judged && cfg.LatencyP95 > 0 && p95 > cfg.LatencyP95 && w.recentSlow > 0 {
			p.eject(o, ReasonLatencyP95, now, func() string {
				return fmt.Sprintf("p95 %s > latency_p95 %s (%d requests in %s)",
					p95.Round(time.Millisecond), cfg.LatencyP95, req, cfg.Window)
			})
			continue
		}
		// The success-rate rule has its own volume: an origin with fewer
		// requests is neither judged nor counted in the pool's median and
		// spread (at 20 requests, 2 failures of one origin among 3 made an
		// outlier).
		if req >= cfg.SuccessRateMinRequests {
			rates = append(rates, rate{o, 1 - float64(fail)/float64(req), req, fail, w.recentFail > 0})
		}
	}
	if cfg.SuccessRateStdev <= 0 || len(rates) < max(cfg.SuccessRateMinHosts, 3) {
		return
	}
	counts := make([]srCount, len(rates))
	for i, r := range rates {
		counts[i] = srCount{r.req, r.fail}
	}
	out := make([]bool, len(rates))
	sr := successRateOutliers(counts, cfg.SuccessRateStdev, out)
	for i, r := range rates {
		if out[i] && r.recent {
			p.eject(r.o, ReasonSuccessRate, now, func() string {
				restFail, restReq := sr.fail-r.fail, sr.req-r.req
				return fmt.Sprintf("success rate %s (%d of %d requests failed in %s) vs pool median %s (%d origins with ≥ %d requests), below %s (median − max(%g × stdev %s, %s)); "+
					"the other origins failed %d of %d (%s): chance of as many failures p %.2g < %.2g",
					pct(r.rate), r.fail, r.req, cfg.Window, pct(sr.median), len(rates), cfg.SuccessRateMinRequests, pct(sr.limit), cfg.SuccessRateStdev, pct(sr.stdev), pct(minOutlierGap),
					restFail, restReq, pct(float64(restFail)/float64(restReq)), failTail(r.fail, r.req, sr.fail, sr.req), sr.alpha)
			})
		}
	}
}

// srCount is one origin's requests and failed tries in the window, as the
// success-rate rule counts them.
type srCount struct{ req, fail int }

// srStats is what the success-rate rule found in the pool: the median and
// standard deviation of the origins' success rates (0..1), the limit below
// which an origin's rate is an outlier, the origins' requests and failures
// summed, and the significance level each origin's failures must reach
// (successRateChance shared among the origins).
type srStats struct {
	median, stdev, limit float64
	req, fail            int
	alpha                float64
}

// successRateOutliers is the success-rate rule's decision (evaluateCtx
// calls it with the origins that have success_rate_min_requests, at least
// success_rate_min_hosts of them): it sets out[i] for each origin of counts
// that is an outlier at factor (success_rate_stdev). counts must hold
// requests (req > 0); out is as long as counts.
//
// An outlier is an origin whose success rate is below the median by more
// than factor × the standard deviation of the rates, and by at least
// minOutlierGap (Envoy's success-rate rule, with the median for the mean),
// and whose failures are more than chance explains: Fisher's exact test of
// its failures against the other origins' gives p below successRateChance
// divided by the number of origins. Without the test, chance alone ejected
// a healthy origin in 0.75% of evaluations of 3 origins with 100 requests
// each and a 3% error rate everywhere, 1.9% with 5 (see
// TestSuccessRateSimulation): at low volume, the spread of a few origins'
// rates is mostly noise, and the stdev condition cannot tell.
func successRateOutliers(counts []srCount, factor float64, out []bool) srStats {
	vals := make([]float64, len(counts))
	var mean float64
	for i, c := range counts {
		vals[i] = 1 - float64(c.fail)/float64(c.req)
		mean += vals[i]
	}
	mean /= float64(len(vals))
	var v float64
	for _, x := range vals {
		v += (x - mean) * (x - mean)
	}
	var s srStats
	s.stdev = math.Sqrt(v / float64(len(vals)))
	sorted := append([]float64(nil), vals...)
	sort.Float64s(sorted)
	s.median = sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		s.median = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	s.limit = s.median - max(factor*s.stdev, minOutlierGap)
	for _, c := range counts {
		s.req += c.req
		s.fail += c.fail
	}
	s.alpha = successRateChance / float64(len(counts))
	for i, r := range vals {
		c := counts[i]
		out[i] = r < s.limit && failTail(c.fail, c.req, s.fail, s.req) < s.alpha
	}
	return s
}

// successRateChance bounds how often chance alone may make the success-rate
// rule eject an origin: were every origin equally likely to fail a request,
// each origin's failures would be as far above the others' as the rule
// requires in fewer than this share of evaluations, so some origin of the
// pool in fewer than this share (a Bonferroni bound: each origin is tested at
// successRateChance ÷ the number of origins).
const successRateChance = 0.001

// failTail is the one-sided p-value of Fisher's exact test that an origin
// with fail failures in req requests fails more often than the rest of a
// pool that had failAll failures in reqAll requests, its own included: the
// chance, were every request equally likely to fail, that fail or more of
// the failAll failures fall among its req requests (a hypergeometric tail).
// It stops summing once the tail reaches successRateChance, returning a
// value at least that; it sums at most min(failAll, req) − fail terms.
func failTail(fail, req, failAll, reqAll int) float64 {
	restFail, restReq := failAll-fail, reqAll-req
	if restReq <= 0 || float64(fail)*float64(restReq) <= float64(restFail)*float64(req) {
		return 1 // not above the others' rate
	}
	lchoose := func(n, k int) float64 {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(k + 1))
		c, _ := math.Lgamma(float64(n - k + 1))
		return a - b - c
	}
	// P(X = x) for x failures among the origin's requests.
	x := fail
	term := math.Exp(lchoose(failAll, x) + lchoose(reqAll-failAll, req-x) - lchoose(reqAll, req))
	sum := term
	for x < min(failAll, req) && sum < successRateChance && term > sum*1e-12 {
		term *= float64(failAll-x) * float64(req-x) / (float64(x+1) * float64(reqAll-failAll-req+x+1))
		x++
		sum += term
	}
	return sum
}

// endEjection returns o after its passive ejection; probe is what the
// return probe found ("" with no probe).
func (p *pool) endEjection(o *origin, now time.Time, probe string) {
	if !o.clear(flagPassive, now) {
		return
	}
	o.passive.reset()
	o.mu.Lock()
	o.lastDecay = now // decay starts one ejection period after the return
	failed := o.probeFails
	o.probeFails = 0
	o.mu.Unlock()
	o.m.available.Set(b2f(o.Available()))
	attrs := []any{"pool", p.name, "origin", o.name}
	if probe != "" {
		attrs = append(attrs, "probe", probe, "failed_probes", failed)
	}
	if o.Available() {
		p.log.Info("proxy: origin returned after ejection", attrs...)
	} else {
		// Still out for another reason: say so, rather than a "returned"
		// line for an origin that gets no traffic.
		p.log.Info("proxy: passive ejection ended; origin still out", append(attrs, "still", o.stillOut())...)
	}
}

// returnProbe sends o, whose passive ejection time is up at now, its return
// probe: o returns if it passes; if not, it stays out and is probed again
// return_probe_interval later. A failed probe does not lengthen the
// ejection count: an origin down for minutes comes back within an interval
// of healing, not after an ever longer ejection.
func (p *pool) returnProbe(ctx context.Context, o *origin, now time.Time) {
	link := o.link
	defer link.probing.Store(false)
	t0 := time.Now()
	what, ok := p.probe(ctx, o)
	if ctx.Err() != nil || link.gone.Load() {
		return // shutting down, or the origin left the config
	}
	// A reload may have replaced o's generation while the probe was out.
	if cur, cp := link.cur.Load(), link.pool.Load(); cur != nil && cp != nil {
		o, p = cur, cp
	}
	now = now.Add(time.Since(t0))
	what = p.cfg.Passive.probeName() + ": " + what
	if ok {
		o.m.probePass.Inc()
		p.endEjection(o, now, what)
		return
	}
	o.m.probeFail.Inc()
	every := p.cfg.Passive.ReturnProbeInterval
	o.mu.Lock()
	if !o.has(flagPassive) {
		o.mu.Unlock()
		return
	}
	o.ejectUntil = now.Add(every)
	o.probeFails++
	n := o.probeFails
	detail, _, _ := strings.Cut(o.ejectDetail, probeDetailSep)
	o.ejectDetail = detail + probeDetailSep + what
	logIt := n == 1 || now.Sub(o.probeLogged) >= probeLogEvery
	if logIt {
		o.probeLogged = now
	}
	o.mu.Unlock()
	if logIt {
		p.log.Warn("proxy: return probe failed; origin stays out", "pool", p.name, "origin", o.name,
			"probe", what, "failed_probes", n, "next_probe_in", every)
	}
}

// probeLogEvery spaces the log lines of an origin's failed return probes:
// the first is logged, then one a minute, with the count so far.
const probeLogEvery = time.Minute

// probeDetailSep joins an ejection's detail and its last failed return probe.
const probeDetailSep = "; return probe failed: "

// probe sends o one GET of passive.return_probe, with the pool's first
// exact host (else the origin's) as Host, within retry.try_timeout. It says
// what came back and whether that is a pass: an answer below 500 whose
// grpc-status, if any, is not one of grpc_failure_statuses. With
// return_probe: grpc it asks the gRPC health service instead (grpcProbe).
func (p *pool) probe(ctx context.Context, o *origin) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Retry.TryTimeout)
	defer cancel()
	start := time.Now()
	grpc := p.cfg.Passive.ReturnProbe == ReturnProbeGRPC
	method, target := http.MethodGet, p.cfg.Passive.ReturnProbe
	var body io.Reader
	if grpc {
		// grpc.health.v1.Health/Check with an empty HealthCheckRequest
		// (the server's overall health): one uncompressed, empty message.
		method, target, body = http.MethodPost, grpchealth.Path, bytes.NewReader(grpchealth.Request(""))
	}
	req, err := http.NewRequestWithContext(ctx, method, o.url.Scheme+"://"+o.url.Host+target, body)
	if err != nil {
		return err.Error(), false
	}
	if grpc {
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Te", "trailers")
	}
	req.Host = o.url.Host
	for _, h := range p.cfg.hosts {
		if h.exact != "" {
			req.Host = h.exact
			break
		}
	}
	if h := p.cfg.OriginHost; h != "" {
		req.Host = h
	}
	if h := p.cfg.Passive.ReturnProbeHost; h != "" {
		req.Host = h
	}
	req.Header.Set("User-Agent", probeUserAgent)
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		cause, _ := classify(err, ctx)
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Sprintf("%s: no answer within retry.try_timeout %s", cause, p.cfg.Retry.TryTimeout), false
		}
		return cause + ": " + err.Error(), false
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, grpchealth.MaxResponse))
	resp.Body.Close()
	lat := time.Since(start).Round(time.Millisecond)
	gs := grpcStatusOf(resp.Header)
	if gs == "" {
		gs = grpcStatusOf(resp.Trailer)
	}
	if grpc {
		switch {
		case resp.StatusCode != http.StatusOK:
			return fmt.Sprintf("status %d in %s", resp.StatusCode, lat), false
		case gs != "0":
			return fmt.Sprintf("grpc-status %s in %s", grpchealth.StatusName(gs), lat), false
		}
		switch st, err := grpchealth.ServingStatus(msg); {
		case err != nil:
			return fmt.Sprintf("%s in %s", err, lat), false
		case st != grpchealth.Serving:
			name := grpchealth.ServingNames[st]
			if name == "" {
				name = strconv.FormatUint(st, 10)
			}
			return fmt.Sprintf("%s in %s", name, lat), false
		}
		return fmt.Sprintf("SERVING in %s", lat), true
	}
	if gs != "" && p.cfg.Passive.grpcFailed(gs) {
		return fmt.Sprintf("status %d, grpc-status %s in %s", resp.StatusCode, grpchealth.StatusName(gs), lat), false
	}
	return fmt.Sprintf("status %d in %s", resp.StatusCode, lat), resp.StatusCode < 500
}

// probeUserAgent is the User-Agent of return probes.
const probeUserAgent = "vigil-proxy return-probe"

// decay lowers o's passive ejection count by one per full ejection period
// during which o was in rotation (no flag set: not ejected, not down by
// verdicts, not drained) and had no failed try, as Envoy lowers its
// ejection multiplier only for intervals in which the host was healthy. A
// failing origin that keeps being ejected so gets ever longer ejections.
func (o *origin) decay(now time.Time, period time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ejections == 0 {
		return
	}
	if o.flags.Load() != 0 {
		o.lastDecay = now // out of rotation: no evidence of health
		return
	}
	if f := o.passive.lastFail.Load(); f != 0 {
		if t := time.Unix(0, f); t.After(o.lastDecay) {
			o.lastDecay = t // the healthy period starts after the last failure
		}
	}
	if now.Sub(o.lastDecay) >= period {
		o.ejections--
		o.lastDecay = now
	}
}

// pct formats a share (0..1) as a percentage: "42%", "99.5%".
func pct(f float64) string {
	return strconv.FormatFloat(math.Round(f*1000)/10, 'f', -1, 64) + "%"
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// signalStats accumulates one origin's observations for the current signal
// window; the publisher swaps them out.
type signalStats struct {
	requests, status5xx, connErrors, timeouts atomic.Int64
	lat                                       [latBuckets]atomic.Uint32
}

func (s *signalStats) take() (req, s5, ce, to int, p95 time.Duration) {
	var h [latBuckets]uint32
	for k := range s.lat {
		h[k] = s.lat[k].Swap(0)
	}
	return int(s.requests.Swap(0)), int(s.status5xx.Swap(0)), int(s.connErrors.Swap(0)),
		int(s.timeouts.Swap(0)), quantile(&h, 0.95)
}
