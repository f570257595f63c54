package alerting

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"golang.org/x/net/http/httpguts"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/tlsclient"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// checkTiers are the check tiers receivers[].tiers may name.
var checkTiers = []string{reporting.TierShallow, reporting.TierDeep, reporting.TierSynthetic}

// Config errors tests compare with errors.Is.
var (
	ErrNoReceiverKind   = errors.New("needs exactly one of webhook, slack, pagerduty, alertmanager")
	ErrDuplicateName    = errors.New("duplicate name")
	ErrRequired         = errors.New("required")
	ErrNoObjective      = errors.New("needs objective or ttfb_p95")
	ErrBadURL           = errors.New("not an absolute http(s) URL")
	ErrBadCron          = errors.New("not a cron expression")
	ErrNotPositive      = units.ErrNotPositive
	ErrObjectiveRange   = errors.New("must be above 0% and below 100%")
	ErrUnknownSeverity  = errors.New("unknown severity (want page, ticket or warning)")
	ErrBackoffTooLarge  = errors.New("must not be below backoff")
	ErrIntervalTooSmall = errors.New("must be at least 1s")
	ErrBadGlob          = errors.New("bad glob")
	ErrEmptyCheck       = errors.New("empty")
	ErrUnknownTier      = errors.New("unknown tier (want shallow, deep or synthetic)")
	ErrGroupByLabel     = errors.New("not a group_by label (want rule, alertname, check, target, region, slo or severity)")
)

// Secret is a config string that never prints: String and MarshalText give
// "<redacted>" (empty stays empty), so a Secret in a log line, an error or a
// config dump does not leak. Use string(s) for the value.
type Secret string

// String implements fmt.Stringer with the value hidden.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "<redacted>"
}

// MarshalText hides the value in any text or JSON encoding.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// GoString hides the value from %#v.
func (s Secret) GoString() string { return `"` + s.String() + `"` }

// SLO is one element of the top-level `slos` list: an availability objective
// and/or a TTFB objective for a check, optionally for one target.
type SLO struct {
	// Name identifies the SLO in alerts and recording rules. Required, unique.
	Name string `mapstructure:"name"`
	// Check is the check name the SLO is about. Required.
	Check string `mapstructure:"check"`
	// Target restricts the SLO to one target; "" (default) means every
	// target of the check, each judged on its own.
	Target string `mapstructure:"target"`
	// Objective is the availability objective, e.g. 99.9% (share of runs
	// that pass). 0 (unset): no availability SLO.
	Objective units.Percent `mapstructure:"objective"`
	// TTFBP95 is the TTFB objective: the p95 of time to first byte over
	// Window must stay at or below it. 0 (unset): no TTFB SLO.
	TTFBP95 time.Duration `mapstructure:"ttfb_p95"`
	// Window is the SLO window. Default 30d for an availability SLO, 5m for
	// a TTFB-only SLO. The burn-rate windows (1h/5m … 3d/6h) are the
	// standard ones for a 30d window and are not scaled.
	Window time.Duration `mapstructure:"window"`

	// set holds the keys the file set (see SetKeys).
	set units.KeySet
}

// SetKeys records which keys of this SLO the config file set ("window",
// "objective"), so that an explicit 0 is an error rather than "unset":
// objective: 0%, ttfb_p95: 0s and window: 0s. Without SetKeys a 0 reads as
// omitted.
func (s *SLO) SetKeys(keys []string) { s.set = units.NewKeySet(keys) }

// ValidateAndSetDefaults sets the window default and checks the SLO.
func (s *SLO) ValidateAndSetDefaults() error {
	var errs []error
	if s.set["objective"] && s.Objective == 0 {
		errs = append(errs, fmt.Errorf("objective: 0%%: %w (omit the key for no availability SLO)", ErrObjectiveRange))
	}
	if s.set["ttfb_p95"] && s.TTFBP95 == 0 {
		errs = append(errs, fmt.Errorf("ttfb_p95: 0: %w (omit the key for no TTFB SLO)", ErrNotPositive))
	}
	if s.set["window"] && s.Window == 0 {
		errs = append(errs, fmt.Errorf("window: 0: %w (omit the key for the default, 30d with objective, else 5m)", ErrNotPositive))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if s.Name == "" {
		errs = append(errs, fmt.Errorf("name: %w", ErrRequired))
	}
	if s.Check == "" {
		errs = append(errs, fmt.Errorf("check: %w", ErrRequired))
	}
	if s.Objective == 0 && s.TTFBP95 == 0 {
		errs = append(errs, fmt.Errorf("objective: %w", ErrNoObjective))
	}
	if s.Objective != 0 && (s.Objective <= 0 || s.Objective >= 100) {
		errs = append(errs, fmt.Errorf("objective: %s: %w", s.Objective, ErrObjectiveRange))
	}
	if s.TTFBP95 < 0 {
		errs = append(errs, fmt.Errorf("ttfb_p95: %s: %w", s.TTFBP95, ErrNotPositive))
	}
	if s.Window < 0 {
		errs = append(errs, fmt.Errorf("window: %s: %w", s.Window, ErrNotPositive))
	}
	if s.Window == 0 {
		if s.Objective != 0 {
			s.Window = 30 * 24 * time.Hour
		} else {
			s.Window = 5 * time.Minute
		}
	}
	return errors.Join(errs...)
}

// ValidateSLOs checks the `slos` list as a whole: names are unique. Each
// element validates itself with ValidateAndSetDefaults (the config loader
// calls it per element; New calls both). Errors are prefixed "slos[i]".
func ValidateSLOs(slos []SLO) error {
	var errs []error
	seen := map[string]bool{}
	for i := range slos {
		if n := slos[i].Name; n != "" {
			if seen[n] {
				errs = append(errs, units.Prefix(fmt.Sprintf("slos[%d]", i), fmt.Errorf("name: %q: %w", n, ErrDuplicateName)))
			}
			seen[n] = true
		}
	}
	return errors.Join(errs...)
}

// validateSLOs runs every SLO's ValidateAndSetDefaults and ValidateSLOs.
func validateSLOs(slos []SLO) error {
	var errs []error
	for i := range slos {
		errs = append(errs, units.Prefix(fmt.Sprintf("slos[%d]", i), slos[i].ValidateAndSetDefaults()))
	}
	return errors.Join(append(errs, ValidateSLOs(slos))...)
}

// DownRule configures the down rule: at least quorum regions report fresh
// unhealthy verdicts for a check × target for For.
type DownRule struct {
	// Disabled turns the rule off. Default false.
	Disabled bool `mapstructure:"disabled"`
	// For is how long the condition must hold before the alert fires.
	// Default 1m when omitted; an explicit 0s (Config.SetKeys) fires on the
	// first evaluation that sees the condition, as Prometheus's `for: 0`.
	For time.Duration `mapstructure:"for"`
	// KeepFiringFor is how long a firing alert keeps firing after its
	// condition stopped holding (Prometheus's keep_firing_for); it resolves
	// only once the condition has been false that long, and the hold starts
	// over when it holds again. Default 0: it resolves on the first
	// evaluation with fewer than quorum regions unhealthy (a region's
	// verdict already needs `rise` passes to leave unhealthy).
	KeepFiringFor time.Duration `mapstructure:"keep_firing_for"`
	// Severity of the alert. Default page.
	Severity string `mapstructure:"severity"`
}

// TTFBRule configures the TTFB breach rule for SLOs with ttfb_p95.
type TTFBRule struct {
	// Disabled turns the rule off. Default false.
	Disabled bool `mapstructure:"disabled"`
	// For is how long the breach must hold before the alert fires. Default 0
	// (the SLO window already smooths).
	For time.Duration `mapstructure:"for"`
	// MinSamples is the number of runs with a TTFB a region needs in the
	// window for its p95 to count. Default 3.
	MinSamples int `mapstructure:"min_samples"`
	// KeepFiringFor is how long a firing alert keeps firing after the
	// breach stopped (Prometheus's keep_firing_for), so a p95 hovering at
	// the objective, which crosses it as single slow runs enter and leave
	// the window, gives one alert rather than one per crossing. Omitted:
	// the SLO's window, at most 1h (5m for the default TTFB window); an
	// explicit 0s (Config.SetKeys) resolves on the first evaluation
	// without a breach.
	KeepFiringFor time.Duration `mapstructure:"keep_firing_for"`
	// Severity of the alert. Default ticket.
	Severity string `mapstructure:"severity"`

	// keepDefault: KeepFiringFor was omitted (set by ValidateAndSetDefaults).
	keepDefault bool
}

// BurnRateRule configures the availability multi-window multi-burn-rate
// rule for SLOs with an objective.
type BurnRateRule struct {
	// Disabled turns the rule off. Default false.
	Disabled bool `mapstructure:"disabled"`
	// NoTicket turns off the slow (ticket) pairs 3×1d/2h and 1×3d/6h, which
	// read three days of rollups every evaluation. Default false.
	NoTicket bool `mapstructure:"no_ticket"`
	// MinRuns is the number of runs a region needs in a pair's long window
	// before that pair can count it as burning, so a new check (or a fresh
	// start) does not page on its first failed run: 1 failure in 5 runs is
	// a 200× burn of a 99.9% objective. Default 10. At a 30s interval the
	// 1h window holds 120 runs, so the guard only matters in a check's
	// first minutes and for very long intervals.
	MinRuns int `mapstructure:"min_runs"`
	// KeepFiringFor is how long a firing alert keeps firing after no pair
	// of its severity holds any more (Prometheus's keep_firing_for): an
	// error ratio that hovers at a factor crosses it with single runs, and
	// would otherwise fire, resolve and fire again within seconds (each a
	// new PagerDuty incident). It resolves only once no pair has held for
	// that long; the hold starts over when one holds again. Omitted: the
	// short window of the slowest pair that held at the alert's last
	// holding evaluation (5m for 1h/5m, 30m for 6h/30m, 2h for 1d/2h, 6h
	// for 3d/6h); an explicit 0s (Config.SetKeys) resolves on the first
	// evaluation where no pair holds.
	KeepFiringFor time.Duration `mapstructure:"keep_firing_for"`

	// keepDefault: KeepFiringFor was omitted (set by ValidateAndSetDefaults).
	keepDefault bool
}

// CertRule configures the certificate rule.
type CertRule struct {
	// Disabled turns the rule off. Default false.
	Disabled bool `mapstructure:"disabled"`
	// Severity of the alert. Default ticket.
	Severity string `mapstructure:"severity"`
}

// DeadManRule configures the dead-man rule.
type DeadManRule struct {
	// Disabled turns the rule off. Default false.
	Disabled bool `mapstructure:"disabled"`
	// Intervals is how many check intervals a region × check may go without
	// a verdict before the alert fires. Default 3.
	Intervals int `mapstructure:"intervals"`
	// For is how long a region × check must stay silent past Intervals
	// before the alert fires, so a process pause (SIGSTOP, a VM freeze)
	// that the canary catches up on after it does not fire and resolve at
	// once. Default 0: 2 × the check's interval.
	For time.Duration `mapstructure:"for"`
	// ForgetAfter drops a region × check that has been silent this long
	// (its alert resolves): a region retired, or a check removed while the
	// alerter does not know the configured checks (see
	// Alerter.SetChecks). Default 24h. A check whose window and pending
	// period reach it (a daily or cron check) is forgotten after twice
	// those instead (DeadManForgetFor), so its alert can fire.
	ForgetAfter time.Duration `mapstructure:"forget_after"`
	// Severity of the alert. Default ticket.
	Severity string `mapstructure:"severity"`
}

// QuorumLostRule configures the quorum_lost rule: fewer regions report a
// check than alerting.quorum (the others dead-man silent), so its down,
// ttfb, burn_rate and cert_expiry alerts cannot fire.
type QuorumLostRule struct {
	// Disabled turns the rule off. Default false.
	Disabled bool `mapstructure:"disabled"`
	// Severity of the alert. Default page: the check is unwatched.
	Severity string `mapstructure:"severity"`
}

// Maintenance is a recurring window during which notifications for its
// checks are silenced (alerts are still evaluated and listed as silenced).
type Maintenance struct {
	// Name labels the window in logs and Active(). Required.
	Name string `mapstructure:"name"`
	// Cron is the start schedule, five fields (minute hour dom month dow),
	// evaluated in UTC unless prefixed "CRON_TZ=Area/City ". Required.
	Cron string `mapstructure:"cron"`
	// Duration is how long each window lasts. Required.
	Duration time.Duration `mapstructure:"duration"`
	// Checks limits the window to these check names; empty: all checks.
	Checks []string `mapstructure:"checks"`

	sched cron.Schedule
	// durationSet records that the file wrote duration (Config.SetKeys), to
	// tell "required" from "must be positive".
	durationSet bool
}

// ValidateAndSetDefaults compiles the cron expression.
func (m *Maintenance) ValidateAndSetDefaults() error {
	var errs []error
	if m.Name == "" {
		errs = append(errs, fmt.Errorf("name: %w", ErrRequired))
	}
	switch {
	case m.Duration == 0 && !m.durationSet:
		errs = append(errs, fmt.Errorf("duration: %w (how long each window lasts, e.g. 2h)", ErrRequired))
	case m.Duration <= 0:
		errs = append(errs, fmt.Errorf("duration: %s: %w", m.Duration, ErrNotPositive))
	}
	if m.Cron == "" {
		errs = append(errs, fmt.Errorf("cron: %w", ErrRequired))
	} else {
		s, err := parseCron(m.Cron)
		if err != nil {
			errs = append(errs, fmt.Errorf("cron: %q: %w: %v", m.Cron, ErrBadCron, err))
		}
		m.sched = s
	}
	return errors.Join(errs...)
}

// parseCron is cron.ParseStandard without its panics: robfig/cron v3.0.1
// slices out of range on specs like "TZ=" (found by FuzzMaintenance).
func parseCron(spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("unparseable spec")
		}
	}()
	return cron.ParseStandard(spec)
}

// Active reports whether a window of m covers now and whether it applies to
// check.
func (m *Maintenance) Active(now time.Time, check string) bool {
	if m.sched == nil {
		return false
	}
	if len(m.Checks) > 0 {
		found := false
		for _, c := range m.Checks {
			found = found || c == check
		}
		if !found {
			return false
		}
	}
	// The latest start at or before now is within Duration of now exactly
	// when the first start after now-Duration is not after now.
	start := m.sched.Next(now.UTC().Add(-m.Duration))
	return !start.IsZero() && !start.After(now)
}

// WebhookConfig posts the generic JSON notification.
type WebhookConfig struct {
	// URL receives POST requests with a JSON body. Required. Secret: it may
	// carry a token.
	URL Secret `mapstructure:"url"`
	// Headers are added to every request (e.g. Authorization). Values are
	// secrets. Names keep the file's case (HTTP treats every case the
	// same); the config loader rejects two that differ only in case.
	Headers map[string]Secret `mapstructure:"headers"`
}

// SlackConfig posts to a Slack incoming webhook.
type SlackConfig struct {
	// URL is the incoming-webhook URL. Required. Secret.
	URL Secret `mapstructure:"url"`
	// Channel overrides the webhook's default channel. Optional.
	Channel string `mapstructure:"channel"`
}

// DefaultPagerDutyURL is the PagerDuty Events API v2 endpoint.
const DefaultPagerDutyURL = "https://events.pagerduty.com/v2/enqueue"

// PagerDutyConfig sends Events API v2 trigger/resolve events.
type PagerDutyConfig struct {
	// RoutingKey is the integration key of the PagerDuty service. Required.
	// Secret.
	RoutingKey Secret `mapstructure:"routing_key"`
	// URL is the events endpoint. Default DefaultPagerDutyURL.
	URL string `mapstructure:"url"`
}

// AlertmanagerConfig posts alerts to Alertmanager's API v2.
type AlertmanagerConfig struct {
	// URL is Alertmanager's base URL (http://host:9093); vigil posts to
	// URL/api/v2/alerts. Required.
	URL string `mapstructure:"url"`
}

// Receiver is one notification destination; exactly one kind is set.
type Receiver struct {
	// Name identifies the receiver in metrics and DeliveryFailures. Required, unique.
	Name string `mapstructure:"name"`
	// Severities limits the receiver to alerts of these severities (page,
	// ticket, warning); empty: all.
	Severities []string `mapstructure:"severities"`
	// Checks limits the receiver to alerts of these checks: names or
	// globs (path.Match: "*" any run of characters, "?" one, "[a-z]" a
	// class), e.g. "checkout-*"; empty: every check. Every rule's alert
	// names its check (dead_man's too: one per region × check).
	Checks []string `mapstructure:"checks"`
	// Tiers limits the receiver to alerts of checks of these tiers
	// (shallow, deep, synthetic), the tier the check's newest verdict
	// carries; empty: every tier. An alert whose check's tier is not known
	// goes only to receivers without tiers.
	Tiers []string `mapstructure:"tiers"`
	// Rules limits the receiver to alerts of these rules (down, ttfb,
	// burn_rate, cert_expiry, dead_man, live_errors); empty: every rule. E.g. dead_man
	// alone for the team that runs the canaries. Severities, Checks, Tiers
	// and Rules must all match.
	Rules []string `mapstructure:"rules"`

	Webhook      *WebhookConfig      `mapstructure:"webhook"`
	Slack        *SlackConfig        `mapstructure:"slack"`
	PagerDuty    *PagerDutyConfig    `mapstructure:"pagerduty"`
	Alertmanager *AlertmanagerConfig `mapstructure:"alertmanager"`

	// TLS configures the receiver's https client: ca_file (a PEM bundle
	// trusted instead of the system pool), server_name, cert_file and
	// key_file (a client certificate), insecure_skip_verify. Default:
	// verified against the system pool and the URL's host.
	TLS tlsclient.Config `mapstructure:"tls"`
}

// ValidateAndSetDefaults checks that exactly one kind is configured and its URL.
func (r *Receiver) ValidateAndSetDefaults() error {
	var errs []error
	if r.Name == "" {
		errs = append(errs, fmt.Errorf("name: %w", ErrRequired))
	}
	for i, s := range r.Severities {
		if !validSeverity(s) {
			errs = append(errs, fmt.Errorf("severities[%d]: %q: %w", i, s, ErrUnknownSeverity))
		}
	}
	for i, c := range r.Checks {
		if c == "" {
			errs = append(errs, fmt.Errorf("checks[%d]: %w (a check name or a glob such as \"checkout-*\")", i, ErrEmptyCheck))
		} else if _, err := path.Match(c, ""); err != nil {
			errs = append(errs, fmt.Errorf("checks[%d]: %q: %w: %v", i, c, ErrBadGlob, err))
		}
	}
	for i, t := range r.Tiers {
		if !slices.Contains(checkTiers, t) {
			errs = append(errs, fmt.Errorf("tiers[%d]: %q: %w", i, t, ErrUnknownTier))
		}
	}
	for i, rule := range r.Rules {
		if !slices.Contains(AllRules, rule) {
			errs = append(errs, fmt.Errorf("rules[%d]: %q: unknown rule (want one of %s)", i, rule, strings.Join(AllRules, ", ")))
		}
	}
	n := 0
	if r.Webhook != nil {
		n++
		errs = append(errs, checkURL("webhook.url", string(r.Webhook.URL), true))
		for _, k := range slices.Sorted(maps.Keys(r.Webhook.Headers)) {
			// Checked here, not at the first page: Go's client refuses to
			// send such a header, so every delivery would fail.
			switch {
			case !httpguts.ValidHeaderFieldName(k):
				errs = append(errs, fmt.Errorf("webhook.headers: %q is not a header name (letters, digits and !#$%%&'*+-.^_`|~, no spaces)", k))
			case !httpguts.ValidHeaderFieldValue(string(r.Webhook.Headers[k])):
				errs = append(errs, fmt.Errorf("webhook.headers.%s: the value holds a control character or line break (value not shown)", k))
			}
		}
	}
	if r.Slack != nil {
		n++
		errs = append(errs, checkURL("slack.url", string(r.Slack.URL), true))
	}
	if r.PagerDuty != nil {
		n++
		if r.PagerDuty.RoutingKey == "" {
			errs = append(errs, fmt.Errorf("pagerduty.routing_key: %w", ErrRequired))
		}
		if r.PagerDuty.URL == "" {
			r.PagerDuty.URL = DefaultPagerDutyURL
		}
		errs = append(errs, checkURL("pagerduty.url", r.PagerDuty.URL, false))
	}
	if r.Alertmanager != nil {
		n++
		errs = append(errs, checkURL("alertmanager.url", r.Alertmanager.URL, false))
		r.Alertmanager.URL = strings.TrimSuffix(r.Alertmanager.URL, "/")
	}
	if n != 1 {
		errs = append(errs, ErrNoReceiverKind)
	}
	errs = append(errs, units.Prefix("tls", r.TLS.Load()))
	if u := r.url(); r.TLS.Set() && strings.HasPrefix(strings.ToLower(u), "http://") {
		errs = append(errs, fmt.Errorf("tls: set, but the receiver's url is http: use https://"))
	}
	return errors.Join(errs...)
}

// url is the URL the receiver posts to ("" when no kind is set).
func (r *Receiver) url() string {
	switch {
	case r.Webhook != nil:
		return string(r.Webhook.URL)
	case r.Slack != nil:
		return string(r.Slack.URL)
	case r.PagerDuty != nil:
		return r.PagerDuty.URL
	case r.Alertmanager != nil:
		return r.Alertmanager.URL
	}
	return ""
}

// checkURL validates an http(s) URL; a secret URL is never echoed, any
// other as shownURL shows it (no userinfo, query values "…").
func checkURL(key, raw string, secret bool) error {
	if raw == "" {
		return fmt.Errorf("%s: %w", key, ErrRequired)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		if secret {
			return fmt.Errorf("%s: %w", key, ErrBadURL)
		}
		return fmt.Errorf("%s: %q: %w", key, shownURL(raw), ErrBadURL)
	}
	return nil
}

// shownURL is a URL that is not a secret as errors show it:
// units.RedactURL's form, or, for one without a host (url.Parse reads
// "http//user:pw@h/?k=v" as a path), with what looks like userinfo and
// the query cut: "http//…@h/?…".
func shownURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return units.RedactURL(raw)
	}
	if q := strings.Index(raw, "?"); q >= 0 {
		raw = raw[:q+1] + "…"
	}
	if at := strings.LastIndex(raw, "@"); at >= 0 {
		start := strings.LastIndex(raw[:at], "/") + 1
		raw = raw[:start] + "…" + raw[at:]
	}
	return raw
}

// RetryConfig bounds the retries of one delivery.
type RetryConfig struct {
	// Attempts is the total number of tries per delivery. Default 5.
	Attempts int `mapstructure:"attempts"`
	// Backoff is the wait before the first retry; it doubles per retry.
	// Default 1s.
	Backoff time.Duration `mapstructure:"backoff"`
	// MaxBackoff caps the wait between retries. Default 30s.
	MaxBackoff time.Duration `mapstructure:"max_backoff"`
	// Timeout bounds each HTTP request. Default 10s.
	Timeout time.Duration `mapstructure:"timeout"`
	// RedeliverBackoff is how long after a delivery failed for good (all
	// Attempts spent) the receiver is sent what it did not accept again,
	// firing alerts and resolves alike, whatever repeat_interval says. It
	// doubles with every failure in a row. Default 10s.
	RedeliverBackoff time.Duration `mapstructure:"redeliver_backoff"`
	// RedeliverMaxBackoff caps RedeliverBackoff's doubling. Default 5m.
	RedeliverMaxBackoff time.Duration `mapstructure:"redeliver_max_backoff"`
}

// Config is the `alerting` section.
type Config struct {
	// Disabled turns the alerter off. Default false.
	Disabled bool `mapstructure:"disabled"`
	// Quorum is how many regions must agree for down, TTFB, burn-rate and
	// certificate alerts. Default 1.
	Quorum int `mapstructure:"quorum"`
	// EvaluationInterval is how often Run evaluates the rules. Default 15s,
	// minimum 1s.
	EvaluationInterval time.Duration `mapstructure:"evaluation_interval"`
	// GroupWait delays the first notification of a new group (rule × check)
	// so alerts that start together are sent together. Default 0.
	GroupWait time.Duration `mapstructure:"group_wait"`
	// RepeatInterval re-sends a still-firing group's notification. Default 4h.
	RepeatInterval time.Duration `mapstructure:"repeat_interval"`
	// GroupBy are the labels whose values make a notification group:
	// alerts with the same values go out in one notification to the
	// webhook and Slack receivers. Labels: rule (alertname is the same),
	// check, target, region, slo, severity; severity is required.
	// Default [rule, check, severity]. ValidateAndSetDefaults sets it to
	// its canonical form: rule, check, target, region, slo, severity, in
	// that order, each once.
	GroupBy []string `mapstructure:"group_by"`
	// GroupInterval is the least time between two notifications of one
	// group when its set of alerts changes (an alert starts firing or
	// resolves); the changes in between go out together. Default 0: at
	// the first evaluation that sees the change.
	GroupInterval time.Duration `mapstructure:"group_interval"`
	// ResolveTimeout is the endsAt horizon vigil gives Alertmanager for
	// active alerts: if the alerter stops re-sending, Alertmanager resolves
	// them after it. Default 5m, at least 3 × evaluation_interval.
	ResolveTimeout time.Duration `mapstructure:"resolve_timeout"`

	Down     DownRule     `mapstructure:"down"`
	TTFB     TTFBRule     `mapstructure:"ttfb"`
	BurnRate BurnRateRule `mapstructure:"burn_rate"`
	// CertExpiryDays is the certificate-expiry horizon in days. Default 14.
	// The certificate rule fires when quorum regions report a leaf
	// certificate expiring within it (Verdict.CertExpiry) or a failed
	// certificate check (cause "cert"); the generated Prometheus rules
	// compare probe_ssl_earliest_cert_expiry with it.
	CertExpiryDays int         `mapstructure:"cert_expiry_days"`
	Cert           CertRule    `mapstructure:"cert"`
	DeadMan        DeadManRule `mapstructure:"dead_man"`
	// QuorumLost pages when a check's reporting regions drop below Quorum.
	QuorumLost QuorumLostRule `mapstructure:"quorum_lost"`
	// LiveErrors is the rule on the proxies' live traffic (live_errors).
	LiveErrors LiveErrorsRule `mapstructure:"live_errors"`
	// Heartbeat pings an external dead man's switch after successful
	// evaluations. Optional.
	Heartbeat HeartbeatConfig `mapstructure:"heartbeat"`
	// History bounds the alert transitions kept (GET
	// /api/v1/alerts/history, history.json beside the state file).
	History HistoryConfig `mapstructure:"history"`

	// StatusPageURL is the status page's base URL for links in
	// notifications (check page and failure screenshots). Optional.
	StatusPageURL string `mapstructure:"status_page_url"`
	// RunbookURL is linked from every notification; "{check}" and "{rule}"
	// are replaced. Optional.
	RunbookURL string `mapstructure:"runbook_url"`

	Maintenance []Maintenance `mapstructure:"maintenance"`
	Receivers   []Receiver    `mapstructure:"receivers"`
	Retry       RetryConfig   `mapstructure:"retry"`

	// set holds the keys the file set, relative to the section (see SetKeys).
	set units.KeySet
	// warnings are what ValidateAndSetDefaults changed of the file's values.
	warnings []string
}

// Warnings lists, after ValidateAndSetDefaults, the values it raised
// ("resolve_timeout: 30s is below 3 × evaluation_interval (15s): raised to
// 45s, …"), relative to the section. They are warnings, not errors: a file
// that ran before keeps running.
func (c *Config) Warnings() []string { return c.warnings }

// receiverWarnings: a written alerting section with no receiver notifies
// nobody (its alerts show on the status page and GET /api/v1/alerts
// only), and a receiver whose url is plain http to a host that is not
// loopback sends its credentials unencrypted, as store.influxdb warns
// about its token: a webhook's headers (Authorization, a token), the
// basic-auth user info or query parameters of any receiver's url, a
// PagerDuty routing_key (in every event's body), and a Slack webhook URL,
// whose path is the secret. Warnings, not errors: a config being built
// up, or a receiver on a trusted private network, is a choice that must
// not go unnoticed.
func (c *Config) receiverWarnings() []string {
	var warns []string
	if len(c.Receivers) == 0 && !c.Disabled && len(c.set) > 0 {
		warns = append(warns, "receivers: none: alerts fire on the status page and GET /api/v1/alerts only and notify nobody; add a webhook, slack, pagerduty or alertmanager receiver")
	}
	for i := range c.Receivers {
		r := &c.Receivers[i]
		for _, w := range r.TLS.Warnings() {
			warns = append(warns, fmt.Sprintf("receivers[%d].tls.%s", i, w))
		}
		if w := r.plainHTTPWarning(); w != "" {
			warns = append(warns, fmt.Sprintf("receivers[%d].%s", i, w))
		}
	}
	return warns
}

// plainHTTPWarning is the warning, relative to the receiver, about the
// credentials it would send over plain http to a host that is not
// loopback ("" when none): "webhook.url: http, not https: its headers
// (Authorization) travel unencrypted to hooks.example.com; …". It names
// the keys and header and parameter names, never a value.
func (r *Receiver) plainHTTPWarning() string {
	var kind string
	switch {
	case r.Webhook != nil:
		kind = "webhook"
	case r.Slack != nil:
		kind = "slack"
	case r.PagerDuty != nil:
		kind = "pagerduty"
	case r.Alertmanager != nil:
		kind = "alertmanager"
	default:
		return ""
	}
	u, err := url.Parse(r.url())
	if err != nil || !strings.EqualFold(u.Scheme, "http") || u.Host == "" || units.LoopbackHost(u.Hostname()) {
		return ""
	}
	creds := urlCredentials(u)
	switch {
	case r.Webhook != nil && len(r.Webhook.Headers) > 0:
		creds = append(creds, "headers ("+strings.Join(slices.Sorted(maps.Keys(r.Webhook.Headers)), ", ")+")")
	case r.PagerDuty != nil && r.PagerDuty.RoutingKey != "":
		creds = append(creds, "routing_key")
	case r.Slack != nil:
		// The incoming-webhook URL is the credential: whoever reads its
		// path can post to the channel.
		creds = append([]string{"URL path (a Slack webhook's path is its secret)"}, creds...)
	}
	if len(creds) == 0 {
		return ""
	}
	verb := "travels"
	if len(creds) > 1 || strings.HasPrefix(creds[0], "headers") || strings.HasPrefix(creds[0], "user and password") {
		verb = "travel"
	}
	list := creds[0]
	if n := len(creds); n > 1 {
		list = strings.Join(creds[:n-1], ", ") + " and " + creds[n-1]
	}
	return fmt.Sprintf("%s.url: http, not https: its %s %s unencrypted to %s; use https, or a loopback address for a receiver on this host",
		kind, list, verb, u.Hostname())
}

// urlCredentials names the credentials a URL carries, never their
// values: its user info (sent as basic auth) and its query string (a
// token=…).
func urlCredentials(u *url.URL) []string {
	var creds []string
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			creds = append(creds, "user and password (the URL's user info, sent as basic auth)")
		} else {
			creds = append(creds, "user name (the URL's user info, sent as basic auth)")
		}
	}
	if u.RawQuery != "" {
		// Not even the names: "?abc123" is a token without "=".
		creds = append(creds, "query string (a token in it)")
	}
	return creds
}

// RouteWarnings lists, relative to the section, each receivers[].checks
// entry that matches none of checks, the check names of the file
// ("receivers[1].checks[0]: \"legacy-*\" matches no check of this file
// …"). Warnings, not errors: a file read by `vigil alerter` may route
// checks that other agents run. None when checks is empty (the file
// defines no checks and cannot know them).
func (c *Config) RouteWarnings(checks []string) []string {
	if len(checks) == 0 {
		return nil
	}
	var warns []string
	for i, r := range c.Receivers {
		for j, p := range r.Checks {
			if !slices.ContainsFunc(checks, func(name string) bool { return matchCheck(p, name) }) {
				warns = append(warns, fmt.Sprintf("receivers[%d].checks[%d]: %q matches no check of this file: "+
					"the receiver gets alerts of such a check only if other agents' verdicts name it", i, j, p))
			}
		}
	}
	return warns
}

// matchCheck reports whether check name matches receivers[].checks entry
// p, a name or a glob. A bad glob matches nothing (ValidateAndSetDefaults
// rejects it).
func matchCheck(p, name string) bool {
	ok, err := path.Match(p, name)
	return ok && err == nil
}

// SetKeys records which keys the config file set, relative to the section
// ("down.for", "retry.attempts"), so that validation tells an explicit 0
// from an omitted key: an omitted key takes its default; an explicit 0 is
// an error where 0 has no meaning of its own (quorum, dead_man.intervals,
// retry.attempts, …) and is kept where it has one (down.for: 0s fires on
// the first evaluation; group_wait and ttfb.for default to 0;
// dead_man.for: 0 still means 2 × the check's interval). Without SetKeys
// every 0 reads as omitted.
func (c *Config) SetKeys(keys []string) { c.set = units.NewKeySet(keys) }

// explicitZeros rejects keys the file set to 0 where 0 has no meaning and
// an omitted key takes a non-zero default (retry.attempts: 0 used to mean 5).
func (c *Config) explicitZeros() []error {
	if c.set == nil {
		return nil
	}
	r := &c.Retry
	key := units.Zero
	keys := []units.ZeroKey{
		key("quorum", c.Quorum == 0, "1"),
		key("evaluation_interval", c.EvaluationInterval == 0, "15s"),
		key("repeat_interval", c.RepeatInterval == 0, "4h"),
		key("resolve_timeout", c.ResolveTimeout == 0, "5m"),
		key("ttfb.min_samples", c.TTFB.MinSamples == 0, "3"),
		key("burn_rate.min_runs", c.BurnRate.MinRuns == 0, "10; 1 counts a region from its first run"),
		key("cert_expiry_days", c.CertExpiryDays == 0, "14"),
		key("dead_man.intervals", c.DeadMan.Intervals == 0, "3"),
		key("dead_man.forget_after", c.DeadMan.ForgetAfter == 0, "24h"),
		key("retry.attempts", r.Attempts == 0, "5; 1 sends once without retrying"),
		key("retry.backoff", r.Backoff == 0, "1s"),
		key("retry.max_backoff", r.MaxBackoff == 0, "30s"),
		key("retry.timeout", r.Timeout == 0, "10s"),
		key("retry.redeliver_backoff", r.RedeliverBackoff == 0, "10s"),
		key("retry.redeliver_max_backoff", r.RedeliverMaxBackoff == 0, "5m"),
		key("history.max_entries", c.History.MaxEntries == 0, "1000"),
		key("history.max_age", c.History.MaxAge == 0, "7d"),
	}
	return c.set.ExplicitZeros(keys)
}

// ValidateAndSetDefaults sets every default and validates the section, with
// key paths relative to `alerting`.
func (c *Config) ValidateAndSetDefaults() error {
	errs := c.explicitZeros()
	add := func(err error) { errs = append(errs, err) }
	if c.Quorum < 0 {
		add(fmt.Errorf("quorum: %d: %w", c.Quorum, ErrNotPositive))
	}
	if c.Quorum == 0 {
		c.Quorum = 1
	}
	if c.EvaluationInterval == 0 {
		c.EvaluationInterval = 15 * time.Second
	}
	if c.EvaluationInterval < time.Second {
		add(fmt.Errorf("evaluation_interval: %s: %w", c.EvaluationInterval, ErrIntervalTooSmall))
	}
	if c.GroupWait < 0 {
		add(fmt.Errorf("group_wait: %s: %w", c.GroupWait, ErrNotPositive))
	}
	if c.RepeatInterval < 0 {
		add(fmt.Errorf("repeat_interval: %s: %w", c.RepeatInterval, ErrNotPositive))
	}
	if c.RepeatInterval == 0 {
		c.RepeatInterval = 4 * time.Hour
	}
	if c.GroupInterval < 0 {
		add(fmt.Errorf("group_interval: %s: %w", c.GroupInterval, ErrNotPositive))
	}
	add(c.validateGroupBy())
	if c.ResolveTimeout < 0 {
		add(fmt.Errorf("resolve_timeout: %s: %w", c.ResolveTimeout, ErrNotPositive))
	}
	if c.ResolveTimeout == 0 {
		c.ResolveTimeout = 5 * time.Minute
	}
	c.warnings = nil
	if c.ResolveTimeout >= 0 && c.ResolveTimeout < 3*c.EvaluationInterval {
		if c.set["resolve_timeout"] {
			c.warnings = append(c.warnings, fmt.Sprintf("resolve_timeout: %s is below 3 × evaluation_interval (%s): "+
				"raised to %s, so that an alert re-sent every evaluation does not expire in Alertmanager between two",
				c.ResolveTimeout, c.EvaluationInterval, 3*c.EvaluationInterval))
		}
		c.ResolveTimeout = 3 * c.EvaluationInterval
	}
	if c.Down.For < 0 {
		add(fmt.Errorf("down.for: %s: %w", c.Down.For, ErrNotPositive))
	}
	if c.Down.For == 0 && !c.set["down.for"] {
		c.Down.For = time.Minute
	}
	add(severity("down.severity", &c.Down.Severity, SeverityPage))
	if c.Down.KeepFiringFor < 0 {
		add(fmt.Errorf("down.keep_firing_for: %s: %w", c.Down.KeepFiringFor, ErrNotPositive))
	}
	if c.TTFB.KeepFiringFor < 0 {
		add(fmt.Errorf("ttfb.keep_firing_for: %s: %w", c.TTFB.KeepFiringFor, ErrNotPositive))
	}
	if c.BurnRate.KeepFiringFor < 0 {
		add(fmt.Errorf("burn_rate.keep_firing_for: %s: %w", c.BurnRate.KeepFiringFor, ErrNotPositive))
	}
	c.TTFB.keepDefault, c.BurnRate.keepDefault = c.KeepFiringDefaults()
	if c.TTFB.For < 0 {
		add(fmt.Errorf("ttfb.for: %s: %w", c.TTFB.For, ErrNotPositive))
	}
	if c.TTFB.MinSamples < 0 {
		add(fmt.Errorf("ttfb.min_samples: %d: %w", c.TTFB.MinSamples, ErrNotPositive))
	}
	if c.TTFB.MinSamples == 0 {
		c.TTFB.MinSamples = 3
	}
	add(severity("ttfb.severity", &c.TTFB.Severity, SeverityTicket))
	if c.BurnRate.MinRuns < 0 {
		add(fmt.Errorf("burn_rate.min_runs: %d: %w", c.BurnRate.MinRuns, ErrNotPositive))
	}
	if c.BurnRate.MinRuns == 0 {
		c.BurnRate.MinRuns = 10
	}
	if c.CertExpiryDays < 0 {
		add(fmt.Errorf("cert_expiry_days: %d: %w", c.CertExpiryDays, ErrNotPositive))
	}
	if c.CertExpiryDays == 0 {
		c.CertExpiryDays = 14
	}
	add(severity("cert.severity", &c.Cert.Severity, SeverityTicket))
	if c.DeadMan.Intervals < 0 {
		add(fmt.Errorf("dead_man.intervals: %d: %w", c.DeadMan.Intervals, ErrNotPositive))
	}
	if c.DeadMan.Intervals == 0 {
		c.DeadMan.Intervals = 3
	}
	if c.DeadMan.For < 0 {
		add(fmt.Errorf("dead_man.for: %s: %w", c.DeadMan.For, ErrNotPositive))
	}
	if c.DeadMan.ForgetAfter < 0 {
		add(fmt.Errorf("dead_man.forget_after: %s: %w", c.DeadMan.ForgetAfter, ErrNotPositive))
	}
	if c.DeadMan.ForgetAfter == 0 {
		c.DeadMan.ForgetAfter = 24 * time.Hour
	}
	add(severity("dead_man.severity", &c.DeadMan.Severity, SeverityTicket))
	add(severity("quorum_lost.severity", &c.QuorumLost.Severity, SeverityPage))
	add(c.LiveErrors.validate(c.set))
	add(c.Heartbeat.validate())
	add(c.History.validate())
	if c.StatusPageURL != "" {
		add(checkURL("status_page_url", c.StatusPageURL, false))
		c.StatusPageURL = strings.TrimSuffix(c.StatusPageURL, "/")
	}
	names := map[string]bool{}
	for i := range c.Maintenance {
		p := fmt.Sprintf("maintenance[%d]", i)
		c.Maintenance[i].durationSet = c.Maintenance[i].durationSet || c.set[p+".duration"]
		add(units.Prefix(p, c.Maintenance[i].ValidateAndSetDefaults()))
		if n := c.Maintenance[i].Name; n != "" && names["m\x00"+n] {
			add(units.Prefix(p, fmt.Errorf("name: %q: %w", n, ErrDuplicateName)))
		}
		names["m\x00"+c.Maintenance[i].Name] = true
	}
	for i := range c.Receivers {
		p := fmt.Sprintf("receivers[%d]", i)
		add(units.Prefix(p, c.Receivers[i].ValidateAndSetDefaults()))
		if n := c.Receivers[i].Name; n != "" && names["r\x00"+n] {
			add(units.Prefix(p, fmt.Errorf("name: %q: %w", n, ErrDuplicateName)))
		}
		names["r\x00"+c.Receivers[i].Name] = true
	}
	c.warnings = append(c.warnings, c.receiverWarnings()...)
	r := &c.Retry
	if r.Attempts < 0 {
		add(fmt.Errorf("retry.attempts: %d: %w", r.Attempts, ErrNotPositive))
	}
	for _, d := range []struct {
		key string
		val time.Duration
	}{{"backoff", r.Backoff}, {"max_backoff", r.MaxBackoff}, {"timeout", r.Timeout},
		{"redeliver_backoff", r.RedeliverBackoff}, {"redeliver_max_backoff", r.RedeliverMaxBackoff}} {
		if d.val < 0 {
			add(fmt.Errorf("retry.%s: %s: %w", d.key, d.val, ErrNotPositive))
		}
	}
	if r.Attempts == 0 {
		r.Attempts = 5
	}
	if r.Backoff == 0 {
		r.Backoff = time.Second
	}
	if r.MaxBackoff == 0 {
		r.MaxBackoff = 30 * time.Second
		if r.MaxBackoff < r.Backoff {
			r.MaxBackoff = r.Backoff
		}
	}
	if r.MaxBackoff >= 0 && r.MaxBackoff < r.Backoff {
		add(fmt.Errorf("retry.max_backoff: %s: %w %s", r.MaxBackoff, ErrBackoffTooLarge, r.Backoff))
	}
	if r.Timeout == 0 {
		r.Timeout = 10 * time.Second
	}
	if r.RedeliverBackoff == 0 {
		r.RedeliverBackoff = 10 * time.Second
	}
	if r.RedeliverMaxBackoff == 0 {
		r.RedeliverMaxBackoff = max(5*time.Minute, r.RedeliverBackoff)
	}
	if r.RedeliverMaxBackoff >= 0 && r.RedeliverMaxBackoff < r.RedeliverBackoff {
		add(fmt.Errorf("retry.redeliver_max_backoff: %s: %w %s (retry.redeliver_backoff)", r.RedeliverMaxBackoff, ErrBackoffTooLarge, r.RedeliverBackoff))
	}
	return errors.Join(errs...)
}

// Alert severities.
const (
	SeverityPage    = "page"
	SeverityTicket  = "ticket"
	SeverityWarning = "warning"
)

func validSeverity(s string) bool {
	return s == SeverityPage || s == SeverityTicket || s == SeverityWarning
}

func severity(key string, s *string, def string) error {
	if *s == "" {
		*s = def
		return nil
	}
	if !validSeverity(*s) {
		return fmt.Errorf("%s: %q: %w", key, *s, ErrUnknownSeverity)
	}
	return nil
}
