package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Sources is a verdict source made of several, one per canary (vigil proxy
// --verdicts-from URL…). Its Verdicts merges theirs and fails only when every
// one fails. A Proxy built on Sources reads each one on its own instead: it
// keeps each source's last verdicts, health and metrics apart, so one dead
// canary shows on /healthz and in vigil_proxy_verdict_source_up while the
// others keep answering, and its last verdicts age out by max_age.
type Sources []reporting.Source

var _ reporting.Source = Sources(nil)

// String names the sources (their URLs, passwords redacted).
func (m Sources) String() string {
	names := make([]string, len(m))
	for i, s := range m {
		names[i] = sourceName(s)
	}
	return strings.Join(names, ", ")
}

// Verdicts merges the verdicts of every source that answers; it fails,
// joining their errors, only when none does.
func (m Sources) Verdicts(ctx context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	var out []reporting.Verdict
	var errs []error
	for _, s := range m {
		vs, err := s.Verdicts(ctx, maxAge)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, vs...)
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// verdictFeed is one verdict source as the poller sees it: the verdicts it
// last returned, since when reads fail, and its two gauges.
type verdictFeed struct {
	src    reporting.Source
	name   string // sourceName(src): logs, /healthz, the source label
	fail   reporting.Failing
	up, ok prometheus.Gauge

	mu   sync.Mutex
	last []reporting.Verdict // the last successful read's verdicts
	// dropped is, per verdict key, the date of its verdict last dropped
	// as dated too far ahead (dropFuture), kept while the key is read:
	// that verdict must not count when, time passing, it comes within
	// max_age ahead (its canary stopped, or a store read up to a bound
	// ahead only now shows it). Under mu.
	dropped map[string]time.Time

	// skewWarned is when a verdict dated too far ahead was last logged
	// (pollFeed's goroutine only).
	skewWarned time.Time
	// late is, per region, whether its verdicts arrive dated more than
	// max_age in the past (applyFeeds only, under applyMu).
	late map[string]*lateRegion
	// read is set once the source was read, successfully or not: until
	// every source was, the regions reporting are not all known yet and
	// the quorum is not judged (quorumCheck).
	read atomic.Bool
	// answered is set once a read of the source succeeded with at least
	// one verdict: a canary that just started (its first runs pending,
	// or not listening yet) has read but not answered. started is when
	// its poller began (zero: it never ran). See quorumGraceOver.
	answered atomic.Bool
	started  time.Time
}

// lateRegion is whether one region's verdicts from one source arrive late
// (dated more than max_age before the proxy first sees them), and when
// that was last logged.
type lateRegion struct {
	late, logged bool
	warned       time.Time
}

// skewWarnEvery is the least time between two warnings about one source's
// verdicts dated too far ahead.
const skewWarnEvery = 10 * time.Minute

// fresh reports whether a verdict dated at counts at now under maxAge: from
// maxAge ago up to maxAge ahead. The tolerance ahead absorbs clock skew
// between canary and proxy; a verdict dated further ahead would otherwise
// never age out (a canary with a clock a year fast, or a bad canary, would
// hold an origin down long after it stopped answering).
func fresh(at, now time.Time, maxAge time.Duration) bool {
	return !at.Before(now.Add(-maxAge)) && !at.After(now.Add(maxAge))
}

// dropFuture removes the verdicts dated more than maxAge ahead of now and
// logs them, at most once per skewWarnEvery per source, with the source,
// how many and the largest skew.
func (p *Proxy) dropFuture(f *verdictFeed, vs []reporting.Verdict, now time.Time, maxAge time.Duration) []reporting.Verdict {
	var n int
	var worst *reporting.Verdict
	kept := vs[:0:0]
	f.mu.Lock()
	old := f.dropped
	f.dropped = nil
	for i := range vs {
		v := &vs[i]
		k := v.Key()
		if v.At.After(now.Add(maxAge)) {
			n++
			if worst == nil || v.At.After(worst.At) {
				worst = v
			}
			if f.dropped == nil {
				f.dropped = map[string]time.Time{}
			}
			f.dropped[k] = v.At
			continue
		}
		if at, ok := old[k]; ok {
			if f.dropped == nil {
				f.dropped = map[string]time.Time{}
			}
			f.dropped[k] = at
		}
		kept = append(kept, *v)
	}
	f.mu.Unlock()
	if n == 0 {
		return kept
	}
	if f.skewWarned.IsZero() || now.Sub(f.skewWarned) >= skewWarnEvery {
		f.skewWarned = now
		// A store is read up to a bound ahead (2 × max_age): a canary
		// further ahead shows only its verdicts within it.
		p.log.Warn("proxy: ignoring verdicts dated in the future beyond max_age (clock skew on the canary, or a bad canary)",
			"source", f.name, "verdicts", n, "skew_at_least", worst.At.Sub(now).Round(time.Second).String(),
			"max_age", maxAge.String(), "check", worst.Check, "target", worst.Target, "region", worst.Region,
			"next_warning_in", skewWarnEvery.String())
	}
	return kept
}

// newVerdictFeeds makes one feed per source: the members of a Sources
// (nested ones flattened, a repeated name kept once), else src itself; none
// for a nil src. Their gauges exist from the start at 0 (not read yet).
func newVerdictFeeds(src reporting.Source, m *metrics) []*verdictFeed {
	var feeds []*verdictFeed
	seen := map[string]bool{}
	var add func(reporting.Source)
	add = func(s reporting.Source) {
		if ss, ok := s.(Sources); ok {
			for _, x := range ss {
				add(x)
			}
			return
		}
		if s == nil {
			return
		}
		name := sourceName(s)
		if seen[name] {
			return
		}
		seen[name] = true
		f := &verdictFeed{src: s, name: name, up: m.sourceUp.WithLabelValues(name), ok: m.sourceOK.WithLabelValues(name)}
		f.up.Set(0)
		f.ok.Set(0)
		feeds = append(feeds, f)
	}
	add(src)
	return feeds
}

// pollVerdicts runs one reader per verdict source (see pollFeed) until ctx
// ends. A source that hangs delays no other: each reads on its own clock.
func (p *Proxy) pollVerdicts(ctx context.Context) {
	var wg sync.WaitGroup
	start := time.Now()
	for _, f := range p.feeds {
		f.started = start // before its goroutine: applyFeeds reads it there
	}
	for _, f := range p.feeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if !p.guard("verdict poller "+f.name, func() { p.pollFeed(ctx, f) }) {
					return
				}
				select { // restarted after a panic, with a pause
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
		}()
	}
	wg.Wait()
}

// pollFeed reads one source every VerdictPoll, then applies the last
// verdicts of every source to every pool. When a read fails that source's
// last verdicts are applied again, so they age out by max_age and Expires
// instead of sticking, and the other sources' verdicts keep counting.
func (p *Proxy) pollFeed(ctx context.Context, f *verdictFeed) {
	for {
		st := p.state.Load()
		var maxAge time.Duration
		for _, pl := range st.pools {
			maxAge = max(maxAge, pl.cfg.Verdicts.MaxAge)
		}
		rctx, cancel := context.WithTimeout(ctx, max(st.cfg.VerdictPoll, time.Second))
		// Twice max_age: the window is the source's clock's (a canary's,
		// InfluxDB's), and a canary whose clock is slow by up to max_age
		// must not lose its verdicts early; each pool's own max_age
		// applies after they are dated on this proxy's clock (rebase).
		var vs []reporting.Verdict
		var err error
		if fs, ok := f.src.(filteredSource); ok {
			// Only the verdicts the pools can count: a canary of many
			// checks and targets answers a pool's few.
			vs, err = fs.VerdictsFor(rctx, 2*maxAge, poolsFilter(st.pools))
		} else {
			vs, err = f.src.Verdicts(rctx, 2*maxAge)
		}
		cancel()
		_, wasFailing := f.fail.State()
		switch {
		case err == nil:
			vs = p.dropFuture(f, vs, time.Now(), maxAge)
			f.mu.Lock()
			f.last = vs
			f.mu.Unlock()
			if wasFailing != nil {
				p.log.Info("proxy: verdict source readable again", "source", f.name)
			}
			f.fail.Record(nil)
			f.up.Set(1)
			f.ok.SetToCurrentTime()
			if len(vs) > 0 {
				f.answered.Store(true)
			}
		case ctx.Err() != nil:
			return
		default:
			if wasFailing == nil {
				p.log.Warn("proxy: reading verdicts failed; keeping its last ones until they age out",
					"source", f.name, "err", err, "sources", len(p.feeds))
			}
			f.fail.Record(err)
			f.up.Set(0)
		}
		f.read.Store(true)
		p.applyFeeds()
		select {
		case <-ctx.Done():
			return
		case <-time.After(st.cfg.VerdictPoll):
		}
	}
}

// applyFeeds applies the last verdicts of every source to every pool; calls
// from the sources' readers take turns.
func (p *Proxy) applyFeeds() {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	now := time.Now()
	pools := p.state.Load().pools
	if p.vseen == nil {
		p.vseen = map[string]*keySeen{}
	}
	var all []reporting.Verdict
	var ahead []time.Duration
	present := map[string]bool{}
	known := len(p.vseen)
	snaps := make([]feedSnap, 0, len(p.feeds))
	for _, f := range p.feeds {
		f.mu.Lock()
		last := f.last
		f.mu.Unlock()
		since, err := f.fail.State()
		_, canary := f.src.(*httpSource)
		snaps = append(snaps, feedSnap{name: f.name, failing: err != nil && !canary, down: err != nil, since: since, last: last})
		all, ahead = p.rebase(f, last, now, pools, all, ahead, present)
	}
	p.duplicateCheck(now, pools)
	changed := len(p.vseen) != known
	for k := range p.vseen {
		if !present[k] {
			delete(p.vseen, k)
			changed = true
		}
	}
	// The quorum is judged once every source was read (or failed): the
	// first source to answer at start is not all the regions there are.
	allRead := true
	for _, f := range p.feeds {
		allRead = allRead && f.read.Load()
	}
	answered, started := p.feedsAnswered()
	first := allRead && !p.quorumJudged
	p.quorumJudged = p.quorumJudged || allRead
	for _, pl := range pools {
		// The quorum's reach changes with the regions read and with the
		// pool's config: a reload may raise verdicts.quorum, or change the
		// checks, tiers or targets that count, without a verdict key
		// changing.
		if pv, basis := p.poolView(pl.name), pl.quorumBasis(); allRead && (changed || first || pv.quorumBasis != basis || pv.quorumPending) {
			pv.quorumBasis = basis
			pl.quorumCheck(all, pv, quorumGraceOver(answered, started, now, pl.cfg.Verdicts.MaxAge))
		}
		failing := failingRegions(pl, snaps)
		pl.applyVerdictsFrom(all, ahead, now, failing, silentRegions(pl, snaps))
		p.freshCheck(pl, all, ahead, now)
		p.regionCheck(pl, all, ahead, now, failing)
	}
}

// feedSnap is one verdict source as applyFeeds read it: its name, whether
// it is a store whose reads fail (vigil_proxy_verdict_source_up 0), and its
// last verdicts. A canary's own API (HTTPSource) that fails is that canary
// gone, as far as the proxy can tell: its regions stopped reporting, and it
// is not counted as failing here.
type feedSnap struct {
	name    string
	failing bool
	last    []reporting.Verdict
	// down: the last read failed (a dead canary, a store down), since
	// then.
	down  bool
	since time.Time
}

// failingRegions is, per region, the failing sources that hold the last
// verdicts of a check pl counts for one of its origins from that region,
// for the regions no answering source gives such verdicts of: when their
// verdicts age out, the source failed, not (as far as the proxy can tell)
// the region's canaries. Nil when every source answers.
func failingRegions(pl *pool, snaps []feedSnap) map[string][]string {
	var bad map[string][]string
	for _, s := range snaps {
		if s.failing {
			bad = map[string][]string{}
			break
		}
	}
	if bad == nil {
		return nil
	}
	targets := pl.verdictTargets()
	good := map[string]bool{}
	for _, s := range snaps {
		for i := range s.last {
			v := &s.last[i]
			if !targets[v.Target] || !pl.counts(v) {
				continue
			}
			switch {
			case !s.failing:
				good[v.Region] = true
			case !slices.Contains(bad[v.Region], s.name):
				bad[v.Region] = append(bad[v.Region], s.name)
			}
		}
	}
	for r := range good {
		delete(bad, r)
	}
	return bad
}

// silentRegions is, per region, since when no source that gives verdicts
// of a check pl counts for one of its origins from that region answers
// (the last of them to stop), for the regions only sources that stopped
// answering (dead canaries, failing stores) hold such verdicts of: their
// last verdicts still count until they age out, but nothing is heard of
// the region any more. Nil when every source answers.
func silentRegions(pl *pool, snaps []feedSnap) map[string]time.Time {
	if !slices.ContainsFunc(snaps, func(s feedSnap) bool { return s.down }) {
		return nil
	}
	targets := pl.verdictTargets()
	good := map[string]bool{}
	silent := map[string]time.Time{}
	for _, s := range snaps {
		for i := range s.last {
			v := &s.last[i]
			if !targets[v.Target] || !pl.counts(v) {
				continue
			}
			switch {
			case !s.down:
				good[v.Region] = true
			case s.since.After(silent[v.Region]):
				silent[v.Region] = s.since
			}
		}
	}
	for r := range good {
		delete(silent, r)
	}
	return silent
}

// verdictTargets is the set of the targets of pl's origins.
func (pl *pool) verdictTargets() map[string]bool {
	targets := map[string]bool{}
	for _, o := range pl.origins {
		if o.target != "" {
			targets[o.target] = true
		}
	}
	return targets
}

// poolVerdictAge is what the verdict view keeps of a pool, by name across
// reloads: for freshCheck, the date of the newest verdict counted for its
// origins (zero: none yet), and whether that is older than its max_age; for
// applyFeeds, the pool's quorumBasis when quorumCheck last ran.
type poolVerdictAge struct {
	newest      time.Time
	stale       bool
	quorumBasis string
	quorumShort bool // quorumCheck warned that the quorum is out of reach
	// quorumPending: quorumCheck found the quorum out of reach before its
	// start grace was over, and is asked again at each applyFeeds.
	quorumPending bool

	// For regionCheck: per region, what it saw of it; the pool's
	// quorumBasis when it last ran; the regions reporting then.
	regions     map[string]*regionSeen
	regionBasis string
	reporting   []string
}

// regionSeen is one region of a pool as regionCheck saw it: whether it has
// a fresh verdict of a counted check, the date of its newest, and whether
// its stop was logged (a warning to end with an INFO line when it returns).
type regionSeen struct {
	reporting, warned bool
	newest            time.Time
}

// regionName is how a region shows in logs and /healthz.
func regionName(r string) string {
	if r == "" {
		return "(no region)"
	}
	return r
}

// regionCheck follows the regions that report for pl: those with a fresh,
// unexpired verdict of a check pl counts for one of its origins (not dated
// beyond max_age ahead). It sets vigil_proxy_pool_regions_reporting, and
// warns once when a region that reported stops (an INFO line when it
// returns): with fewer regions than verdicts.quorum, verdicts can take no
// origin out (/healthz says so, see regionsBelowQuorum). Regions whose last
// verdicts only failing sources hold (failing, failingRegions) are not
// blamed one by one: one line names the failing source(s). A pool whose
// origins have no target is not judged; after a reload that changes what
// counts (quorumBasis), the regions are taken as they are, without a line.
func (p *Proxy) regionCheck(pl *pool, vs []reporting.Verdict, ahead []time.Duration, now time.Time, failing map[string][]string) {
	maxAge := pl.cfg.Verdicts.MaxAge
	targets := pl.verdictTargets()
	if len(targets) == 0 || maxAge <= 0 {
		return
	}
	cur := map[string]time.Time{}
	for i := range vs {
		v := &vs[i]
		if !targets[v.Target] || !pl.counts(v) || v.AgentFault() || ahead != nil && ahead[i] > maxAge ||
			!fresh(v.At, now, maxAge) || !v.Expires.IsZero() && !now.Before(v.Expires) {
			continue
		}
		at := v.At
		if at.After(now) {
			at = now
		}
		if at.After(cur[v.Region]) {
			cur[v.Region] = at
		}
	}
	p.m.regionsReporting.WithLabelValues(pl.name).Set(float64(len(cur)))
	st := p.poolView(pl.name)
	basis := pl.quorumBasis()
	quiet := st.regionBasis != basis
	st.regionBasis = basis
	if st.regions == nil {
		st.regions = map[string]*regionSeen{}
	}
	var gone, bySource, sources []string
	for r, rs := range st.regions {
		if _, ok := cur[r]; ok || !rs.reporting {
			continue
		}
		rs.reporting = false
		switch {
		case quiet:
		case len(failing[r]) > 0:
			bySource = append(bySource, r)
			for _, s := range failing[r] {
				if !slices.Contains(sources, s) {
					sources = append(sources, s)
				}
			}
		default:
			rs.warned = true
			gone = append(gone, r)
		}
	}
	var back []string
	for r, at := range cur {
		rs := st.regions[r]
		if rs == nil {
			rs = &regionSeen{}
			st.regions[r] = rs
		}
		if !rs.reporting && rs.warned {
			back = append(back, r)
		}
		rs.reporting, rs.warned, rs.newest = true, false, at
	}
	st.reporting = st.reporting[:0]
	for r := range cur {
		st.reporting = append(st.reporting, regionName(r))
	}
	sort.Strings(st.reporting)
	q := pl.cfg.Verdicts.Quorum
	sort.Strings(gone)
	for _, r := range gone {
		p.log.Warn("proxy: a region stopped reporting for the pool: no fresh verdict of a counted check from it within max_age (its canaries stopped, cannot reach the store, or cannot run the checks)",
			"pool", pl.name, "region", regionName(r), "reporting", len(cur), "quorum", q,
			"verdicts_can_eject", len(cur) >= q, "newest", st.regions[r].newest.UTC().Format(time.RFC3339),
			"max_age", maxAge.String())
	}
	if len(bySource) > 0 {
		sort.Strings(bySource)
		names := make([]string, len(bySource))
		for i, r := range bySource {
			names[i] = regionName(r)
		}
		sort.Strings(sources)
		p.log.Warn("proxy: verdicts of the pool's regions aged out while their verdict source is failing: the source failed, not necessarily the canaries",
			"pool", pl.name, "source_failing", strings.Join(sources, ", "), "regions", strings.Join(names, ","),
			"reporting", len(cur), "quorum", q, "verdicts_can_eject", len(cur) >= q, "max_age", maxAge.String())
	}
	sort.Strings(back)
	for _, r := range back {
		p.log.Info("proxy: a region reports for the pool again", "pool", pl.name, "region", regionName(r),
			"reporting", len(cur), "quorum", q)
	}
}

// regionsBelowQuorum is the /healthz warning of each pool for which at
// least one region, but fewer than its verdicts.quorum, reports
// (regionCheck): no origin can be taken out by verdicts. None reporting is
// the stale warning's (staleVerdicts).
func (p *Proxy) regionsBelowQuorum() []string {
	var out []string
	for _, pl := range p.state.Load().pools {
		st := p.vfresh[pl.name]
		if st == nil || len(st.reporting) == 0 || len(st.reporting) >= pl.cfg.Verdicts.Quorum {
			continue
		}
		var silent []string
		for r, rs := range st.regions {
			if !rs.reporting {
				silent = append(silent, regionName(r))
			}
		}
		sort.Strings(silent)
		w := fmt.Sprintf("pool %s: %d region(s) report fresh verdicts (%s), fewer than verdicts.quorum %d: verdicts can take no origin out; its origins are judged by passive detection alone",
			pl.name, len(st.reporting), strings.Join(st.reporting, ", "), pl.cfg.Verdicts.Quorum)
		if len(silent) > 0 {
			w += " (no fresh verdict from " + strings.Join(silent, ", ") + ")"
		}
		out = append(out, w)
	}
	return out
}

// poolView is what the verdict view keeps of the pool named name, made on
// first use (under applyMu).
func (p *Proxy) poolView(name string) *poolVerdictAge {
	if p.vfresh == nil {
		p.vfresh = map[string]*poolVerdictAge{}
	}
	pv := p.vfresh[name]
	if pv == nil {
		pv = &poolVerdictAge{}
		p.vfresh[name] = pv
	}
	return pv
}

// freshCheck follows the newest verdict counted for pl's origins (a check
// pl counts, against an origin's target, not dated beyond max_age ahead):
// vigil_proxy_pool_verdict_timestamp_seconds, and a warning when it turns
// older than max_age (/healthz lists it too, see VerdictReport). Failing
// open hides a dead canary otherwise: its verdicts expire, every origin
// returns to service, and the sources still answer (a store read without
// error holds nothing fresh). A pool whose origins have no target, or that
// never had a verdict, is not judged.
func (p *Proxy) freshCheck(pl *pool, vs []reporting.Verdict, ahead []time.Duration, now time.Time) {
	maxAge := pl.cfg.Verdicts.MaxAge
	targets := map[string]bool{}
	for _, o := range pl.origins {
		if o.target != "" {
			targets[o.target] = true
		}
	}
	if len(targets) == 0 || maxAge <= 0 {
		return
	}
	var newest time.Time
	for i := range vs {
		v := &vs[i]
		// A run the agent could not make (no browser, no file
		// descriptor) brings no news of the origin.
		if !targets[v.Target] || !pl.counts(v) || v.AgentFault() || ahead != nil && ahead[i] > maxAge {
			continue
		}
		at := v.At
		if at.After(now) {
			at = now
		}
		if at.After(newest) {
			newest = at
		}
	}
	st := p.poolView(pl.name)
	if st.newest.IsZero() && newest.IsZero() {
		return // never had a verdict
	}
	if newest.After(st.newest) {
		st.newest = newest
		p.m.verdictAt.WithLabelValues(pl.name).Set(float64(newest.UnixNano()) / 1e9)
	}
	stale := now.Sub(st.newest) > maxAge
	switch {
	case stale && !st.stale:
		p.log.Warn("proxy: no fresh verdict for the pool's origins: "+p.staleWhy()+", so its origins are judged by passive detection alone until fresh verdicts arrive",
			"pool", pl.name, "newest", st.newest.UTC().Format(time.RFC3339), "max_age", maxAge.String())
	case !stale && st.stale:
		p.log.Info("proxy: fresh verdicts for the pool's origins again", "pool", pl.name)
	}
	st.stale = stale
}

// staleVerdicts is the /healthz warning of each pool whose newest counted
// verdict is older than its max_age (freshCheck), by pool name.
func (p *Proxy) staleVerdicts() []string {
	p.applyMu.Lock()
	defer p.applyMu.Unlock()
	var out []string
	for _, pl := range p.state.Load().pools {
		if st := p.vfresh[pl.name]; st != nil && st.stale {
			out = append(out, fmt.Sprintf("pool %s: no fresh verdict since %s (verdicts.max_age %s): %s; its origins are judged by passive detection alone",
				pl.name, st.newest.UTC().Format(time.RFC3339), pl.cfg.Verdicts.MaxAge, p.staleWhy()))
		}
	}
	return append(out, p.regionsBelowQuorum()...)
}

// staleWhy says why a pool has no fresh verdict: the verdict sources that
// cannot be read (a store or canary that fails), or else the canaries,
// which stopped reporting the pool's checks or cannot run them (their
// runs fail for the agent's own trouble: reporting.Verdict.AgentFault).
func (p *Proxy) staleWhy() string {
	var names []string
	var since time.Time
	for _, f := range p.failingFeeds() {
		names = append(names, f.name)
		if since.IsZero() || f.since.Before(since) {
			since = f.since
		}
	}
	if len(names) > 0 {
		return fmt.Sprintf("verdict source %s cannot be read since %s", strings.Join(names, ", "), since.UTC().Format(time.RFC3339))
	}
	return "the canaries stopped reporting its checks or cannot run them"
}

// duplicateCheck reports duplicate canaries to reporting.Duplicates (the
// warning and vigil_duplicate_canaries): the series a source marked
// (Verdict.Duplicates: the stores see every instance's writes), and a
// series two sources (vigil proxy --verdicts-from, one URL per canary)
// both give, fresh under the largest max_age, from two different canary
// instances. Verdicts without an instance (older canaries, a canary
// without a store serving its memory) are not compared. Quorum is not
// changed: a region counts once whichever canary wrote its verdict.
func (p *Proxy) duplicateCheck(now time.Time, pools []*pool) {
	var maxAge time.Duration
	for _, pl := range pools {
		maxAge = max(maxAge, pl.cfg.Verdicts.MaxAge)
	}
	var ws []reporting.SeriesWriter
	var marked []reporting.Verdict
	for _, f := range p.feeds {
		f.mu.Lock()
		last := f.last
		f.mu.Unlock()
		for i := range last {
			v := &last[i]
			if len(v.Duplicates) > 0 {
				marked = append(marked, *v)
			}
			if len(p.feeds) > 1 && v.Instance != "" && (maxAge == 0 || fresh(v.At, now, maxAge)) {
				// Two live canaries: their spans overlap at now.
				ws = append(ws, reporting.SeriesWriter{Check: v.Check, Target: v.Target, Region: v.Region,
					Vantage: v.Vantage, Instance: v.Instance, First: now, Last: now})
			}
		}
	}
	ds := reporting.DuplicatesIn(marked)
	seen := map[string]bool{}
	for _, d := range ds {
		seen[reporting.Verdict{Check: d.Check, Target: d.Target, Region: d.Region, Vantage: d.Vantage}.Key()] = true
	}
	for _, d := range reporting.FindDuplicates(ws) {
		if !seen[reporting.Verdict{Check: d.Check, Target: d.Target, Region: d.Region, Vantage: d.Vantage}.Key()] {
			ds = append(ds, d)
		}
	}
	p.dups().Observe("proxy", ds)
}

// dups is where duplicate canaries are reported: reporting.Duplicates
// unless a test set dupWatch.
func (p *Proxy) dups() *reporting.DuplicateWatch {
	if dupWatch != nil {
		return dupWatch
	}
	return reporting.Duplicates
}

// dupWatch, if set (tests), replaces reporting.Duplicates.
var dupWatch *reporting.DuplicateWatch

// feedsAnswered reports whether every source has answered a read with
// verdicts (verdictFeed.answered), and the earliest time a poller started
// (zero when none did: applyFeeds called without pollVerdicts).
func (p *Proxy) feedsAnswered() (bool, time.Time) {
	all := true
	var started time.Time
	for _, f := range p.feeds {
		all = all && f.answered.Load()
		if started.IsZero() || (!f.started.IsZero() && f.started.Before(started)) {
			started = f.started
		}
	}
	return all, started
}

// quorumGraceOver reports whether a quorum out of reach may be warned
// about yet: once every source has answered with verdicts, or max_age
// (the pool's verdicts.max_age) after the pollers started, whichever comes
// first. Until then a source that was read but has no verdicts yet is a
// canary starting beside the proxy (not listening yet, or its first runs
// still to come at their jittered offsets): judging then logged the
// warning at every start and "met again" a poll later. A region that has
// not reported within max_age is as missing as one whose verdicts aged
// out, and is warned about then.
func quorumGraceOver(answered bool, started, now time.Time, maxAge time.Duration) bool {
	return answered || started.IsZero() || now.Sub(started) >= maxAge
}

// quorumCheck warns when fewer regions report verdicts that count for the
// pool's origins than its verdicts.quorum, and at least one does: no
// origin can then be taken out by verdicts, whatever they say; and, after
// such a warning, logs when enough regions report again. applyFeeds calls
// it once every source was read, then when the set of verdict keys read
// changes (a new check, region or canary, one gone) and when a reload
// changes the pool's quorumBasis. Before graceOver (quorumGraceOver) a
// quorum out of reach is not warned about yet: pv.quorumPending makes
// applyFeeds ask again at its next call. pv.quorumShort keeps the state: one
// warning when the quorum becomes out of reach, one line when it is met
// again, none per poll or per change in between. When no region reports
// at all there is nothing to say, and the state is forgotten.
func (pl *pool) quorumCheck(vs []reporting.Verdict, pv *poolVerdictAge, graceOver bool) {
	targets := map[string]bool{}
	for _, o := range pl.origins {
		if o.target != "" {
			targets[o.target] = true
		}
	}
	regions := map[string]bool{}
	for i := range vs {
		if v := &vs[i]; targets[v.Target] && pl.counts(v) {
			regions[v.Region] = true
		}
	}
	short := len(regions) < pl.cfg.Verdicts.Quorum
	pv.quorumPending = false
	switch {
	case len(regions) == 0:
		pv.quorumShort = false
		return
	case short && !pv.quorumShort && !graceOver:
		pv.quorumPending = true
		return
	case short == pv.quorumShort:
		return
	}
	pv.quorumShort = short
	names := make([]string, 0, len(regions))
	for r := range regions {
		if r == "" {
			r = "(no region)"
		}
		names = append(names, r)
	}
	sort.Strings(names)
	if short {
		pl.log.Warn("proxy: verdicts.quorum exceeds the regions that report for the pool: verdicts can take no origin out",
			"pool", pl.name, "quorum", pl.cfg.Verdicts.Quorum, "regions", strings.Join(names, ","))
		return
	}
	pl.log.Info("proxy: verdicts.quorum met again: enough regions report for the pool, verdicts can take origins out",
		"pool", pl.name, "quorum", pl.cfg.Verdicts.Quorum, "regions", strings.Join(names, ","))
}

// quorumBasis is what quorumCheck's answer depends on besides the
// verdicts: the pool's quorum, the checks and tiers that count and its
// origins' targets.
func (pl *pool) quorumBasis() string {
	sorted := func(xs []string) string {
		xs = slices.Clone(xs)
		sort.Strings(xs)
		return strings.Join(xs, "\x01")
	}
	var targets []string
	for _, o := range pl.origins {
		if o.target != "" {
			targets = append(targets, o.target)
		}
	}
	return fmt.Sprintf("%d\x00%s\x00%s\x00%s", pl.cfg.Verdicts.Quorum,
		sorted(pl.cfg.Verdicts.Checks), sorted(pl.cfg.Verdicts.Tiers), sorted(targets))
}

// keySeen is what the proxy saw of one verdict key (check, target, region,
// vantage) from one source: the newest At, when that verdict was first seen
// here, and how many successive verdicts came further apart than max_age.
type keySeen struct {
	at, seen time.Time
	longGaps int
	warned   time.Time
	// cause is the failure cause of the key's last failing run seen while
	// it is unhealthy, carried by its later unhealthy verdicts whose runs
	// pass (held down by flap damping, or waiting for rise passes): their
	// own Cause is "" (carryCause).
	cause string
	// heldRaw is the last HeldUntil the source gave, and held that time on
	// this proxy's clock when first seen: later verdicts with the same
	// hold-down keep its first date, so the end shown does not move by the
	// poll's delay with each run.
	heldRaw, held time.Time
	// ahead is how far the verdict at was dated ahead of this proxy's
	// clock when first seen (firstAhead): it keeps that skew, so one that
	// was too far ahead never counts, however close its date comes.
	ahead time.Duration
}

// aheadDropped is the skew given to a verdict dropFuture dropped before:
// beyond every pool's max_age.
const aheadDropped = time.Duration(1<<63 - 1)

// firstAhead is how far v is dated ahead of now (0 when not ahead), or
// aheadDropped when this very verdict was dropped before as dated beyond
// max_age ahead.
func (f *verdictFeed) firstAhead(v *reporting.Verdict, now time.Time) time.Duration {
	f.mu.Lock()
	at, ok := f.dropped[v.Key()]
	f.mu.Unlock()
	if ok && at.Equal(v.At) {
		return aheadDropped
	}
	return max(v.At.Sub(now), 0)
}

// gapWarnEvery is the least time between two warnings about one key's
// verdicts coming further apart than max_age.
const gapWarnEvery = 10 * time.Minute

// rebase appends to out copies of one source's verdicts dated on this
// proxy's clock, and to ahead how far each one's own date is ahead of now
// (0 when not ahead), for each pool's own future limit. Each verdict's At
// becomes when the proxy first saw it (Expires and HeldUntil move with it),
// so its age and expiry count from its arrival, whatever the skew between
// the canary's clock and the proxy's: a canary whose clock is 20s slow would
// otherwise have its verdicts expire (at + 3 intervals) before they arrive,
// and one whose clock is fast would have them count for longer after it
// stopped. A key first seen (the proxy just started, a new canary) is taken
// as dated right, but never ahead of now; a verdict with a new date,
// later or earlier (the canary's clock stepped back), is new from now.
// Keys are per source, so two sources of one canary do not mix their dates.
// A verdict without a date is passed as it is (never fresh).
//
// A verdict with a new date more than max_age before now counts (from now)
// all the same, and is logged (lateCheck): that region's clock is slow, or
// its verdicts reach the store late.
//
// It also warns, at most once per key per gapWarnEvery, when two successive
// verdicts of a key came further apart than the smallest max_age of the
// pools counting it: between such runs the verdict is stale, and an origin
// the check fails drifts back into service until the next run.
func (p *Proxy) rebase(f *verdictFeed, vs []reporting.Verdict, now time.Time, pools []*pool,
	out []reporting.Verdict, ahead []time.Duration, present map[string]bool) ([]reporting.Verdict, []time.Duration) {
	for i := range vs {
		v := vs[i]
		if v.At.IsZero() {
			out, ahead = append(out, v), append(ahead, 0)
			continue
		}
		k := f.name + "\x00" + v.Key()
		present[k] = true
		ks := p.vseen[k]
		var seen time.Time
		switch {
		case ks == nil:
			seen = v.At
			if seen.After(now) {
				seen = now
			}
			p.vseen[k] = &keySeen{at: v.At, seen: seen, ahead: f.firstAhead(&v, now)}
		case v.At.Equal(ks.at):
			seen = ks.seen
		default:
			if v.At.After(ks.at) {
				p.gapCheck(ks, &v, v.At.Sub(ks.at), now, pools)
			} else {
				ks.longGaps = 0
			}
			p.lateCheck(f, &v, now, pools)
			ks.at, ks.seen, ks.ahead = v.At, now, f.firstAhead(&v, now)
			seen = now
		}
		a := p.vseen[k].ahead
		held := v.HeldUntil
		if shift := seen.Sub(v.At); shift != 0 {
			v.At = seen
			if !v.Expires.IsZero() {
				v.Expires = v.Expires.Add(shift)
			}
			if !v.HeldUntil.IsZero() {
				v.HeldUntil = v.HeldUntil.Add(shift)
			}
		}
		ks = p.vseen[k]
		switch {
		case held.IsZero():
		case held.Equal(ks.heldRaw):
			v.HeldUntil = ks.held
		default:
			ks.heldRaw, ks.held = held, v.HeldUntil
		}
		carryCause(ks, &v)
		out, ahead = append(out, v), append(ahead, a)
	}
	return out, ahead
}

// carryCause gives an unhealthy verdict whose run passed (Cause "": held
// down by flap damping, or passing but short of the canary's rise) the cause
// of its key's last failing run seen here, so the origin's reason keeps
// saying why it went down. A verdict that is not unhealthy forgets it.
func carryCause(ks *keySeen, v *reporting.Verdict) {
	switch {
	case v.State != reporting.StateUnhealthy:
		ks.cause = ""
	case !v.OK:
		if v.Cause != "" {
			ks.cause = v.Cause
		}
	case v.Cause == "":
		v.Cause = ks.cause
	}
}

// gapCheck counts a gap between two successive verdicts of a key and warns
// when two in a row exceed the smallest max_age of the pools counting it
// (one long gap is a canary that paused or restarted).
func (p *Proxy) gapCheck(ks *keySeen, v *reporting.Verdict, gap time.Duration, now time.Time, pools []*pool) {
	var maxAge time.Duration
	var poolName string
	for _, pl := range pools {
		if pl.counts(v) && (maxAge == 0 || pl.cfg.Verdicts.MaxAge < maxAge) {
			maxAge, poolName = pl.cfg.Verdicts.MaxAge, pl.name
		}
	}
	if maxAge == 0 || gap <= maxAge {
		ks.longGaps = 0
		return
	}
	ks.longGaps++
	if ks.longGaps < 2 || (!ks.warned.IsZero() && now.Sub(ks.warned) < gapWarnEvery) {
		return
	}
	ks.warned = now
	p.log.Warn("proxy: verdicts of a counted check come further apart than verdicts.max_age: between runs they are stale, and an origin the check fails returns to service until the next run; raise the pool's verdicts.max_age above the check's interval + jitter + timeout",
		"pool", poolName, "check", v.Check, "target", v.Target, "region", v.Region, "gap", gap.Round(time.Second).String(),
		"max_age", maxAge.String(), "next_warning_in", gapWarnEvery.String())
}

// lateWarnEvery is the least time between two warnings about one region's
// verdicts arriving dated more than max_age in the past.
const lateWarnEvery = 10 * time.Minute

// lateCheck looks at a verdict with a new date: when it is dated more than
// the smallest max_age of the pools counting it before now, it warns, once
// per source and region until a verdict of that region arrives dated within
// max_age again (then it says so), and at most once per lateWarnEvery. Such
// a verdict counts from now all the same (rebase); verdicts dated before the
// sources' window (2 × the largest max_age) never arrive.
func (p *Proxy) lateCheck(f *verdictFeed, v *reporting.Verdict, now time.Time, pools []*pool) {
	var maxAge time.Duration
	var poolName string
	for _, pl := range pools {
		if pl.counts(v) && (maxAge == 0 || pl.cfg.Verdicts.MaxAge < maxAge) {
			maxAge, poolName = pl.cfg.Verdicts.MaxAge, pl.name
		}
	}
	if maxAge == 0 {
		return
	}
	if f.late == nil {
		f.late = map[string]*lateRegion{}
	}
	lr := f.late[v.Region]
	late := now.Sub(v.At) > maxAge
	switch {
	case late && (lr == nil || !lr.late):
		if lr == nil {
			lr = &lateRegion{}
			f.late[v.Region] = lr
		}
		lr.late, lr.logged = true, false
		if !lr.warned.IsZero() && now.Sub(lr.warned) < lateWarnEvery {
			return
		}
		lr.warned, lr.logged = now, true
		p.log.Warn("proxy: verdicts arrive dated more than max_age in the past (clock skew on the canary, or verdicts reaching the store late); each counts for max_age from when the proxy first saw it",
			"source", f.name, "region", v.Region, "late", now.Sub(v.At).Round(time.Second).String(),
			"max_age", maxAge.String(), "pool", poolName, "check", v.Check, "target", v.Target)
	case !late && lr != nil && lr.late:
		lr.late = false
		if lr.logged {
			p.log.Info("proxy: verdicts arrive dated within max_age again", "source", f.name, "region", v.Region,
				"max_age", maxAge.String())
		}
	}
}

// VerdictHealth is nil while at least one verdict source is readable (or
// there is none), else an error with one line per source saying since when
// and from where reads fail, with the last error: "verdicts unreadable since
// T from SOURCE: ERR". It clears on the next successful read of any source.
func (p *Proxy) VerdictHealth() error {
	_, err := p.VerdictReport()
	return err
}

// VerdictReport is the warnings /healthz lists beside VerdictHealth, and
// VerdictHealth, from one look at the sources. When some sources fail and at least one
// answers, the proxy keeps working on the verdicts it has (the failing ones'
// last verdicts count until they are older than max_age), so unreadable is
// nil and warnings has one line per failing source: "verdict source SOURCE
// failing since T, last error: ERR (N of M verdict sources answer)". When
// every source fails, unreadable says so. Before those, warnings has one
// line per pool whose newest counted verdict is older than its max_age
// (staleVerdicts): sources that answer but hold nothing fresh; then one per
// pool for which fewer regions than its quorum report (regionsBelowQuorum).
func (p *Proxy) VerdictReport() (warnings []string, unreadable error) {
	warnings = p.staleVerdicts()
	fs := p.failingFeeds()
	if len(fs) == 0 {
		return warnings, nil
	}
	if len(fs) == len(p.feeds) {
		errs := make([]error, len(fs))
		for i, f := range fs {
			errs[i] = fmt.Errorf("verdicts unreadable since %s from %s: %w",
				f.since.UTC().Format(time.RFC3339), f.name, f.err)
		}
		return warnings, errors.Join(errs...)
	}
	for _, f := range fs {
		warnings = append(warnings, fmt.Sprintf("verdict source %s failing since %s, last error: %v (%d of %d verdict sources answer)",
			f.name, f.since.UTC().Format(time.RFC3339), f.err, len(p.feeds)-len(fs), len(p.feeds)))
	}
	return warnings, nil
}

// feedFailure is a verdict source whose reads fail: its name, since when,
// and the last error.
type feedFailure struct {
	name  string
	since time.Time
	err   error
}

// failingFeeds lists the verdict sources whose reads fail, in the order of
// p.feeds.
func (p *Proxy) failingFeeds() []feedFailure {
	var fs []feedFailure
	for _, f := range p.feeds {
		if since, err := f.fail.State(); err != nil {
			fs = append(fs, feedFailure{f.name, since, err})
		}
	}
	return fs
}

// sourceName describes a verdict source for logs and /healthz: its String
// when it has one (HTTPSource gives its URL), else its type.
func sourceName(src reporting.Source) string {
	if s, ok := src.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", src)
}

// counts reports whether a verdict's check counts for this pool.
func (pl *pool) counts(v *reporting.Verdict) bool {
	if pl.cfg.checkSet == nil && pl.cfg.tierSet == nil {
		return true
	}
	return pl.cfg.checkSet[v.Check] || pl.cfg.tierSet[v.Tier]
}

// verdictDown decides one origin: down when at least quorum distinct regions
// hold a fresh unhealthy verdict for a counted check. Degraded, healthy,
// unknown, expired verdicts and those not fresh (older than max_age, or
// dated more than max_age ahead) never take an origin out.
// It returns a reason listing the failing checks and regions; when some
// regions but fewer than quorum hold it unhealthy, it returns false and
// that reason after belowQuorum.
func (pl *pool) verdictDown(o *origin, vs []reporting.Verdict, ahead []time.Duration, now time.Time) (bool, string) {
	if o.target == "" {
		return false, ""
	}
	regions := map[string][]string{}
	// A region several canaries (vantages) report from: its entries name
	// the vantage, so the one that sees the origin broken can be found.
	vantages := map[string]string{}
	several := map[string]bool{}
	for i := range vs {
		v := &vs[i]
		if v.Target != o.target || !pl.counts(v) {
			continue
		}
		if w, ok := vantages[v.Region]; ok && w != v.Vantage {
			several[v.Region] = true
		}
		vantages[v.Region] = v.Vantage
	}
	for i := range vs {
		v := &vs[i]
		if v.Target != o.target || !pl.counts(v) {
			continue
		}
		if v.Current(now) != reporting.StateUnhealthy || !fresh(v.At, now, pl.cfg.Verdicts.MaxAge) ||
			ahead != nil && ahead[i] > pl.cfg.Verdicts.MaxAge {
			continue
		}
		d := verdictDetail(v, now)
		if several[v.Region] {
			if d == "" {
				d = " (vantage " + v.Vantage + ")"
			} else {
				d = d[:len(d)-1] + "; vantage " + v.Vantage + ")"
			}
		}
		regions[v.Region] = append(regions[v.Region], v.Check+d)
	}
	if len(regions) == 0 {
		return false, ""
	}
	keys := make([]string, 0, len(regions))
	for r := range regions {
		keys = append(keys, r)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, r := range keys {
		if i > 0 {
			b.WriteString("; ")
		}
		name := r
		if name == "" {
			name = "(no region)"
		}
		fmt.Fprintf(&b, "%s: %s", name, strings.Join(regions[r], ", "))
	}
	why := fmt.Sprintf("unhealthy in %d region(s), quorum %d: %s", len(regions), pl.cfg.Verdicts.Quorum, b.String())
	if len(regions) < pl.cfg.Verdicts.Quorum {
		return false, belowQuorum + why
	}
	return true, why
}

// belowQuorum starts the reason verdictDown gives for an origin that fewer
// regions than the quorum hold unhealthy. applyVerdictsAhead keeps it in
// the origin's verdict reason while the verdict flag is clear, and
// GET /api/v1/origins shows it as verdict_below_quorum.
const belowQuorum = "not taken out: "

// heldFormat is how a flap hold-down's end shows in a reason: UTC, to the
// second (hold-downs last minutes, not days).
const heldFormat = "15:04:05Z"

// verdictDetail is what a reason says of one unhealthy verdict after its
// check's name: " (CAUSE; STATE)", "" when there is nothing to say. CAUSE is
// the failure cause (of its run, or of the last failing run before it when
// it passed: carryCause); STATE is "held down by flap damping until T" while
// the canary holds it down (HeldUntil, on this proxy's clock), else
// "passing again" when its run passed (the canary waits for rise passes, and
// after a hold-down flap.extra_passes more, before it turns healthy). Parts
// are separated by "; " inside the parentheses only (whyHeld skips them).
func verdictDetail(v *reporting.Verdict, now time.Time) string {
	var parts []string
	if v.Cause != "" {
		parts = append(parts, v.Cause)
	}
	switch {
	case v.HeldUntil.After(now):
		parts = append(parts, "held down by flap damping until "+v.HeldUntil.UTC().Format(heldFormat))
	case v.OK && !v.HeldUntil.IsZero():
		parts = append(parts, "passing again after a flap hold-down")
	case v.OK:
		parts = append(parts, "passing again")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// Why an origin's verdict flag cleared, in the log line's message.
const (
	clearedExpired = "verdicts expired, region(s) stopped reporting"
	clearedSource  = "verdicts expired: the verdict source is failing"
	clearedHealthy = "region(s) turned healthy"
	clearedUnknown = "region(s) report unknown"
	clearedQuorum  = "fewer regions unhealthy than the quorum"
)

// clearedBecause says why the regions that held o down (named in was, the
// reason verdictDown gave) no longer do, for the log line of its return.
// Each is sorted by its counted verdicts for o that are fresh and unexpired:
// still_unhealthy when one is still unhealthy (too few regions for the
// quorum); else by the checks that held o out there (named in was, with
// their vantage when it names one): stopped_reporting when one of them has
// no such verdict any more (its canary stopped, or cannot reach the store:
// its last verdicts aged past max_age or expired, whatever the region's
// other checks still say), turned_healthy when one is healthy or
// degraded, unknown otherwise. The cause names the first of
// stopped_reporting, turned_healthy and unknown that is not empty: a check
// gone silent is not a recovery. attrs has the non-empty lists, the
// quorum, stopped_by (which limit ended each stopped region's verdicts:
// stoppedBy), max_age when it was that limit for one, and was.
//
// A region that would count as stopped while only failing sources hold its
// last verdicts (failing, see failingRegions) is not said to have stopped
// reporting: the cause is then clearedSource naming the source(s), with
// source_failing, expired (those regions) and expired_by (their limits).
// A region still unhealthy by last verdicts that no answering source holds
// (silent, see silentRegions: its canary died too, a moment after the
// first) is not still_unhealthy: it is stopped (expired when only failing
// stores hold it), its limit "source not answering since T".
func (pl *pool) clearedBecause(o *origin, was string, vs []reporting.Verdict, ahead []time.Duration, now time.Time, failing map[string][]string, silent map[string]time.Time) (string, []any) {
	rank := func(st reporting.State) int { // unhealthy > healthy/degraded > unknown
		switch st {
		case reporting.StateUnhealthy:
			return 3
		case reporting.StateHealthy, reporting.StateDegraded:
			return 2
		}
		return 1
	}
	var live []*reporting.Verdict // counted, fresh and unexpired
	for i := range vs {
		v := &vs[i]
		if v.Target != o.target || !pl.counts(v) || !fresh(v.At, now, pl.cfg.Verdicts.MaxAge) ||
			ahead != nil && ahead[i] > pl.cfg.Verdicts.MaxAge || !v.Expires.IsZero() && !now.Before(v.Expires) {
			continue
		}
		live = append(live, v)
	}
	// best is the highest state of the live verdicts of region r matching
	// c (any check when c is nil); ok is false when there is none.
	best := func(r string, c *heldCheck) (st reporting.State, ok bool) {
		for _, v := range live {
			if v.Region != r || c != nil && (v.Check != c.check || c.vantage != "" && v.Vantage != c.vantage) {
				continue
			}
			if s := v.Current(now); !ok || rank(s) > rank(st) {
				st, ok = s, true
			}
		}
		return st, ok
	}
	var stopped, healthy, unknown, still, limits []string
	var expired, expiredBy, sources []string // regions whose verdicts aged out while only failing sources hold them
	agedOut := false
	for _, h := range whyHeld(was) {
		name := h.region
		if name == "" {
			name = "(no region)"
		}
		st, ok := best(h.region, nil)
		if since, quiet := silent[h.region]; ok && st == reporting.StateUnhealthy && quiet {
			// Its last verdicts still count, but none of its sources
			// answers (both canaries died, a moment apart): it went
			// silent too, it is not still unhealthy.
			limit := "source not answering since " + since.UTC().Format(heldFormat)
			if len(failing[h.region]) > 0 {
				expired = append(expired, name)
				expiredBy = append(expiredBy, name+": "+limit)
				for _, s := range failing[h.region] {
					if !slices.Contains(sources, s) {
						sources = append(sources, s)
					}
				}
			} else {
				stopped = append(stopped, name)
				limits = append(limits, name+": "+limit)
			}
			continue
		}
		if ok && st == reporting.StateUnhealthy {
			still = append(still, name)
			continue
		}
		var gone []heldCheck
		if ok && len(h.checks) > 0 {
			// The region still reports: judge it by the checks that held
			// o out, not by another check's verdict.
			st, ok = "", false
			for i := range h.checks {
				s, has := best(h.region, &h.checks[i])
				switch {
				case !has:
					gone = append(gone, h.checks[i])
				case !ok || rank(s) > rank(st):
					st, ok = s, true
				}
			}
		}
		switch {
		case (!ok || len(gone) > 0) && len(failing[h.region]) > 0:
			expired = append(expired, name)
			limit := pl.stoppedBy(o, h.region, gone, vs, ahead)
			agedOut = agedOut || strings.Contains(limit, "max_age ")
			expiredBy = append(expiredBy, name+": "+limit)
			for _, s := range failing[h.region] {
				if !slices.Contains(sources, s) {
					sources = append(sources, s)
				}
			}
		case !ok || len(gone) > 0:
			stopped = append(stopped, name)
			limit := pl.stoppedBy(o, h.region, gone, vs, ahead)
			agedOut = agedOut || strings.Contains(limit, "max_age ")
			limits = append(limits, name+": "+limit)
		case rank(st) == 2:
			healthy = append(healthy, name)
		default:
			unknown = append(unknown, name)
		}
	}
	var attrs []any
	cause := clearedQuorum
	if len(expired) > 0 {
		sort.Strings(sources)
		cause = clearedSource + " (" + strings.Join(sources, ", ") + ")"
		attrs = append(attrs, "source_failing", strings.Join(sources, ", "), "expired", strings.Join(expired, ","))
	}
	for _, l := range []struct {
		key, cause string
		regions    []string
	}{
		{"stopped_reporting", clearedExpired, stopped},
		{"turned_healthy", clearedHealthy, healthy},
		{"unknown", clearedUnknown, unknown},
		{"still_unhealthy", "", still},
	} {
		if len(l.regions) == 0 {
			continue
		}
		if cause == clearedQuorum && l.cause != "" {
			cause = l.cause
		}
		attrs = append(attrs, l.key, strings.Join(l.regions, ","))
	}
	attrs = append(attrs, "quorum", pl.cfg.Verdicts.Quorum)
	if len(stopped) > 0 {
		attrs = append(attrs, "stopped_by", strings.Join(limits, ", "))
	}
	if len(expired) > 0 {
		attrs = append(attrs, "expired_by", strings.Join(expiredBy, ", "))
	}
	if agedOut {
		attrs = append(attrs, "max_age", pl.cfg.Verdicts.MaxAge.String())
	}
	return cause, append(attrs, "was", was)
}

// stoppedBy says which limit ended the counted verdicts of o from region r
// that no longer count: of the one that counted longest, "max_age D" when it
// grew older than the pool's max_age first, "expires T" when its own expiry
// (the canary's expire_after, on this proxy's clock) came first; "no verdict
// left" when the sources no longer return any. With gone (checks that held o
// out and stopped while the region's other checks still report) only their
// verdicts are looked at, and the limit is led by the check's name:
// "asset: expires T".
func (pl *pool) stoppedBy(o *origin, r string, gone []heldCheck, vs []reporting.Verdict, ahead []time.Duration) string {
	maxAge := pl.cfg.Verdicts.MaxAge
	var end time.Time
	limit, check := "no verdict left", ""
	if len(gone) > 0 {
		check = gone[0].check
	}
	for i := range vs {
		v := &vs[i]
		if v.Target != o.target || v.Region != r || !pl.counts(v) || v.At.IsZero() ||
			ahead != nil && ahead[i] > maxAge {
			continue
		}
		if gone != nil && !slices.ContainsFunc(gone, func(c heldCheck) bool {
			return v.Check == c.check && (c.vantage == "" || v.Vantage == c.vantage)
		}) {
			continue
		}
		e, l := v.At.Add(maxAge), "max_age "+maxAge.String()
		if !v.Expires.IsZero() && v.Expires.Before(e) {
			e, l = v.Expires, "expires "+v.Expires.UTC().Format(heldFormat)
		}
		if end.IsZero() || e.After(end) {
			end, limit, check = e, l, v.Check
		}
	}
	if gone != nil {
		return check + ": " + limit
	}
	return limit
}

// heldRegion is one region named in a reason verdictDown gave, with the
// checks that held the origin unhealthy there.
type heldRegion struct {
	region string // "" for "(no region)"
	checks []heldCheck
}

// heldCheck is one check named in a reason, and the vantage it names when
// its region had several ("asset (status; vantage vm2)").
type heldCheck struct {
	check, vantage string
}

// whyHeld lists the regions named in a reason verdictDown gave ("unhealthy
// in 2 region(s), quorum 2: eu: home (timeout); us: asset (status; vantage
// vm2)"), each with the checks named there (eu: home; us: asset from
// vantage vm2); none for another text.
func whyHeld(why string) []heldRegion {
	_, rest, ok := strings.Cut(why, "), quorum ")
	if !ok || !strings.HasPrefix(why, "unhealthy in ") {
		return nil
	}
	if _, rest, ok = strings.Cut(rest, ": "); !ok {
		return nil
	}
	var out []heldRegion
	for _, part := range splitOutside(rest, "; ") {
		name, list, _ := strings.Cut(part, ": ")
		if name == "(no region)" {
			name = ""
		}
		h := heldRegion{region: name}
		for _, e := range splitOutside(list, ", ") {
			if c := heldCheckOf(e); c.check != "" {
				h.checks = append(h.checks, c)
			}
		}
		out = append(out, h)
	}
	return out
}

// heldCheckOf parses one check of a reason: "NAME" or "NAME (DETAIL)"
// (verdictDetail), the vantage being DETAIL's last part when it is
// "vantage V".
func heldCheckOf(e string) heldCheck {
	if !strings.HasSuffix(e, ")") {
		return heldCheck{check: e}
	}
	depth := 0
	for i := len(e) - 1; i >= 0; i-- {
		switch e[i] {
		case ')':
			depth++
		case '(':
			if depth--; depth > 0 {
				continue
			}
			if i == 0 || e[i-1] != ' ' {
				return heldCheck{check: e}
			}
			c := heldCheck{check: e[:i-1]}
			parts := splitOutside(e[i+1:len(e)-1], "; ")
			if v, ok := strings.CutPrefix(parts[len(parts)-1], "vantage "); ok {
				c.vantage = v
			}
			return c
		}
	}
	return heldCheck{check: e}
}

// splitOutside splits s at each sep that is outside parentheses.
func splitOutside(s, sep string) []string {
	var out []string
	depth, from := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '(':
			depth++
		case s[i] == ')' && depth > 0:
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], sep):
			out = append(out, s[from:i])
			from = i + len(sep)
			i += len(sep) - 1
		}
	}
	return append(out, s[from:])
}

// applyVerdicts sets or clears each origin's verdict flag; max_ejected can
// keep a verdict-down origin in service.
func (pl *pool) applyVerdicts(vs []reporting.Verdict, now time.Time) {
	pl.applyVerdictsAhead(vs, nil, now)
}

// applyVerdictsAhead is applyVerdicts with, per verdict, how far its own
// date is ahead of now (rebase): one further ahead than this pool's max_age
// does not count, whatever other pools allow.
func (pl *pool) applyVerdictsAhead(vs []reporting.Verdict, ahead []time.Duration, now time.Time) {
	pl.applyVerdictsFrom(vs, ahead, now, nil, nil)
}

// applyVerdictsFrom is applyVerdictsAhead with, per region, the failing
// sources that alone hold its last verdicts (failingRegions): an origin
// those verdicts held out returns with a line blaming the source, not the
// region; and since when no source of a region answers (silentRegions):
// the line does not call such a region still unhealthy.
func (pl *pool) applyVerdictsFrom(vs []reporting.Verdict, ahead []time.Duration, now time.Time, failing map[string][]string, silent map[string]time.Time) {
	for _, o := range pl.origins {
		down, why := pl.verdictDown(o, vs, ahead, now)
		switch {
		case down && !o.has(flagVerdict):
			pl.mu.Lock()
			ok := pl.mayEject(o)
			var yielded *origin
			var rule string
			if !ok && pl.ejectedCount() == pl.allowedEjected() {
				// Verdicts outrank the passive rules, which a client can
				// trigger: an origin only they hold out gives its place.
				if yielded, rule = pl.yieldPassive(now); yielded != nil {
					ok = pl.mayEject(o)
				}
			}
			changed := ok && o.set(flagVerdict, why, now)
			if changed {
				o.mu.Lock()
				o.tookSlot = ""
				if yielded != nil {
					o.tookSlot = fmt.Sprintf("took the max_ejected %s place of %s, whose passive ejection (%s) ended early", pl.cfg.MaxEjected, yielded.name, rule)
				}
				o.mu.Unlock()
			}
			pl.mu.Unlock()
			if yielded != nil {
				pl.returnedEarly(yielded, now)
				attrs := []any{"pool", pl.name, "origin", yielded.name, "passive", rule,
					"for", o.name, "verdicts", why, "max_ejected", pl.cfg.MaxEjected.String()}
				if !yielded.Available() {
					attrs = append(attrs, "still", yielded.stillOut())
				}
				pl.log.Warn("proxy: passive ejection ended early: max_ejected makes room for an origin verdicts say is down", attrs...)
			}
			if changed {
				takenOutNow(o) // cut the tries waiting at it (ejectcut.go)
			}
			if !ok {
				o.m.ejectRefused[ReasonVerdict].Inc()
				o.mu.Lock()
				first := o.verdictSeen != why
				o.verdictSeen = why
				o.why[bit(flagVerdict)] = ""
				o.mu.Unlock()
				if first {
					pl.log.Warn("proxy: verdicts say origin is down but max_ejected keeps it in service",
						"pool", pl.name, "origin", o.name, "why", why, "max_ejected", pl.cfg.MaxEjected.String())
				}
				continue
			}
			if changed {
				o.mu.Lock()
				o.verdictSeen = ""
				o.mu.Unlock()
				o.m.ejections[ReasonVerdict].Inc()
				o.m.available.Set(0)
				pl.log.Warn("proxy: origin down by verdicts", "pool", pl.name, "origin", o.name, "why", why)
			}
		case down:
			o.mu.Lock()
			o.why[bit(flagVerdict)] = why
			o.mu.Unlock()
		case !down && o.has(flagVerdict):
			o.mu.Lock()
			was := o.why[bit(flagVerdict)]
			o.mu.Unlock()
			if o.clear(flagVerdict, now) {
				o.mu.Lock()
				o.why[bit(flagVerdict)] = why // the note below the quorum, if any
				o.mu.Unlock()
				o.m.available.Set(b2f(o.Available()))
				cause, attrs := pl.clearedBecause(o, was, vs, ahead, now, failing, silent)
				msg := "proxy: verdicts cleared origin"
				if !o.Available() {
					msg += "; origin still out"
					attrs = append(attrs, "still", o.stillOut())
				}
				pl.log.Info(msg+": "+cause, append([]any{"pool", pl.name, "origin", o.name}, attrs...)...)
			}
		default:
			// The verdict reason of an origin in service is the note
			// below the quorum, if any (verdict_below_quorum in the API).
			o.mu.Lock()
			o.verdictSeen = ""
			if !o.has(flagVerdict) {
				o.why[bit(flagVerdict)] = why
			}
			o.mu.Unlock()
		}
	}
}

// HTTPSource reads a canary's verdicts over HTTP: GET base/api/v1/verdicts
// returning a JSON array of reporting.Verdict in its wire form. base is the
// canary agent's URL ("http://canary:9090"); a URL that already ends in
// /api/v1/verdicts is used as is. client nil means a client with a 10s
// timeout. Verdicts older than maxAge are dropped on this side; those dated
// more than maxAge ahead are kept, for the proxy to report and ignore.
func HTTPSource(base string, client *http.Client) reporting.Source {
	u := base
	if pu, err := url.Parse(base); err == nil {
		// The path is joined before the query: "http://c:9470/?token=T"
		// asks /api/v1/verdicts?token=T.
		if p := strings.TrimSuffix(pu.Path, "/"); !strings.HasSuffix(p, "/api/v1/verdicts") {
			pu.Path = p + "/api/v1/verdicts"
			pu.RawPath = ""
		}
		u = pu.String()
	}
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	// No password or query value in logs, errors, metrics or /healthz; the
	// user name stays ("http://vigil:xxxxx@canary:9470/…").
	name := u
	if pu, err := url.Parse(u); err == nil {
		units.RedactQuery(pu)
		name = pu.Redacted()
	}
	return &httpSource{url: u, name: name, client: client}
}

type httpSource struct {
	url    string
	name   string // url without its password
	client *http.Client
}

var _ reporting.Source = (*httpSource)(nil)

// String is the verdicts URL, password redacted.
func (s *httpSource) String() string { return s.name }

// maxVerdictsBody bounds the verdicts document read from a canary: 16 MiB,
// about 25,000 verdicts of 700 bytes (long check and target names and an
// error message; typical ones take 400). A larger answer is refused
// (errVerdictsTooLarge) and counts as a failed read of that source: the
// decoder would otherwise hold the whole document and its verdicts in
// memory, per canary.
const maxVerdictsBody = 16 << 20

// errVerdictsTooLarge is the read error of a verdicts answer over
// maxVerdictsBody.
var errVerdictsTooLarge = fmt.Errorf("answer larger than the %d MiB limit for a verdicts document", maxVerdictsBody>>20)

// capReader passes on the first n bytes of r and fails with
// errVerdictsTooLarge when r has more (it reads one byte ahead to know).
type capReader struct {
	r io.Reader
	n int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n < 0 {
		return 0, errVerdictsTooLarge
	}
	if int64(len(p)) > c.n+1 {
		p = p[:c.n+1]
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	if c.n < 0 {
		return k - 1, errVerdictsTooLarge // the byte past the limit is not passed on
	}
	return k, err
}

func (s *httpSource) Verdicts(ctx context.Context, maxAge time.Duration) ([]reporting.Verdict, error) {
	return s.VerdictsFor(ctx, maxAge, reporting.VerdictFilter{})
}
