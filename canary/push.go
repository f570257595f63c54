package canary

// Push (heartbeat) checks: a cron job or batch job pings the agent when it
// finishes (POST /api/v1/push/{check}), and may ping when it starts
// (.../start); the canary judges the check every interval from the pings
// it received, as it judges any other check: a pass while the last
// successful ping is no older than push.period + push.grace, a failure
// with cause push_missing when it is older (or when a started job sent no
// finish within push.max_runtime), and one with cause push_failed after a
// ping that reported the job failed, until the next successful one. A ping
// that changes what the judgement says, or that ends a started run, is
// judged at once (judgeAfterPing), and so is every fail ping. The last
// ping of each push check is kept under agent.data_dir (push-state.json),
// so a restart does not forget it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Push check limits and defaults.
const (
	// MinPushPeriod is the shortest push.period.
	MinPushPeriod = time.Second
	// MinPushGrace is the least default push.grace (10% of the period, at
	// least this).
	MinPushGrace = time.Minute
	// MaxPushInterval caps the default interval of a push check
	// (period ÷ 10, at least 1s, at most this).
	MaxPushInterval = time.Minute
	// MaxPushMessage caps a ping's msg, bytes (longer ones are cut, with "…").
	MaxPushMessage = 512
	// maxPushBody caps a ping's request body, bytes.
	maxPushBody = 4096
	// PushStateFile is the file under agent.data_dir holding every push
	// check's last ping.
	PushStateFile = "push-state.json"
)

// ErrPushKey marks a check key that a push check does not take.
var ErrPushKey = errors.New("a push check does not use it")

// PushSpec is a check's `push:` block: the check's job pings the agent,
// instead of the agent probing a target.
type PushSpec struct {
	// Period is the longest expected gap between two successful pings
	// (required, at least 1s).
	Period time.Duration `mapstructure:"period"`
	// Grace is how much later than Period a ping may come before the
	// check fails (default 10% of Period, at least 1m; an explicit 0s is
	// kept).
	Grace time.Duration `mapstructure:"grace"`
	// Token is the bearer token a ping must carry (a secret: write
	// ${NAME}). Empty: agent.admin_token.
	Token string `mapstructure:"token"`
	// MaxRuntime, when set, is how long after a start ping
	// (.../start) the job may run: a start without a success or fail
	// ping within it fails the check (push_missing). 0: no limit (the
	// start only measures the job's run time, and a start older than
	// period + grace measures none: see staleStart).
	MaxRuntime time.Duration `mapstructure:"max_runtime"`
	// Region, when set, is the only agent.region whose agents judge the
	// check and take its pings; agents of other regions leave it out (no
	// verdicts) and answer its pings 404. Empty: every agent that loads
	// the config judges it.
	Region string `mapstructure:"region"`

	// graceSet: the file set grace (an explicit 0s is kept).
	graceSet bool
}

// Deadline is how long after the last successful ping the check fails:
// Period + Grace.
func (s *PushSpec) Deadline() time.Duration { return s.Period + s.Grace }

// staleStart reports whether a start ping at started is too old at now
// to be the start of the run a finish ping at now ends: without
// max_runtime, older than Deadline (period + grace); such a start (a run
// that crashed without a finish, long ago) measures no run time. With
// max_runtime a start never goes stale: past the limit it fails the check,
// and the finish reports how long the run took.
func (s *PushSpec) staleStart(started, now time.Time) bool {
	return s.MaxRuntime == 0 && now.Sub(started) > s.Deadline()
}

// RunsIn reports whether an agent of region judges the check.
func (s *PushSpec) RunsIn(region string) bool { return s.Region == "" || s.Region == region }

// validatePush validates a push check (c.Push set) and fills its
// defaults: the keys of a probe are errors naming them, the interval
// defaults to period ÷ 10 (at least 1s, at most 1m) and expire_after to 3 ×
// the interval (defaults.interval and defaults.expire_after do not apply).
func (c *CheckConfig) validatePush(d Defaults) error {
	var errs []error
	no := func(key, why string) {
		errs = append(errs, fmt.Errorf("%s: %w: %s", key, ErrPushKey, why))
	}
	const pinged = "its job pings the agent (POST /api/v1/push/<check>); its verdicts have one target named after the check"
	if len(c.Targets) > 0 {
		no("targets", pinged)
	}
	if c.URL != "" {
		no("url", pinged)
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"http", c.HTTP != nil}, {"tcp", c.TCP != nil}, {"tls", c.TLS != nil}, {"dns", c.DNS != nil},
		{"grpc", c.GRPC != nil}, {"icmp", c.ICMP != nil}, {"script", c.Script != nil}} {
		if k.set {
			no(k.key, "a check is either a push check or a probe; split it in two checks")
		}
	}
	if c.Expect != nil && len(c.Expect.Keys()) > 0 {
		no("expect", "the pings are judged by push.period and push.grace, and status=fail")
	}
	if c.Cron != "" {
		no("cron", "interval says how often the deadline is judged (default push.period ÷ 10, 1s to 1m)")
	}
	if c.Timeout != 0 {
		no("timeout", "judging a push check sends nothing, so nothing can time out")
	}
	if c.Adaptive != nil {
		no("adaptive", "the interval only says how often the deadline is judged")
	}
	c.Expect = &checks.Expect{}

	s := c.Push
	s.Token = strings.TrimSpace(s.Token)
	switch {
	case s.Period == 0:
		errs = append(errs, errors.New("push.period: required: the longest expected gap between two pings of the job (e.g. 24h for a daily job)"))
	case s.Period < MinPushPeriod:
		errs = append(errs, fmt.Errorf("push.period: %s: must be at least %s", s.Period, MinPushPeriod))
	}
	if s.MaxRuntime < 0 || (s.MaxRuntime > 0 && s.MaxRuntime < MinPushPeriod) {
		errs = append(errs, fmt.Errorf("push.max_runtime: %s: must be at least %s (omit it for no limit)", s.MaxRuntime, MinPushPeriod))
	}
	switch {
	case s.Grace < 0:
		errs = append(errs, fmt.Errorf("push.grace: %s: must be positive (or 0s)", s.Grace))
	case s.Grace == 0 && !s.graceSet:
		s.Grace = max(s.Period/10, MinPushGrace)
	}
	if c.Tier == "" {
		c.Tier = reporting.TierSynthetic
	} else if c.Tier != reporting.TierShallow && c.Tier != reporting.TierDeep && c.Tier != reporting.TierSynthetic {
		errs = append(errs, fmt.Errorf("tier: %q: want shallow, deep or synthetic", c.Tier))
	}
	switch {
	case c.Interval < 0:
		errs = append(errs, fmt.Errorf("interval: must be positive, got %s", c.Interval))
	case c.Interval == 0:
		c.Interval = min(max(s.Period/10, time.Second), MaxPushInterval)
	case s.Period > 0 && c.Interval > s.Period:
		errs = append(errs, fmt.Errorf("interval: %s > push.period %s: the deadline would be judged less often than the job pings (omit interval for period ÷ 10, 1s to 1m)", units.ConfigDuration(c.Interval), units.ConfigDuration(s.Period)))
	}
	// A judgement reads memory: it needs no real timeout, but the run
	// context gets one.
	c.Timeout = min(time.Second, max(c.Interval*8/10, time.Millisecond))
	if c.Jitter == nil {
		c.Jitter = d.Jitter
	}
	errs = append(errs, c.hysteresisDefaults(d)...)
	// As the interval, expire_after does not come from defaults (sized for
	// the probes' interval): 3 × the push check's own interval.
	if c.ExpireAfter == 0 {
		c.ExpireAfter = 3 * c.Interval
	} else if c.ExpireAfter > 0 && c.Interval > 0 {
		errs = append(errs, c.expireFits(false))
	}
	a := false
	c.Adaptive = &a
	return errors.Join(errs...)
}

// pushProbe is what a push check compiles to. The canary judges a push
// check from its pings (Canary.judgePush) and never runs it; a caller that
// runs it anyway (vigil check, /probe) gets this error.
type pushProbe struct{ check string }

var _ checks.Check = pushProbe{}

// ErrPushNotRunnable says a push check cannot be run on demand.
var ErrPushNotRunnable = errors.New("a push check is judged by a running agent from the pings its job sends; it cannot be run on demand")

func (p pushProbe) Run(context.Context, checks.Target) checks.Result {
	return checks.Result{Cause: checks.CauseInternal, Err: fmt.Sprintf("check %q: %v", p.check, ErrPushNotRunnable), Start: time.Now()}
}

// pushState is what the agent knows of one push check's pings.
type pushState struct {
	// FirstSeen is when an agent first judged the check: with no
	// successful ping, the deadline counts from it.
	FirstSeen time.Time `json:"first_seen"`
	// LastOK is the latest successful ping (zero: none yet).
	LastOK time.Time `json:"last_ok,omitzero"`
	// LastPing is the latest ping, successful or not.
	LastPing time.Time `json:"last_ping,omitzero"`
	// Failed: the latest ping reported that the job failed.
	Failed bool `json:"failed,omitempty"`
	// Msg is the latest ping's message (bounded, on one line).
	Msg string `json:"msg,omitempty"`
	// Started is the latest start ping not yet followed by a success or
	// fail ping (zero: none). It does not move the deadline.
	Started time.Time `json:"started,omitzero"`
	// RunTime is how long the latest finished job ran: from its start
	// ping to its success or fail ping (0: it sent no start).
	RunTime time.Duration `json:"run_time_ns,omitempty"`
	// RunUnjudged: no judgement has reported RunTime yet (the next one
	// does, as its duration and TTFB).
	RunUnjudged bool `json:"run_unjudged,omitempty"`
}

// Ping kinds: what a ping says of the job.
type pingKind int

const (
	pingOK pingKind = iota
	pingFail
	pingStart
)

// pushOutcome is what a judgement said, as far as the state machine and
// the cause go.
type pushOutcome struct {
	ok    bool
	cause checks.Cause
}

func outcomeOf(res checks.Result) pushOutcome { return pushOutcome{res.OK, res.Cause} }

// pushFile is the persisted form of pushBook.
type pushFile struct {
	Checks map[string]pushState `json:"checks"`
}

// pushBook holds every push check's pings, and saves them to its file.
type pushBook struct {
	mu     sync.Mutex
	path   string // "" : memory only
	loaded string // the path last loaded
	states map[string]*pushState
	tokens map[string]string // check → token its pings must carry
	// judged is what each check's latest judgement in this process said
	// (judge); pending marks the checks for which a ping asked for a
	// judgement that no judgement has made yet (record).
	judged  map[string]pushOutcome
	pending map[string]bool
	log     *slog.Logger
}

// sync follows a reload: it loads the state file the first time (or when
// agent.data_dir moved), keeps the state of every push check still in
// pairs, starts one for each new one (FirstSeen now) and drops the others,
// then saves the file if anything changed.
func (b *pushBook) sync(cfg *Config, pairs []Pair, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	want := map[string]string{}
	for i := range pairs {
		if s := pairs[i].Check.Push; s != nil {
			tok := s.Token
			if tok == "" {
				tok = cfg.Agent.AdminToken
			}
			want[pairs[i].Check.Name] = tok
		}
	}
	b.tokens = want
	path := ""
	if cfg.Agent.DataDir != "" {
		path = filepath.Join(cfg.Agent.DataDir, PushStateFile)
	}
	b.path = path
	if b.states == nil {
		b.states = map[string]*pushState{}
	}
	if len(want) == 0 && len(b.states) == 0 && b.loaded == "" {
		return // no push check, nor ever one: no file
	}
	changed := false
	if path != "" && b.loaded != path {
		b.loaded = path
		if raw, err := os.ReadFile(path); err == nil {
			var f pushFile
			if err := json.Unmarshal(raw, &f); err != nil {
				b.log.Warn("push: cannot read the saved pings; push checks start afresh (their deadlines count from now)", "file", path, "err", err)
			} else {
				for name, st := range f.Checks {
					if cur, ok := b.states[name]; !ok || st.LastPing.After(cur.LastPing) {
						st := st
						b.states[name] = &st
					}
				}
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			b.log.Warn("push: cannot read the saved pings; push checks start afresh (their deadlines count from now)", "file", path, "err", err)
		}
		changed = true
	}
	for name := range want {
		if b.states[name] == nil {
			b.states[name] = &pushState{FirstSeen: now}
			changed = true
		}
	}
	for name := range b.states {
		if _, ok := want[name]; !ok {
			delete(b.states, name)
			delete(b.judged, name)
			delete(b.pending, name)
			changed = true
		}
	}
	if changed {
		b.saveLocked()
	}
}

// saveLocked writes the states to the file (0600, atomically). Called with
// b.mu held.
func (b *pushBook) saveLocked() {
	if b.path == "" {
		return
	}
	f := pushFile{Checks: make(map[string]pushState, len(b.states))}
	for name, st := range b.states {
		f.Checks[name] = *st
	}
	raw, err := json.MarshalIndent(f, "", "  ")
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(b.path), 0o700); err == nil {
			err = units.WriteFileAtomic(b.path, append(raw, '\n'), 0o600)
		}
	}
	if err != nil {
		b.log.Warn("push: cannot save the pings: a restart will forget the pings since the last save", "file", b.path, "err", err)
	}
}

// stateOf returns check's state, a new one first seen at now if it has
// none. b.mu held.
func (b *pushBook) stateOf(check string, now time.Time) *pushState {
	st := b.states[check]
	if st == nil {
		st = &pushState{FirstSeen: now}
		b.states[check] = st
	}
	return st
}

// get returns a copy of check's state.
func (b *pushBook) get(check string) (pushState, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.states[check]
	if st == nil {
		return pushState{}, false
	}
	return *st, true
}

// record notes a ping of check (spec s) at now and saves the file. A
// start ping only notes the start (a newer one replaces it); a success or
// fail ping after a start measures the job's run time (unless the start
// is stale: see staleStart) and clears the start. judge says the ping
// asks for a judgement at once: it changes what the latest judgement
// said, it ends a started run, or it is a fail ping, and no judgement
// asked for by an earlier ping is still to come (that one reads this ping
// too). The check is then pending until its next judgement.
func (b *pushBook) record(check string, kind pingKind, msg string, s *PushSpec, now time.Time) (_ pushState, judge bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stateOf(check, now)
	if kind == pingStart {
		st.Started = now
	} else {
		failed := kind == pingFail
		st.LastPing, st.Failed, st.Msg = now, failed, msg
		if !failed {
			st.LastOK = now
		}
		st.RunTime, st.RunUnjudged = 0, false
		if !st.Started.IsZero() && !now.Before(st.Started) && !s.staleStart(st.Started, now) {
			st.RunTime, st.RunUnjudged = now.Sub(st.Started), true
		}
		st.Started = time.Time{}
	}
	if !b.pending[check] {
		switch {
		case kind != pingStart && st.RunUnjudged:
			judge = true
		case kind == pingFail:
			// Every failure the job reports is judged, also while the
			// check already fails for it: the verdict then says this
			// ping's time and msg, and counts as a failed run.
			judge = true
		default:
			prev, ok := b.judged[check]
			judge = !ok || prev != outcomeOf(judgePushState(s, *st, now))
		}
		if judge {
			if b.pending == nil {
				b.pending = map[string]bool{}
			}
			b.pending[check] = true
		}
	}
	b.saveLocked()
	return *st, judge
}

// isPending reports whether a ping of check waits for its judgement.
func (b *pushBook) isPending(check string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending[check]
}

// judge judges check (spec s) at now from its pings, notes what it said
// and that no ping waits for a judgement any more, and that the latest
// run time is reported (by this judgement).
func (b *pushBook) judge(check string, s *PushSpec, now time.Time) checks.Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stateOf(check, now)
	res := judgePushState(s, *st, now)
	if b.judged == nil {
		b.judged = map[string]pushOutcome{}
	}
	b.judged[check] = outcomeOf(res)
	delete(b.pending, check)
	if st.RunUnjudged {
		st.RunUnjudged = false
		b.saveLocked()
	}
	return res
}

// token returns the token check's pings must carry.
func (b *pushBook) token(check string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens[check]
}

// since is what a push check's deadline counts from: its last successful
// ping, or, with none, when the agent first judged it.
func (st pushState) since() time.Time {
	if !st.LastOK.IsZero() {
		return st.LastOK
	}
	return st.FirstSeen
}

// judgePush is the run of a push check: it reads the pings.
func (c *Canary) judgePush(p *Pair) checks.Result {
	return c.push.judge(p.Check.Name, p.Check.Push, c.now())
}

// overdue reports whether a started job has sent no finish within
// s.MaxRuntime at now.
func (st pushState) overdue(s *PushSpec, now time.Time) bool {
	return s.MaxRuntime > 0 && !st.Started.IsZero() && now.Sub(st.Started) > s.MaxRuntime
}

// judgePushState judges the pings st at now. The judgement that first
// sees a finished run's time (st.RunUnjudged) reports it as its duration
// and TTFB: one sample per job run, so percentiles, charts and TTFB SLOs
// are over the job's runs, and every other judgement has no TTFB (no
// sample).
func judgePushState(s *PushSpec, st pushState, now time.Time) checks.Result {
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	limits := fmt.Sprintf("period %s, grace %s", units.ConfigDuration(s.Period), units.ConfigDuration(s.Grace))
	res := checks.Result{Start: now, OK: true}
	last := "none since the check started at " + rfc(st.FirstSeen)
	if !st.LastOK.IsZero() {
		last = rfc(st.LastOK)
	}
	a := checks.AssertionResult{Name: "push", OK: true, Got: "last successful ping: " + last,
		Want: fmt.Sprintf("a successful ping at most %s ago (%s)", units.ConfigDuration(s.Deadline()), limits)}
	if s.MaxRuntime > 0 {
		a.Want += fmt.Sprintf(", and a finish at most %s after a start", units.ConfigDuration(s.MaxRuntime))
	}
	if st.RunUnjudged && st.RunTime > 0 {
		res.Phases.TTFB, res.Phases.Total = st.RunTime, st.RunTime
	}
	switch {
	case st.overdue(s, now):
		// The latest news: a run that started after the last ping (a
		// finish clears the start) is still going past its limit.
		res.OK, res.Cause = false, checks.CausePushMissing
		res.Err = fmt.Sprintf("started at %s, no finish within max_runtime %s", rfc(st.Started), units.ConfigDuration(s.MaxRuntime))
		a.OK, a.Got = false, fmt.Sprintf("started at %s, no success or fail ping since", rfc(st.Started))
	case st.Failed:
		res.OK, res.Cause = false, checks.CausePushFailed
		res.Err = "the job reported failure at " + rfc(st.LastPing)
		if st.Msg != "" {
			res.Err += ": " + st.Msg
		}
		a.OK, a.Got = false, fmt.Sprintf("status=fail at %s", rfc(st.LastPing))
	case now.Sub(st.since()) > s.Deadline():
		res.OK, res.Cause = false, checks.CausePushMissing
		if st.LastOK.IsZero() {
			res.Err = fmt.Sprintf("no push since the check started at %s (%s)", rfc(st.FirstSeen), limits)
		} else {
			res.Err = fmt.Sprintf("no push since %s (%s)", rfc(st.LastOK), limits)
		}
		a.OK = false
	}
	res.Assertions = []checks.AssertionResult{a}
	return res
}

// Ping outcomes counted in vigil_push_received_total{status}.
const (
	pushOK           = "ok"
	pushFail         = "fail"
	pushStart        = "start"
	pushUnauthorized = "unauthorized"
	pushBadRequest   = "bad_request"
	pushNotFound     = "not_found"
)

var pushStatuses = []string{pushOK, pushFail, pushStart, pushUnauthorized, pushBadRequest}

// pushMetrics are the push endpoint's collectors.
type pushMetrics struct {
	received *prometheus.CounterVec
	last     *prometheus.Desc
	runTime  *prometheus.Desc
	c        *Canary
}

func newPushMetrics(c *Canary) *pushMetrics {
	return &pushMetrics{c: c,
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_push_received_total",
			Help: "Pings received on POST /api/v1/push/{check}, by check and status: ok, fail (the job reported failure), start (.../start: the job started), unauthorized (missing or wrong token), bad_request; not_found with check=\"\" for an unknown check, or one that is not a push check of this agent.",
		}, []string{"check", "status"}),
		last: prometheus.NewDesc("vigil_push_last_success_timestamp_seconds",
			"When the push check's latest successful ping came, Unix seconds (absent before the first one).", []string{"check"}, nil),
		runTime: prometheus.NewDesc("vigil_push_last_run_duration_seconds",
			"How long the push check's latest finished job ran, from its start ping (.../start) to its success or fail ping, seconds (absent before the first such run, and after a finish without a start).", []string{"check"}, nil),
	}
}

func (m *pushMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.received.Describe(ch)
	ch <- m.last
	ch <- m.runTime
}

func (m *pushMetrics) Collect(ch chan<- prometheus.Metric) {
	m.received.Collect(ch)
	b := &m.c.push
	b.mu.Lock()
	defer b.mu.Unlock()
	for name := range b.tokens {
		st := b.states[name]
		if st == nil {
			continue
		}
		if !st.LastOK.IsZero() {
			ch <- prometheus.MustNewConstMetric(m.last, prometheus.GaugeValue, float64(st.LastOK.UnixNano())/1e9, name)
		}
		if st.RunTime > 0 {
			ch <- prometheus.MustNewConstMetric(m.runTime, prometheus.GaugeValue, st.RunTime.Seconds(), name)
		}
	}
}

// syncPushMetrics makes every push check's counters exist at 0, and
// drops those of removed checks.
func (m *pushMetrics) sync(pairs []Pair, prev []string) []string {
	var names []string
	for i := range pairs {
		if pairs[i].Check.Push != nil {
			names = append(names, pairs[i].Check.Name)
		}
	}
	for _, n := range prev {
		if !slices.Contains(names, n) {
			for _, s := range pushStatuses {
				m.received.DeleteLabelValues(n, s)
			}
		}
	}
	for _, n := range names {
		for _, s := range pushStatuses {
			m.received.WithLabelValues(n, s)
		}
	}
	m.received.WithLabelValues("", pushNotFound)
	return names
}

// pushUsage says what the push endpoint reads, for its 400s.
const pushUsage = "want GET, HEAD or POST /api/v1/push/<check>[/fail|/start] with optional parameters status=ok|fail and msg=<text> (query or form body), and Authorization: Bearer <token>"

// pingJudgeGap is the least time between two judgements of one push check
// that pings bring forward (judgeAfterPing).
const pingJudgeGap = time.Second

// servePush answers a ping: GET, HEAD or POST /api/v1/push/{check}, or
// .../{check}/fail (status=fail), or .../{check}/start (the job started).
// See Handler.
func (c *Canary) servePush(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("check")
	kind := pingOK
	switch {
	case strings.HasSuffix(r.URL.Path, "/fail"):
		kind = pingFail
	case strings.HasSuffix(r.URL.Path, "/start"):
		kind = pingStart
	}
	c.mu.Lock()
	e := c.byName[[2]string{name, name}]
	cfg := c.cfg
	c.mu.Unlock()
	var p *Pair
	if e != nil {
		p = e.pair.Load()
	}
	if p == nil || p.Check.Push == nil {
		c.pushM.received.WithLabelValues("", pushNotFound).Inc()
		apiError(w, http.StatusNotFound, pushNotFoundReason(cfg, name))
		return
	}
	if !units.BearerMatches(r, c.push.token(name)) {
		c.pushM.received.WithLabelValues(name, pushUnauthorized).Inc()
		c.authFail.Note(c.log, r)
		w.Header().Set("WWW-Authenticate", `Bearer realm="vigil"`)
		apiError(w, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer <push.token, or agent.admin_token without one>)")
		return
	}
	kind, msg, err := pushParams(w, r, kind)
	if err != nil {
		c.pushM.received.WithLabelValues(name, pushBadRequest).Inc()
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	now := c.now()
	st, judge := c.push.record(name, kind, msg, p.Check.Push, now)
	status := map[pingKind]string{pingOK: pushOK, pingFail: pushFail, pingStart: pushStart}[kind]
	c.pushM.received.WithLabelValues(name, status).Inc()
	c.judgeAfterPing(e, p, kind, judge)
	ans := map[string]any{
		"check": name, "status": status, "received_at": now.UTC(),
		"next_deadline": st.since().Add(p.Check.Push.Deadline()).UTC(),
	}
	if kind == pingStart && p.Check.Push.MaxRuntime > 0 {
		ans["finish_by"] = st.Started.Add(p.Check.Push.MaxRuntime).UTC()
	}
	if kind != pingStart && st.RunUnjudged {
		ans["run_time_ms"] = reporting.Ms(st.RunTime)
	}
	w.Header().Set("Cache-Control", "no-store")
	reporting.WriteJSON(w, http.StatusOK, ans)
}

// judgeAfterPing brings the next judgement of push check e forward to now
// after a ping, so that a success ping ends push_missing or push_failed,
// and a fail ping starts push_failed, at once rather than at the next
// interval. The judgement is the pair's next run, made by the scheduler
// as any run (state machine, store, metrics, alerts), and the regular slot
// it came before stays (as a confirm run's does).
//
// Not every ping is judged at once, so that pings cannot stand in for the
// hysteresis: only one that changes what the latest judgement said (it
// passes where that failed, fails where it passed, or fails for another
// cause) or that ends a started run (its run time is reported once, by
// the next judgement) — pushBook.record decides —, one judgement for all
// the pings that come before it is made, and at most one every
// pingJudgeGap per check (a later one is judged when the gap ends); but
// every fail ping is judged (each is a run of the job that failed, within
// the same gap), so its time and msg are in the verdict at once, also
// while the check already fails. So a burst of success pings is one
// judgement: with rise 2, a failed check is healthy after the ping's
// judgement and one scheduled judgement, as after two probes. A start ping with push.max_runtime also brings a judgement
// to just after the limit, so an overdue job is seen then rather than up
// to an interval later.
func (c *Canary) judgeAfterPing(e *entry, p *Pair, kind pingKind, judge bool) {
	wall := time.Now() // the schedule runs on the real clock
	if d := p.Check.Push.MaxRuntime; kind == pingStart && d > 0 {
		c.judgeAt(e, wall.Add(d+time.Millisecond), false)
	}
	if judge {
		c.judgeAt(e, wall, true)
	}
}

// judgeAt brings e's next run forward to at, unless it comes sooner;
// ping: the run a ping asked for, at most one every pingJudgeGap (a run
// within it is moved to its end).
func (c *Canary) judgeAt(e *entry, at time.Time, ping bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.removed || e.idx < 0 {
		return
	}
	if ping {
		if gap := e.pingAt.Add(pingJudgeGap); at.Before(gap) {
			at = gap
		}
		e.mu.Lock()
		done := e.done
		e.mu.Unlock()
		if done != nil {
			// A run is in flight: the scheduler would skip a run due
			// now. If it judges after the ping it reads it; if it judged
			// before, the ping still waits when it ends, and is judged
			// then.
			go c.judgeAfterRun(e, done)
			return
		}
	}
	if !at.Before(e.next) {
		return
	}
	if ping {
		e.pingAt = at
	}
	if e.plan.regular.IsZero() {
		e.plan.regular = e.next
	}
	e.next = at
	c.queue.fix(e)
	c.signal()
}

// judgeAfterRun waits for e's run in flight (done; at most
// pushRunWait) and then brings a judgement forward if a ping still waits
// for one.
func (c *Canary) judgeAfterRun(e *entry, done chan struct{}) {
	t := time.NewTimer(pushRunWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	if p := e.pair.Load(); p != nil && c.push.isPending(p.Check.Name) {
		c.judgeAt(e, time.Now(), true)
	}
}

// pushRunWait bounds judgeAfterRun's wait for a run in flight (a push
// check's run lasts microseconds once it has a slot of agent.concurrency).
const pushRunWait = 5 * time.Second

// pushParams reads a ping's status and msg from the query and, for POST,
// a form body. Any other parameter is an error, so a typo (stauts=fail)
// is not taken for a success; a token in the query string is refused.
func pushParams(w http.ResponseWriter, r *http.Request, path pingKind) (kind pingKind, msg string, err error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxPushBody)
	if err := r.ParseForm(); err != nil {
		return path, "", fmt.Errorf("%s: %v (a body is a form of at most %d bytes)", pushUsage, err, maxPushBody)
	}
	for k := range r.Form {
		switch k {
		case "status", "msg":
		case "token", "access_token":
			return path, "", fmt.Errorf("%s: a token is not taken from the query string or a form (it would land in logs and shell history): send it as Authorization: Bearer <token>", k)
		default:
			return path, "", fmt.Errorf("%s: %q: unknown parameter", pushUsage, k)
		}
	}
	switch s := r.Form.Get("status"); {
	case s == "":
		kind = path
	case path == pingStart:
		return path, "", fmt.Errorf("status: %q: a /start ping has no status (send the job's outcome when it ends: /api/v1/push/<check>, or /fail)", s)
	case s == "ok" || s == "success":
		if path == pingFail {
			return path, "", fmt.Errorf("status: %q contradicts the /fail path", s)
		}
		kind = pingOK
	case s == "fail" || s == "failure":
		kind = pingFail
	default:
		return path, "", fmt.Errorf("status: %q: want ok or fail", s)
	}
	return kind, pushMessage(r.Form.Get("msg")), nil
}

// pushMessage bounds a ping's message: on one line (control characters
// become spaces), at most MaxPushMessage bytes, valid UTF-8.
func pushMessage(s string) string {
	s = strings.ToValidUTF8(units.SingleLine(s), "\uFFFD")
	if len(s) <= MaxPushMessage {
		return s
	}
	cut := MaxPushMessage - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// pushNotFoundReason says why check takes no pings here.
func pushNotFoundReason(cfg *Config, name string) string {
	if cfg == nil {
		return fmt.Sprintf("no check named %q", name)
	}
	for i := range cfg.Checks {
		ch := &cfg.Checks[i]
		if ch.Name != name {
			continue
		}
		switch {
		case ch.Push == nil:
			return fmt.Sprintf("check %q is a %s check, not a push check (push:)", name, ch.Kind())
		case ch.Disabled:
			return fmt.Sprintf("push check %q is disabled", name)
		case !ch.Push.RunsIn(cfg.Agent.Region):
			return fmt.Sprintf("push check %q is judged in region %q (push.region), and this agent is in region %q: send its pings to an agent there", name, ch.Push.Region, cfg.Agent.Region)
		}
		return fmt.Sprintf("push check %q is judged by another shard of this config", name)
	}
	return fmt.Sprintf("no check named %q", name)
}

// validatePushTokens requires a token for every push check: push.token or
// agent.admin_token.
func (c *Config) validatePushTokens() []error {
	var errs []error
	for i := range c.Checks {
		ch := &c.Checks[i]
		if ch.Push != nil && ch.Push.Token == "" && c.Agent.AdminToken == "" {
			errs = append(errs, fmt.Errorf("checks[%d].push.token: required: pings must be authenticated; set push.token (e.g. ${BACKUP_PUSH_TOKEN}) or agent.admin_token", i))
		}
	}
	return errs
}
