package alerting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/reporting"
)

// Options are the Alerter's collaborators. Every field is optional.
type Options struct {
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Log receives evaluation and delivery logs. Default slog.Default().
	Log *slog.Logger
	// Registry receives the alerter's metrics. Default: a private registry
	// (metrics are then not exported).
	Registry *prometheus.Registry
	// HTTPClient delivers notifications. Default: a client with the
	// default transport; each request is bounded by retry.timeout. Its
	// CheckRedirect is not used: deliveries never follow a redirect (a
	// 3xx answer is a failed delivery).
	HTTPClient *http.Client
	// Redact, if set, is applied to every delivery error before it is
	// logged or kept for DeliveryFailures, after the receiver's own
	// secrets are hidden (see newEndpoint): for values the alerter cannot
	// know are secret, such as ${NAME} values interpolated into the config
	// elsewhere than a secret field. Default nil: none.
	Redact func(string) string
	// WriteHealth, if set, reports whether this process's own verdict
	// writes are failing (a full disk, a store that refuses them): while
	// it returns an error, dead-man alerts say so, as the likely reason
	// the verdicts stopped. Default nil: not known.
	WriteHealth func() error
	// StatePath is a JSON file that keeps alert and group state across
	// restarts: New restores it, and every evaluation or delivery result
	// that changes the firing set, a pending timer, what a group was told
	// or what a receiver has not accepted rewrites it atomically. After a
	// restart a still-firing alert is not notified again before
	// repeat_interval from its last notification, and one whose condition
	// cleared meanwhile gets its resolved notification on the first
	// evaluation; a notification a receiver had not accepted (its
	// delivery failed, or was cut short by the shutdown) is sent to that
	// receiver on the first evaluation. A file that cannot be read or used
	// is logged and renamed to StatePath+".bad". Default "": state lives
	// in memory only and a restart starts fresh.
	StatePath string
}

// Alerter evaluates the rules over a HistorySource and notifies receivers.
// Its methods are safe for concurrent use.
type Alerter struct {
	src         reporting.HistorySource
	now         func() time.Time
	log         *slog.Logger
	client      *http.Client
	metrics     *metrics
	redact      func(string) string // Options.Redact; nil for none
	writeHealth func() error        // Options.WriteHealth; nil for none
	flog        *deliveryLog        // failed deliveries' log lines, across reloads

	evalMu sync.Mutex     // serialises Evaluate
	hb     heartbeatState // alerting.heartbeat's pings
	rcache rollupCaches   // guarded by evalMu
	// arrived is when each latest verdict was first read, to date
	// verdicts on this clock (see arrivals.rebase). Guarded by evalMu.
	arrived arrivals

	statePath string         // Options.StatePath; "" for none
	sil       silences       // ad-hoc silences (SilencesHandler)
	saveMu    sync.Mutex     // serialises saves; taken before mu
	savedKey  string         // change key of the last saved state; guarded by saveMu
	saveFail  saveFailureLog // failed saves being logged; guarded by saveMu
	// readFailedAt is the time of the last evaluation whose store reads
	// failed; zero if none. Guarded by evalMu. See evalDeadMan.
	readFailedAt time.Time
	// hist are the alert transitions (HistoryHandler).
	hist history
	// kick asks Run for an evaluation now (a silence was added or
	// ended); buffered 1, so kicks while one waits are one evaluation.
	kick chan struct{}

	mu     sync.Mutex // guards the fields below
	cfg    Config
	slos   []SLO
	links  linker
	disp   *dispatcher
	states map[string]*alertState // by fingerprint
	groups map[string]*groupState // by group key
	seen   map[string]seenPair
	// checks are the check names of the running config (SetChecks); nil:
	// not known, every check seen can be dead.
	checks map[string]bool
	// pairs are the configured targets of each check (SetPairs); nil: not
	// known.
	pairs map[string]map[string]bool
	// oneRegion are the checks only one region judges (SetOneRegion).
	oneRegion map[string]bool
	// disabled are the checks of the running config with disabled: true,
	// with their targets (SetDisabledPairs); pools the proxy pools, with
	// their origins (SetPools). Only silences look at them: a silence may
	// name them before any alert of theirs fires.
	disabled map[string]map[string]bool
	pools    map[string]map[string]bool
	// streamOwed are the resolved alerts each stream receiver has not
	// accepted, by receiver name.
	streamOwed map[string]*owed
	// missed are, by receiver, the alerts (by fingerprint) that resolved
	// before it accepted any notification of them as firing, since it
	// last accepted a notification: told in the line logged when its
	// failure stops being reported (clearUnowed).
	missed map[string]map[string]Alert
	// queuedTo are the receivers queued a notification by the running
	// notify.
	queuedTo map[string]bool
	nextID   uint64 // id of the last notification queued
	closed   bool

	// former are the groups notified under an earlier group_by, as
	// regroup left them, until group_interval after their last
	// notification (see formerWait).
	former []formerGroup
}

// alertState tracks one alert from the first evaluation its condition held.
type alertState struct {
	alert        Alert
	pendingSince time.Time
	firing       bool
	// clearedSince is, for a firing alert whose condition stopped
	// holding, the first evaluation that found it gone: the alert keeps
	// firing until keep_firing_for after it (see keepFiringFor). Zero
	// while the condition holds.
	clearedSince time.Time
	// streamedTo are the stream receivers (Alertmanager) it was sent to
	// as active, by name: those hold it, are sent it while a maintenance
	// window silences it and are sent its resolve.
	streamedTo map[string]bool
	// streamedAll: restored from a state file that did not name the
	// stream receivers (or from a group's notified alerts), so every
	// stream receiver taking its severity counts as holding it. Set until
	// the next evaluation's notifyStream turns it into streamedTo.
	streamedAll bool
	// streamedIn is, by stream receiver, the id of the notification that
	// was the first to send it the alert (see beforeSendStream). Not kept
	// in the state file.
	streamedIn map[string]uint64
}

// holds reports whether stream receiver w holds the alert as active.
func (st *alertState) holds(w *worker) bool {
	return st.streamedTo[w.name] || (st.streamedAll && w.takes(alertRoute(st.alert)))
}

// streamed reports whether any stream receiver holds the alert.
func (st *alertState) streamed() bool {
	return len(st.streamedTo) > 0 || st.streamedAll
}

// groupState tracks what a notification group last told its receivers.
type groupState struct {
	firstSeen time.Time
	lastSent  time.Time
	lastSet   string           // sorted fingerprints of the last firing notification
	notified  map[string]bool  // fingerprints sent as firing and not yet as resolved
	resolved  []Alert          // resolved since the last notification, notified ones only
	owed      map[string]*owed // by receiver: what it has not accepted yet
	// told are the (non-stream) receivers that were sent the group's
	// firing alerts: each later notification goes to all of them, so each
	// saw every alert in notified. Only they are sent resolves; a receiver
	// added by a reload is sent the firing alerts at the next evaluation
	// and joins then. A receiver that leaves the config (or stops taking
	// the group's severity) leaves told.
	told map[string]bool
	// tier is the check tier the group's alerts had when it was first
	// seen firing (see route): kept while the group lives, so its
	// resolves go to the receivers its firing alerts went to.
	tier string
	// labels are the group's values of the alerting.group_by labels
	// (rule, check, severity by default): what receivers' filters look
	// at (see route).
	labels map[string]string
	// toldAll: while regroup builds the group, one of the groups it is
	// made of counted every receiver as told (told nil).
	toldAll bool
	// notBefore: a group first seen after a change of group_by, whose
	// first alert would have joined a group notified under the old
	// group_by less than group_interval before (formerWait), waits until
	// that group's last notification + group_interval, as that group's
	// change would have, instead of group_wait. Zero otherwise, and once
	// notified.
	notBefore time.Time
}

// alertRoute is what receivers' filters look at for one alert.
func alertRoute(x Alert) route {
	return route{rule: x.Rule, check: x.Check, severity: x.Severity, tier: x.Tier}
}

// routeOf is alertRoute with its group's tier when the group has one, so
// stream receivers (filtered per alert) follow the same route as the
// group's notifications. a.mu held.
func (a *Alerter) routeOf(x Alert) route {
	rt := alertRoute(x)
	if g := a.groups[a.cfg.groupKey(x)]; g != nil && g.tier != "" && g.labels["check"] == x.Check {
		rt.tier = g.tier
	}
	return rt
}

// route is what receivers' filters look at for the group: the rule, check
// and severity of its labels (alerting.group_by keeps those receivers
// filter on) and the tier of its alerts, taken once (from
// its firing alerts, or, for a group restored with only resolves or
// undelivered ones, from those) and kept until the group is forgotten. A
// check whose tier changes while its group lives (a reload) keeps its
// route until the group resolves.
func (g *groupState) route() route {
	if g.tier == "" {
		for _, r := range g.resolved {
			if r.Tier != "" {
				g.tier = r.Tier
				break
			}
		}
	}
	if g.tier == "" {
		for _, name := range sortedOwed(g.owed) {
			for _, r := range g.owed[name].resolved {
				if g.tier == "" && r.alert.Tier != "" {
					g.tier = r.alert.Tier
				}
			}
		}
	}
	return route{rule: g.labels["rule"], check: g.labels["check"], severity: g.labels["severity"], tier: g.tier}
}

func newGroupState(firstSeen time.Time, labels map[string]string) *groupState {
	return &groupState{firstSeen: firstSeen, notified: map[string]bool{}, owed: map[string]*owed{}, told: map[string]bool{},
		labels: labels}
}

// New validates cfg and slos (ValidateAndSetDefaults is called on both),
// registers the metrics, restores the state saved at Options.StatePath (if
// set and present) and starts one delivery worker per receiver. Call Close
// to stop the workers.
func New(cfg Config, slos []SLO, src reporting.HistorySource, o Options) (*Alerter, error) {
	if src == nil {
		return nil, errors.New("alerting: nil HistorySource")
	}
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		return nil, err
	}
	slos = append([]SLO(nil), slos...)
	if err := validateSLOs(slos); err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	// Deliveries never follow a redirect (see post): Go's client would
	// forward a receiver's custom headers (a webhook's X-Api-Key) to
	// wherever it points. A copy, so the caller's client is left as is.
	client := *o.HTTPClient
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	o.HTTPClient = &client
	m, err := newMetrics(o.Registry)
	if err != nil {
		return nil, err
	}
	a := &Alerter{
		src: src, now: o.Now, log: o.Log, client: o.HTTPClient, metrics: m, redact: o.Redact, writeHealth: o.WriteHealth,
		cfg: cfg, slos: slos, links: newLinker(cfg),
		states: map[string]*alertState{}, groups: map[string]*groupState{}, seen: map[string]seenPair{},
		streamOwed: map[string]*owed{}, missed: map[string]map[string]Alert{}, queuedTo: map[string]bool{},
		rcache: rollupCaches{}, arrived: arrivals{}, statePath: o.StatePath, kick: make(chan struct{}, 1),
	}
	m.lastEvalSuccess.Set(unixSeconds(a.now()))
	var dests map[string]string // the receivers' destinations the state was saved with
	if a.statePath != "" {
		dests = a.load()
		_, a.savedKey = a.snapshot(a.now())
	}
	a.sil.path = silencesPath(o.StatePath)
	if err := a.sil.load(); err != nil {
		a.log.Error("alerting: cannot read the ad-hoc silences: starting without them", "error", err)
	}
	a.hist.path = historyPath(o.StatePath)
	a.loadHistory()
	a.flog = newDeliveryLog(o.Now)
	a.disp = newDispatcher(cfg, a.client, a.log, m, a.delivered, a.beforeSend, a.redact, a.flog, nil)
	// A receiver whose url or key changed while vigil was stopped.
	a.forgetMoved(dests)
	return a, nil
}

// Reload swaps in a new configuration: rules, SLOs, receivers. Alert and
// group state is kept, so firing alerts neither re-notify nor resolve
// because of a reload. Deliveries queued for the old receivers are drained
// in the background (bounded by their retries). A receiver whose delivery
// settings are the same (sameDelivery: its filters may change) keeps its
// delivery failure (DeliveryFailures, the rejection, its run of failures
// in the log) and what it is owed; one whose settings changed starts with
// no failure, and one removed is forgotten: for each of those that was
// failing one line says so. A receiver whose destination changed (url,
// routing key or channel: see destination) is sent every firing alert
// anew at the next evaluation (forgetReceiver).
func (a *Alerter) Reload(cfg Config, slos []SLO) error {
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		return err
	}
	slos = append([]SLO(nil), slos...)
	if err := validateSLOs(slos); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errors.New("alerting: reload after Close")
	}
	old, dests := a.disp, a.destinations()
	a.cfg, a.slos, a.links = cfg, slos, newLinker(cfg)
	a.regroup()
	a.disp = newDispatcher(cfg, a.client, a.log, a.metrics, a.delivered, a.beforeSend, a.redact, a.flog, old)
	for _, w := range old.workers {
		nw := a.disp.worker(w.name)
		if nw != nil && nw.fail == w.fail {
			continue // the same delivery settings: its failure stays
		}
		msg, failing := w.failure()
		attrs := a.endFailure(w.name)
		if !failing {
			continue
		}
		attrs = append(attrs, "last_err", msg)
		if nw == nil {
			a.log.Warn("alerting: receiver removed by the reload while its deliveries were failing; no longer reported", attrs...)
		} else {
			a.log.Warn("alerting: receiver's delivery settings changed by the reload (kind, url, headers, key or tls): "+
				"its delivery failure is no longer reported; the next notification tells whether it works", attrs...)
		}
	}
	a.forgetMoved(dests)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_ = old.drain(ctx)
	}()
	return nil
}

// SetChecks tells the alerter the check names of the running config, the
// checks the canaries are expected to run: only those can be dead-man
// silent. A dead-man alert for a check not in names resolves at the next
// evaluation (a check removed from the config stops alerting at once
// instead of after dead_man.forget_after). Regions are not restricted: a
// configured check run by another region's canary is judged as well. Call
// it after New and after every Reload; a nil names (the default) means
// the checks are not known and every region × check in the store counts,
// for an alerter whose config has no checks section.
func (a *Alerter) SetChecks(names []string) {
	var m map[string]bool
	if names != nil {
		m = make(map[string]bool, len(names))
		for _, n := range names {
			m[n] = true
		}
	}
	a.mu.Lock()
	a.checks = m
	a.mu.Unlock()
}

// SetOneRegion tells the alerter which checks of the running config only
// one region judges (a push check with push.region: its pings reach the
// agents of that region alone). Their down, TTFB and burn-rate rules need
// that one region, whatever alerting.quorum says; other regions have no
// verdicts of them to agree with. Call it after New and after every Reload,
// with SetPairs.
func (a *Alerter) SetOneRegion(checks []string) {
	m := make(map[string]bool, len(checks))
	for _, c := range checks {
		m[c] = true
	}
	a.mu.Lock()
	a.oneRegion = m
	a.mu.Unlock()
}

// SetPairs tells the alerter the check × target pairs of the running
// config, as check name → target names. Only those pairs are judged by the
// down, certificate and burn-rate rules: the alerts of a pair that left the
// config (a target or check removed by a reload) resolve at the next
// evaluation, although its verdicts and rollups stay in the store. Call it
// after New and after every Reload, with SetChecks; nil (the default)
// means the pairs are not known and every pair in the store is judged.
func (a *Alerter) SetPairs(pairs map[string][]string) {
	m := nameSets(pairs)
	a.mu.Lock()
	a.pairs = m
	a.mu.Unlock()
}

// SetDisabledPairs tells the alerter the checks of the running config
// with disabled: true, as check name → target names. They are not judged
// (SetPairs leaves them out); a silence (POST /api/v1/silences) may name
// them, to hold their alerts once they are enabled again, and its answer
// says they are disabled. Call it after New and after every Reload, with
// SetPairs; nil: none.
func (a *Alerter) SetDisabledPairs(pairs map[string][]string) {
	m := nameSets(pairs)
	a.mu.Lock()
	a.disabled = m
	a.mu.Unlock()
}

// SetPools tells the alerter the proxy pools of the running config, as
// pool name → origin names (as the proxy names them in its signals and
// metrics: the origin's target, else its host:port). A live_errors alert's
// check is its pool and its target the origin, so a silence (POST
// /api/v1/silences) may name a pool × origin before its alert fires. Call
// it after New and after every Reload; nil: not known (a pool is then
// known to silences only by its firing alerts).
func (a *Alerter) SetPools(pools map[string][]string) {
	m := nameSets(pools)
	a.mu.Lock()
	a.pools = m
	a.mu.Unlock()
}

// nameSets is m with each list as a set; nil for nil.
func nameSets(m map[string][]string) map[string]map[string]bool {
	if m == nil {
		return nil
	}
	out := make(map[string]map[string]bool, len(m))
	for k, vs := range m {
		out[k] = make(map[string]bool, len(vs))
		for _, v := range vs {
			out[k][v] = true
		}
	}
	return out
}

// Run evaluates every evaluation_interval until ctx ends, starting at once,
// and at once when a silence is added or ended (SilencesHandler).
// Evaluation errors are counted and logged: the first one, then at most one
// line a minute with how many failed in a row, and a line when evaluations
// work again. Run returns when ctx is done.
// Call Close afterwards to drain deliveries. With no receivers and no
// alerting section written (so no config warning said so), it first logs
// at INFO that alerts notify nobody.
func (a *Alerter) Run(ctx context.Context) {
	defer func() {
		if r := recover(); r != nil {
			a.log.Error("alerting: panic in evaluation loop", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	a.mu.Lock()
	silent := len(a.cfg.Receivers) == 0 && len(a.cfg.set) == 0
	a.mu.Unlock()
	if silent {
		a.log.Info("alerting: no receivers (alerting.receivers): alerts are evaluated and shown on the status page and GET /api/v1/alerts, and notify nobody")
	}
	var failures evalFailureLog
	for {
		if err := a.Evaluate(ctx); ctx.Err() == nil {
			failures.record(a.log, a.now(), err)
		}
		a.mu.Lock()
		every := a.cfg.EvaluationInterval
		a.mu.Unlock()
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-a.kick:
			t.Stop()
		}
	}
}

// Evaluate runs every rule once at Options.Now, updates the alert states
// and queues the notifications that are due (nothing when
// alerting.disabled), then saves the state to Options.StatePath if it
// changed. Deliveries run in the background; Evaluate does not wait for
// them (each result that changes the state saves it). On a store error nothing
// changes (no alert resolves because the store is unreachable) and the
// error is returned; for the dead-man window plus WriterMaxBackoff after
// it, no new dead-man alert fires (see evalDeadMan).
func (a *Alerter) Evaluate(ctx context.Context) (err error) {
	defer func() { a.beat(err) }()
	a.evalMu.Lock()
	defer a.evalMu.Unlock()
	a.mu.Lock()
	cfg, slos, links := a.cfg, a.slos, a.links
	if cfg.Disabled {
		a.mu.Unlock()
		// Nothing to evaluate, on purpose: not an alerter that cannot.
		a.metrics.lastEvalSuccess.Set(unixSeconds(a.now()))
		return nil
	}
	seen := make(map[string]seenPair, len(a.seen))
	for k, v := range a.seen {
		seen[k] = v
	}
	checks, pairs, oneRegion := a.checks, a.pairs, a.oneRegion
	deadFiring := map[string]bool{}
	held := map[string]bool{}
	for _, st := range a.states {
		if st.firing && st.alert.Rule == RuleDeadMan {
			deadFiring[st.alert.Region+"\x00"+st.alert.Check] = true
		}
		if st.firing {
			held[heldKey(st.alert.Rule, st.alert.Check, st.alert.Target)] = true
		}
	}
	a.mu.Unlock()
	now := a.now()
	e := &evaluator{cfg: cfg, now: now, src: a.src, links: links, seen: seen, rc: a.rcache, arrived: a.arrived,
		readFailedAt: a.readFailedAt, deadFiring: deadFiring, checks: checks, pairs: pairs, oneRegion: oneRegion, held: held}
	if a.writeHealth != nil {
		if werr := a.writeHealth(); werr != nil {
			msg, _, _ := strings.Cut(werr.Error(), "\n")
			if a.redact != nil {
				msg = a.redact(msg)
			}
			e.writeErr = msg
		}
	}
	cands, err := e.run(ctx, slos)
	if err != nil {
		// Nothing changes: no alert resolves or fires on a failed read.
		a.readFailedAt = now
		a.metrics.evalErrors.Inc()
		return fmt.Errorf("alerting: evaluate: %w", err)
	}
	a.metrics.lastEvalSuccess.Set(unixSeconds(now))
	a.mu.Lock()
	a.seen = seen
	a.apply(now, cands, e.resolveNotes)
	if !a.closed {
		a.notify(now)
	}
	a.mu.Unlock()
	if a.statePath != "" {
		a.saveState(now)
		a.saveHistory()
	}
	return nil
}

// unixSeconds is t in Unix seconds, for a timestamp gauge.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// evaluator is one evaluation's inputs.
type evaluator struct {
	cfg   Config
	now   time.Time
	src   reporting.HistorySource
	links linker
	seen  map[string]seenPair
	rc    rollupCaches
	// arrived dates the latest verdicts on this clock (arrivals.rebase).
	arrived arrivals
	// readFailedAt is when the store's reads last failed (zero: never);
	// deadFiring holds the region+"\x00"+check of firing dead-man alerts.
	readFailedAt time.Time
	deadFiring   map[string]bool
	// writeErr is the first line of this process's failing verdict
	// writes (Options.WriteHealth); "" when they work or it is not known.
	writeErr string
	// checks are the configured check names (nil: not known); pairs the
	// configured targets by check (nil: not known).
	checks map[string]bool
	pairs  map[string]map[string]bool
	// oneRegion are the checks one region judges (their quorum is 1).
	oneRegion map[string]bool
	// held holds heldKey(rule, check, target) of the firing alerts: their
	// rules read stale verdicts as the last word (see quorumRule).
	held map[string]bool
	// intervals holds each check × target × region's run interval
	// (check+"\x00"+target+"\x00"+region), from its newest verdicts, for
	// the burn-rate rule's expected runs (counts.expected).
	intervals map[string]time.Duration
	// resolveNotes are, by heldKey, the summaries of firing alerts that
	// resolve for a stated reason (a live_errors origin drained: see
	// evalLive), which their resolve carries instead of the last one.
	resolveNotes map[string]string
}

func (e *evaluator) run(ctx context.Context, slos []SLO) ([]candidate, error) {
	latest, err := e.src.Verdicts(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("latest verdicts: %w", err)
	}
	// Ages and expiry count from when this alerter first read each
	// verdict, not from the region's clock: a region whose clock is slow
	// would otherwise look stale (dead-man alerts, never in a quorum).
	e.intervals = map[string]time.Duration{}
	for _, v := range latest {
		k := v.Check + "\x00" + v.Target + "\x00" + v.Region
		e.intervals[k] = max(e.intervals[k], v.Interval)
	}
	cands := e.evalLatest(e.arrived.rebase(latest, e.now))
	for _, s := range slos {
		if s.TTFBP95 > 0 && !e.cfg.TTFB.Disabled {
			cs, err := e.evalTTFB(ctx, s)
			if err != nil {
				return nil, err
			}
			cands = append(cands, cs...)
		}
		if s.Objective > 0 && !e.cfg.BurnRate.Disabled {
			cs, err := e.evalBurn(ctx, s)
			if err != nil {
				return nil, err
			}
			cands = append(cands, cs...)
		}
	}
	if !e.cfg.LiveErrors.Disabled {
		cs, err := e.evalLive(ctx, latest)
		if err != nil {
			return nil, err
		}
		cands = append(cands, cs...)
	}
	// Each alert carries its check's tier, from the check's newest verdict
	// (the dead-man rule's remembered ones for a check gone silent).
	tiers, newest := map[string]string{}, map[string]time.Time{}
	remembered := make([]reporting.Verdict, 0, len(e.seen))
	for _, s := range e.seen {
		remembered = append(remembered, s.last)
	}
	for _, vs := range [][]reporting.Verdict{latest, remembered} {
		for _, v := range vs {
			if v.Tier != "" && (tiers[v.Check] == "" || v.At.After(newest[v.Check])) {
				tiers[v.Check], newest[v.Check] = v.Tier, v.At
			}
		}
	}
	for i := range cands {
		if cands[i].Rule == RuleLiveErrors {
			// Its Check is a pool: no check page, no tier; the overview
			// shows the pool's origins.
			cands[i].finish()
			cands[i].StatusURL = e.links.overview()
			cands[i].RunbookURL = e.links.runbook(cands[i].Rule, cands[i].Check)
			continue
		}
		cands[i].Tier = tiers[cands[i].Check]
		cands[i].finish()
		cands[i].StatusURL = e.links.status(cands[i].Check, cands[i].Target)
		cands[i].RunbookURL = e.links.runbook(cands[i].Rule, cands[i].Check)
	}
	return cands, nil
}

// apply moves every alert through pending → firing → resolved; notes
// are the summaries of resolves by heldKey (evaluator.resolveNotes). a.mu
// held.
func (a *Alerter) apply(now time.Time, cands []candidate, notes map[string]string) {
	held := map[string]bool{}
	for _, c := range cands {
		fp := c.Fingerprint
		held[fp] = true
		st := a.states[fp]
		if st == nil {
			st = &alertState{pendingSince: now}
			a.states[fp] = st
		}
		start, prevSil := st.alert.StartsAt, st.alert.Silenced
		st.clearedSince = time.Time{}
		st.alert = c.Alert
		st.alert.StartsAt = start
		st.alert.Since = st.pendingSince
		st.alert.Silenced = a.silencedBy(now, c.Check, c.Target)
		a.noteSilence(now, st, prevSil)
		if !st.firing && now.Sub(st.pendingSince) >= c.hold {
			st.firing = true
			st.alert.StartsAt = now
			a.hist.add(now, EventFiring, st.alert, st.alert.Silenced, a.cfg.History)
			if st.alert.Silenced != "" {
				a.log.Info("alert firing, silenced", append(append([]any{"silenced_by", st.alert.Silenced}, logAttrs(c.Alert)...),
					"summary", c.Summary)...)
			} else {
				a.log.Info("alert firing", append(logAttrs(c.Alert), "summary", c.Summary)...)
			}
		}
	}
	for fp, st := range a.states {
		if held[fp] {
			continue
		}
		if st.firing && a.stillJudged(st.alert) {
			// keep_firing_for: a condition that comes back within it
			// continues this alert instead of resolving it and firing a
			// new one.
			if st.clearedSince.IsZero() {
				st.clearedSince = now
			}
			if now.Sub(st.clearedSince) < keepFiringFor(a.cfg, a.slos, st.alert) {
				prevSil := st.alert.Silenced
				st.alert.Silenced = a.silencedBy(now, st.alert.Check, st.alert.Target)
				a.noteSilence(now, st, prevSil)
				continue
			}
		}
		delete(a.states, fp)
		if !st.firing {
			continue
		}
		r := st.alert
		r.EndsAt = now
		r.Silenced = ""
		if n := notes[heldKey(r.Rule, r.Check, r.Target)]; n != "" {
			r.Summary = n
		}
		a.hist.add(now, EventResolved, r, "", a.cfg.History)
		attrs := append(logAttrs(r), "firing_for", now.Sub(r.StartsAt))
		if !st.clearedSince.IsZero() && now.After(st.clearedSince) {
			attrs = append(attrs, "condition_cleared_for", now.Sub(st.clearedSince))
		}
		a.log.Info("alert resolved", attrs...)
		if g := a.groups[a.cfg.groupKey(r)]; g != nil && g.notified[fp] {
			g.resolved = append(g.resolved, r)
			delete(g.notified, fp)
		}
		if st.streamed() {
			for _, w := range a.disp.workers {
				if w.stream && w.takes(a.routeOf(r)) && st.holds(w) {
					if a.streamOwed[w.name] == nil {
						a.streamOwed[w.name] = &owed{}
					}
					a.streamOwed[w.name].add(r)
				}
			}
		}
	}
	a.setActive()
}

// logAttrs are the attributes of the alert's `alert firing` and `alert
// resolved` log lines: rule, check, target, region (dead-man alerts only:
// left out when empty) and severity.
func logAttrs(al Alert) []any {
	attrs := []any{"rule", al.Rule, "check", al.Check, "target", al.Target}
	if al.Region != "" {
		attrs = append(attrs, "region", al.Region)
	}
	return append(attrs, "severity", al.Severity)
}

// setActive sets vigil_alerts_active from the states. a.mu held.
func (a *Alerter) setActive() {
	active := map[string]float64{}
	for _, st := range a.states {
		if st.firing {
			active[st.alert.Rule]++
		}
	}
	for _, r := range AllRules {
		a.metrics.active.WithLabelValues(r).Set(active[r])
	}
}

// silencedBy names the first maintenance window covering check at now,
// else the first ad-hoc silence covering check × target.
func (a *Alerter) silencedBy(now time.Time, check, target string) string {
	for i := range a.cfg.Maintenance {
		if a.cfg.Maintenance[i].Active(now, check) {
			return a.cfg.Maintenance[i].Name
		}
	}
	return a.sil.silenceBy(now, check, target)
}

// notify decides, per group, what is due and queues it; and, per
// receiver, what it did not accept and is due again. a.mu held.
func (a *Alerter) notify(now time.Time) {
	clear(a.queuedTo)
	a.pruneFormer(now)
	firing := map[string][]Alert{}
	var stream []*alertState
	for _, st := range a.states {
		if !st.firing {
			continue
		}
		k := a.cfg.groupKey(st.alert)
		if a.groups[k] == nil {
			a.groups[k] = newGroupState(now, a.cfg.groupLabels(st.alert))
			a.groups[k].notBefore = a.formerWait(now, st)
		}
		if g := a.groups[k]; g.tier == "" {
			g.tier = st.alert.Tier
		}
		if st.alert.Silenced == "" {
			firing[k] = append(firing[k], st.alert)
			stream = append(stream, st)
		} else if st.streamed() {
			// An Alertmanager that already holds it as active, with an
			// endsAt of the last send + resolve_timeout: left out, it
			// would expire there and Alertmanager would send a "resolved"
			// while the condition holds, and fire it anew when the window
			// ends. It stays active there, annotated silenced_by. An
			// alert that first fires inside the window is not sent (see
			// README), nor is it sent to an Alertmanager that does not
			// hold it (added by a reload during the window).
			stream = append(stream, st)
		}
	}
	for k, g := range a.groups {
		rt := g.route()
		// What is owed to a receiver that is gone or no longer takes the
		// group's severity (after a reload) cannot be delivered.
		for name := range g.owed {
			if w := a.disp.worker(name); w == nil || w.stream || !w.takes(rt) {
				delete(g.owed, name)
			}
		}
		if g.told == nil {
			// Restored from a state file written before told was kept:
			// every receiver taking the severity counts as told.
			g.told = map[string]bool{}
			for _, w := range a.disp.workers {
				if !w.stream && w.takes(rt) {
					g.told[w.name] = true
				}
			}
		}
		for name := range g.told {
			if w := a.disp.worker(name); w == nil || w.stream || !w.takes(rt) {
				delete(g.told, name)
			}
		}
		fs := firing[k]
		sortAlerts(fs)
		sortAlerts(g.resolved)
		set := fingerprints(fs)
		// Alerts notified as firing for the first time: each receiver
		// owes them until it accepts a notification listing them.
		var fresh []string
		for _, f := range fs {
			if !g.notified[f.Fingerprint] {
				fresh = append(fresh, f.Fingerprint)
			}
		}
		due := false
		switch {
		case len(fs) > 0 && g.lastSet == "":
			// A new episode: wait group_wait so alerts starting together
			// go out together.
			due = now.Sub(g.firstSeen) >= a.cfg.GroupWait
			if !g.notBefore.IsZero() {
				due = !now.Before(g.notBefore)
			}
		case len(fs) > 0:
			// A change waits group_interval after the last notification.
			// As in Alertmanager, a change is an alert not yet notified
			// as firing, or a resolve: an alert leaving the set because
			// it was silenced, or coming back into it, notified before,
			// when its silence ended, sends nothing of itself (the group
			// is notified again at repeat_interval, as if never silenced).
			due = (len(fresh) > 0 || len(g.resolved) > 0) && now.Sub(g.lastSent) >= a.cfg.GroupInterval ||
				now.Sub(g.lastSent) >= a.cfg.RepeatInterval
		default:
			// Nothing unsilenced fires: only resolved notices, even inside a
			// maintenance window (they close what was opened).
			due = len(g.resolved) > 0 && now.Sub(g.lastSent) >= a.cfg.GroupInterval
		}
		if due {
			for _, w := range a.disp.workers {
				if w.stream || !w.takes(rt) {
					continue
				}
				o := g.owed[w.name]
				// A receiver's failed resolves go out with the group's next
				// notification; resolves of alerts it never accepted as
				// firing are not sent to it, nor, to a receiver that was
				// never sent the group's firing alerts (added by a reload),
				// any resolve.
				told := g.told[w.name]
				resolved := g.resolved
				if o != nil {
					resolved = o.withoutUnaccepted(mergeResolved(g.resolved, o.retry()))
					a.noteMissed(w.name, o)
				}
				if !told {
					resolved = nil
				}
				if len(fs) == 0 && len(resolved) == 0 {
					// Nothing it was told about fires or resolved.
					if o != nil {
						o.firing, o.firingID = false, 0
						o.dropWaiting(nil)
						if o.empty() {
							delete(g.owed, w.name)
						}
					}
					continue
				}
				a.queue(g.owed, w, newNotification(k, g.labels, fs, resolved, now, a.cfg), len(fs) > 0)
				newToIt := fresh
				if !told && len(fs) > 0 {
					// Every firing alert is new to it.
					newToIt = strings.Split(set, ",")
					g.told[w.name] = true
				}
				if o := g.owed[w.name]; o != nil && len(newToIt) > 0 {
					o.sentFiring(newToIt, o.firingID)
				}
			}
			for _, f := range fs {
				g.notified[f.Fingerprint] = true
			}
			g.resolved = nil
			g.lastSent, g.lastSet, g.notBefore = now, set, time.Time{}
		} else {
			// A receiver that did not accept the group's last notification
			// gets it again (with the current firing alerts) after
			// retry.redeliver_backoff, doubling per failure in a row up to
			// retry.redeliver_max_backoff, or at once after a restart.
			for _, name := range sortedOwed(g.owed) {
				o := g.owed[name]
				if !o.due() || now.Before(o.redeliverAt(a.cfg.Retry.RedeliverBackoff, a.cfg.Retry.RedeliverMaxBackoff)) {
					continue
				}
				retry := o.withoutUnaccepted(o.retry())
				a.noteMissed(name, o)
				if len(fs) == 0 && len(retry) == 0 {
					// Firing alerts it missed are no longer firing unsilenced
					// (their resolve, if any, goes out with the group's).
					o.firing, o.firingID = false, 0
					o.dropWaiting(nil)
					if o.empty() {
						delete(g.owed, name)
					}
					continue
				}
				a.queue(g.owed, a.disp.worker(name), newNotification(k, g.labels, fs, retry, now, a.cfg), len(fs) > 0)
			}
			// A receiver told of the group that was never sent one of its
			// firing alerts, while another receiver accepted it (so the
			// group counts it notified): the silence that began while its
			// delivery waited took it out (beforeSend), or its delivery
			// failed and the alert was silenced before the redelivery. Now
			// that the alert fires unsilenced, it is sent the firing alerts
			// (PagerDuty: a trigger for those it lacks), rather than at
			// repeat_interval; the receivers that accepted it are not.
			if len(fs) > 0 && g.lastSet != "" {
				for _, w := range a.disp.workers {
					if w.stream || !w.takes(rt) || !g.told[w.name] {
						continue
					}
					if o := g.owed[w.name]; o != nil && !o.firing && !o.due() && o.unsent(fs) {
						a.queue(g.owed, w, newNotification(k, g.labels, fs, nil, now, a.cfg), true)
					}
				}
			}
			// A receiver added (or given the group's severity) by a reload
			// while the group fires is sent its firing alerts now, rather
			// than at the next change or repeat_interval; it hears their
			// resolves from then on.
			if len(fs) > 0 && g.lastSet != "" {
				for _, w := range a.disp.workers {
					if w.stream || !w.takes(rt) || g.told[w.name] {
						continue
					}
					a.queue(g.owed, w, newNotification(k, g.labels, fs, nil, now, a.cfg), true)
					g.told[w.name] = true
					if o := g.owed[w.name]; o != nil {
						o.sentFiring(strings.Split(set, ","), o.firingID)
					}
				}
			}
		}
		a.dropIdleGroup(k, g)
	}
	sort.Slice(stream, func(i, j int) bool { return alertLess(stream[i].alert, stream[j].alert) })
	a.notifyStream(stream, now)
	a.clearUnowed()
}

// noteMissed moves the alerts o dropped as never accepted by receiver to
// a.missed. a.mu held.
func (a *Alerter) noteMissed(receiver string, o *owed) {
	if o == nil || len(o.missed) == 0 {
		return
	}
	m := a.missed[receiver]
	if m == nil {
		m = map[string]Alert{}
		a.missed[receiver] = m
	}
	for _, x := range o.missed {
		m[x.Fingerprint] = x
	}
	o.missed = nil
}

// owes reports whether anything is owed to receiver: a notification of a
// group it has not accepted (or not yet been told the outcome of), or a
// resolve for a stream receiver. a.mu held.
func (a *Alerter) owes(receiver string) bool {
	if a.streamOwed[receiver] != nil {
		return true
	}
	for _, g := range a.groups {
		if g.owed[receiver] != nil {
			return true
		}
	}
	return false
}

// clearUnowed stops reporting the delivery failure of each receiver that
// is owed nothing, was queued nothing by this evaluation and has no
// delivery queued or in flight: every notification it did not accept was
// about alerts that resolved before it accepted them, which it is not
// sent (see outbox.go). No delivery is left whose success would clear
// the failure, so it would be reported (/healthz 503, the status page's
// failing deliveries) until the next alert, long after the receiver is
// back. A receiver whose last delivery was rejected (a 4xx other than
// 429, a redirect: see dispatcher.clearFailure) stays reported: it will
// reject the next page too. One line logs the run of failures it ends and
// the alerts the receiver missed; the next failure is logged as a new
// run. a.mu held, after notify queued this evaluation's notifications.
func (a *Alerter) clearUnowed() {
	for name := range a.missed {
		if a.disp.worker(name) == nil {
			delete(a.missed, name) // left the config
		}
	}
	for _, w := range a.disp.workers {
		if a.queuedTo[w.name] || a.owes(w.name) {
			continue
		}
		msg, ok := a.disp.clearFailure(w)
		if !ok {
			continue
		}
		a.log.Warn("alerting: receiver no longer reported failing: nothing is left to send it (the alerts it did not "+
			"accept have resolved); the next notification tells whether it works", append(a.endFailure(w.name), "last_err", msg)...)
	}
}

// endFailure ends receiver's run of failures in the log, so that its next
// failure is logged as a new run, and forgets the alerts it missed; it
// returns the attributes of the line that says so: the receiver, its run
// (failures, failing_since, last_failure) if it had one, and the alerts
// it missed. a.mu held.
func (a *Alerter) endFailure(receiver string) []any {
	missed := a.missed[receiver]
	delete(a.missed, receiver)
	attrs := []any{"receiver", receiver}
	if run, ok := a.flog.end(receiver); ok {
		attrs = append(attrs, "failures", run.failures,
			"failing_since", run.since.UTC().Format(time.RFC3339),
			"last_failure", run.latest.UTC().Format(time.RFC3339))
	}
	attrs = append(attrs, "missed_alerts", len(missed))
	if len(missed) > 0 {
		attrs = append(attrs, "missed", missedList(missed))
	}
	return attrs
}

// missedListMax bounds the alerts named by missedList.
const missedListMax = 10

// missedList names the alerts of m, sorted, as listAlerts does, at most
// missedListMax of them, then how many more.
func missedList(m map[string]Alert) string {
	as := make([]Alert, 0, len(m))
	for _, x := range m {
		as = append(as, x)
	}
	sortAlerts(as)
	return listAlerts(as, missedListMax)
}

// dropIdleGroup forgets group k once nothing of it fires, waits to be
// notified or is owed to a receiver. a.mu held.
func (a *Alerter) dropIdleGroup(k string, g *groupState) {
	if !a.groupHasFiring(k) && len(g.resolved) == 0 && len(g.notified) == 0 && len(g.owed) == 0 {
		delete(a.groups, k)
	}
}

// notifyStream queues, for every stream receiver (Alertmanager), the
// active alerts of the severities it takes (unsilenced ones, and silenced
// ones it holds: was sent before their window began) plus the resolved
// alerts it has not accepted yet. a.mu held.
func (a *Alerter) notifyStream(active []*alertState, now time.Time) {
	for name := range a.streamOwed {
		if w := a.disp.worker(name); w == nil || !w.stream {
			delete(a.streamOwed, name)
		}
	}
	for _, st := range active {
		// A receiver that left the config no longer holds anything.
		for name := range st.streamedTo {
			if w := a.disp.worker(name); w == nil || !w.stream {
				delete(st.streamedTo, name)
			}
		}
	}
	for _, w := range a.disp.workers {
		if !w.stream {
			continue
		}
		n := Notification{GroupKey: "", Status: StatusFiring, At: now}
		var fresh []*alertState // sent to w for the first time
		for _, st := range active {
			if !w.takes(a.routeOf(st.alert)) || (st.alert.Silenced != "" && !st.holds(w)) {
				continue
			}
			n.Firing = append(n.Firing, st.alert)
			if !st.holds(w) {
				fresh = append(fresh, st)
			}
			if st.streamedTo == nil {
				st.streamedTo = map[string]bool{}
			}
			st.streamedTo[w.name] = true
		}
		o := a.streamOwed[w.name]
		if o != nil {
			for _, x := range o.retry() {
				if w.takes(a.routeOf(x)) {
					n.Resolved = append(n.Resolved, x)
				}
			}
		}
		if len(n.Firing)+len(n.Resolved) == 0 {
			continue
		}
		a.queue(a.streamOwed, w, n, false)
		for _, st := range fresh {
			if st.streamedIn == nil {
				st.streamedIn = map[string]uint64{}
			}
			st.streamedIn[w.name] = a.nextID // the id queue gave n
		}
	}
	for _, st := range active {
		st.streamedAll = false
	}
}

func (a *Alerter) groupHasFiring(k string) bool {
	for _, st := range a.states {
		if st.firing && a.cfg.groupKey(st.alert) == k {
			return true
		}
	}
	return false
}

func fingerprints(as []Alert) string {
	fps := make([]string, len(as))
	for i, a := range as {
		fps[i] = a.Fingerprint
	}
	sort.Strings(fps)
	return strings.Join(fps, ",")
}

// Active returns the firing alerts (silenced ones included, with Silenced
// set), sorted by rule, check, target, region; empty, not nil, when none
// fires, so /api/v1/alerts answers [] rather than null.
func (a *Alerter) Active() []Alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []Alert{}
	for _, st := range a.states {
		if st.firing {
			out = append(out, st.alert)
		}
	}
	sortAlerts(out)
	return out
}

// DeliveryFailures maps each receiver whose last delivery failed (after all
// its retries) to that error; a later success clears it, and so does an
// evaluation that finds nothing owed to the receiver (the alerts of every
// notification it did not accept resolved first, and it is not sent their
// resolves) and no delivery to it queued or in flight: nothing is left
// whose success would clear it. A reload keeps it unless it changes the
// receiver's delivery settings or removes it (see Reload). The errors, as
// logged, have the receiver's secrets hidden (see newEndpoint): URL
// userinfo, query values and secret paths, header values, routing keys,
// also where the receiver's answer echoes them, and Options.Redact has
// been applied.
func (a *Alerter) DeliveryFailures() map[string]string {
	a.mu.Lock()
	d := a.disp
	a.mu.Unlock()
	return d.failures()
}

// Flush waits until every queued delivery has finished (success or final
// failure) or ctx ends.
func (a *Alerter) Flush(ctx context.Context) error {
	a.mu.Lock()
	d := a.disp
	a.mu.Unlock()
	return d.flush(ctx)
}

// Close stops the delivery workers: retries stop, and every queued or
// in-flight delivery gets one final attempt within min(retry.timeout, 2s)
// (or until ctx ends). It returns an error counting the notifications not
// delivered; with Options.StatePath those are saved as undelivered and
// sent after a restart. Evaluate after Close still evaluates but delivers
// nothing.
func (a *Alerter) Close(ctx context.Context) error {
	a.mu.Lock()
	a.closed = true
	d := a.disp
	a.mu.Unlock()
	err := d.close(ctx)
	if a.statePath != "" {
		a.saveState(a.now())
		a.saveHistory()
	}
	return err
}

// linker builds the links in notifications.
type linker struct{ statusBase, runbookTmpl string }

func newLinker(c Config) linker { return linker{c.StatusPageURL, c.RunbookURL} }

// status links to the check's page on the status page:
// {status_page_url}/check/C (?target=T when the alert names one).
// overview links to the status page's overview ("" without a base).
func (l linker) overview() string {
	if l.statusBase == "" {
		return ""
	}
	return strings.TrimSuffix(l.statusBase, "/") + "/"
}

func (l linker) status(check, target string) string {
	if l.statusBase == "" {
		return ""
	}
	u := strings.TrimSuffix(l.statusBase, "/") + "/check/" + url.PathEscape(check)
	if target != "" {
		u += "?" + url.Values{"target": {target}}.Encode()
	}
	return u
}

// artifact links to a failure artifact: {status_page_url}/artifacts/NAME,
// where the status page serves <data_dir>/artifacts. A verdict's artifact
// is a name relative to that directory; one stored by an older version is
// the file's path (absolute, or "<data_dir>/artifacts/NAME"), and maps to
// its base name when its directory is named "artifacts". Any other absolute
// path cannot be served and gets no link.
func (l linker) artifact(p string) string {
	if l.statusBase == "" || p == "" {
		return ""
	}
	p = strings.ReplaceAll(p, "\\", "/")
	if i := strings.LastIndex(p, "/"); i >= 0 {
		if dir := strings.TrimRight(p[:i], "/"); dir == "artifacts" || strings.HasSuffix(dir, "/artifacts") {
			p = p[i+1:]
		}
	}
	if strings.HasPrefix(p, "/") || (len(p) > 1 && p[1] == ':') {
		return ""
	}
	u := url.URL{Path: "/artifacts/" + p}
	return strings.TrimSuffix(l.statusBase, "/") + u.EscapedPath()
}

// runbook fills {rule} and {check} into runbook_url.
func (l linker) runbook(rule, check string) string {
	if l.runbookTmpl == "" {
		return ""
	}
	return strings.NewReplacer("{rule}", url.PathEscape(rule), "{check}", url.PathEscape(check)).Replace(l.runbookTmpl)
}
