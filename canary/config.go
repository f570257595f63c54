package canary

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/units"
	"github.com/vigil-synthetics/vigil/scripts"
)

// Config errors that tests compare with errors.Is.
var (
	ErrUnknownTarget   = errors.New("unknown target")
	ErrTimeoutInterval = errors.New("timeout must be shorter than the interval")
	ErrNoProbe         = errors.New("a check needs exactly one of http, tcp, tls, dns, grpc, icmp or script")
	ErrDuplicate       = errors.New("duplicate name")
	ErrBadCron         = errors.New("bad cron schedule")
)

// Config is the canary's part of the config file: the agent, the defaults,
// the targets and the checks.
type Config struct {
	Agent    AgentConfig    `mapstructure:"agent"`
	Defaults Defaults       `mapstructure:"defaults"`
	Targets  []TargetConfig `mapstructure:"targets"`
	Checks   []CheckConfig  `mapstructure:"checks"`

	// set holds the keys the file set (see SetKeys).
	set units.KeySet
}

// SetKeys records which keys the config file (or an environment
// override) set, as the decoder names them: "defaults.interval",
// "checks[0].rise", "agent.browser.max_concurrent". Validation uses it to
// tell an explicit 0 from an omitted key: an omitted key takes its
// default, an explicit 0 where 0 makes no sense (interval, timeout, rise,
// fall, expire_after, concurrency, …) is an error, and an explicit
// flap.max_changes: 0 (no flap damping) or flap.extra_passes: 0 is kept.
// Without SetKeys every 0 is read as omitted.
func (c *Config) SetKeys(keys []string) { c.set = units.NewKeySet(keys) }

// isSet reports whether the file set key.
func (c *Config) isSet(key string) bool { return c.set.Has(key) }

// AgentConfig is the `agent:` section.
type AgentConfig struct {
	// Region labels every verdict (default "local"; env VIGIL_AGENT_REGION).
	Region string `mapstructure:"region"`
	// Vantage labels every verdict within a region (default: the hostname).
	Vantage string `mapstructure:"vantage"`
	// Listen is the address of the status page, /metrics and /api/v1/*
	// (default 127.0.0.1:9470).
	Listen string `mapstructure:"listen"`
	// DataDir holds the embedded store, the InfluxDB outbox and artifacts
	// (default ./vigil-data).
	DataDir string `mapstructure:"data_dir"`
	// AdminToken guards the write endpoints (trigger, drain), and the pings
	// of push checks without a push.token. Empty: writes are refused
	// with 403. Use ${VIGIL_ADMIN_TOKEN}.
	AdminToken string `mapstructure:"admin_token"`
	// Concurrency caps checks running at once in this process (default 256).
	Concurrency int `mapstructure:"concurrency"`
	// ShutdownDelay keeps the process serving this long after SIGTERM or
	// SIGINT while GET /readyz answers 503, so load balancers stop sending
	// it traffic before its listeners close (default 0: close at once).
	ShutdownDelay time.Duration `mapstructure:"shutdown_delay"`
	// LatencyHistograms exports every run's duration and TTFB as Prometheus
	// histograms per check × target (vigil_check_duration_seconds,
	// vigil_check_ttfb_seconds), 52 more series per pair (default false:
	// last-run gauges only).
	LatencyHistograms bool `mapstructure:"latency_histograms"`
	// Browser configures the shared Chromium for browser script steps.
	Browser BrowserConfig `mapstructure:"browser"`
	// Triggers runs deep and synthetic checks out of cycle when the proxy's
	// live traffic shows an origin degrading.
	Triggers TriggerConfig `mapstructure:"triggers"`
	// Probe is the blackbox_exporter-style GET /probe endpoint (off by
	// default; see ProbeConfig).
	Probe ProbeConfig `mapstructure:"probe"`
}

// BrowserConfig is `agent.browser`.
type BrowserConfig struct {
	// ExecPath is the Chromium binary (default: auto-detect chromium,
	// chromium-browser, google-chrome on PATH).
	ExecPath string `mapstructure:"exec_path"`
	// MaxConcurrent caps browser checks running at once (default 2).
	MaxConcurrent int `mapstructure:"max_concurrent"`
	// NoSandbox starts Chromium with --no-sandbox (default: true when
	// vigil runs as root, else false).
	NoSandbox *bool `mapstructure:"no_sandbox"`
	// Env names variables of vigil's environment that Chromium gets besides
	// its minimal set (PATH, HOME, locale, TZ, TMPDIR, XDG_*, FONTCONFIG_*,
	// DISPLAY), e.g. HTTPS_PROXY (default none).
	Env []string `mapstructure:"env"`
	// CAFile is a PEM file of CAs that Chromium trusts besides its own, for
	// sites behind a private CA (default none).
	CAFile string `mapstructure:"ca_file"`
}

// Scripts returns the scripts.BrowserConfig of these settings, logging to
// log.
func (b *BrowserConfig) Scripts(log *slog.Logger) scripts.BrowserConfig {
	return scripts.BrowserConfig{ExecPath: b.ExecPath, MaxConcurrent: b.MaxConcurrent, NoSandbox: b.NoSandbox, Env: b.Env,
		CAFile: b.CAFile, Log: log}
}

// Defaults is the `defaults:` section, inherited by every check.
type Defaults struct {
	// Interval between runs (default 30s).
	Interval time.Duration `mapstructure:"interval"`
	// Timeout of one run (default min(10s, 80% of the interval)); an inherited
	// timeout is capped at 80% of each check's interval.
	Timeout time.Duration `mapstructure:"timeout"`
	// Jitter spreads runs by up to this share of the interval (default
	// 10%). It does not apply to cron checks, which take only their own
	// jitter.
	Jitter *units.Percent `mapstructure:"jitter"`
	// Rise passes turn a verdict healthy (default 2).
	Rise int `mapstructure:"rise"`
	// Fall failures turn a verdict unhealthy (default 3).
	Fall int `mapstructure:"fall"`
	// Flap configures flap damping.
	Flap FlapConfig `mapstructure:"flap"`
	// ExpireAfter is how long a verdict stays valid (default 3 × interval;
	// for a cron check 3 × the longest gap between its runs). It must cover
	// the interval (the longest gap) plus jitter plus timeout.
	ExpireAfter time.Duration `mapstructure:"expire_after"`
	// Adaptive slows long-stable checks (default false).
	Adaptive bool `mapstructure:"adaptive"`
}

// FlapConfig is flap damping: more than MaxChanges state changes within
// Window hold the verdict unhealthy for HoldDown; it then needs ExtraPasses
// passes on top of rise to recover.
type FlapConfig struct {
	MaxChanges  int           `mapstructure:"max_changes"`  // default 4; an explicit 0 turns damping off
	Window      time.Duration `mapstructure:"window"`       // default 10m
	HoldDown    time.Duration `mapstructure:"hold_down"`    // default 5m
	ExtraPasses int           `mapstructure:"extra_passes"` // default 2; an explicit 0 is kept

	// noDamping and noExtraPasses record an explicit 0 (Config.SetKeys).
	noDamping, noExtraPasses bool
}

// TargetConfig is one entry of `targets:`.
type TargetConfig struct {
	// Name identifies the target in checks, verdicts and the proxy.
	Name string `mapstructure:"name"`
	// URL is the origin base URL: http(s)://host:port, tcp://host:port,
	// tls://host:port, dns://host[:port] (a DNS server, for dns checks) or
	// icmp://host (a host to ping, for icmp checks).
	URL string `mapstructure:"url"`
}

// CheckConfig is one entry of `checks:`. Exactly one of HTTP, TCP, TLS or
// Script says what the check does. Omitted scheduling fields inherit from
// Defaults; an explicit 0 is an error (see Config.SetKeys).
type CheckConfig struct {
	Name string `mapstructure:"name"`
	// Tier is shallow, deep or synthetic (default: shallow for tcp/tls,
	// deep for http, synthetic for scripts).
	Tier string `mapstructure:"tier"`
	// Targets names entries of `targets:`; alternatively URL names one origin directly.
	Targets []string `mapstructure:"targets"`
	URL     string   `mapstructure:"url"`

	Interval time.Duration `mapstructure:"interval"`
	Cron     string        `mapstructure:"cron"`
	Timeout  time.Duration `mapstructure:"timeout"`
	// Jitter delays each run by up to this share of the interval (default
	// defaults.jitter; for a cron check 0%, and at most MaxCronJitter).
	Jitter      *units.Percent `mapstructure:"jitter"`
	Rise        int            `mapstructure:"rise"`
	Fall        int            `mapstructure:"fall"`
	Flap        *FlapConfig    `mapstructure:"flap"`
	ExpireAfter time.Duration  `mapstructure:"expire_after"`
	Adaptive    *bool          `mapstructure:"adaptive"`
	Disabled    bool           `mapstructure:"disabled"`

	HTTP   *checks.HTTPSpec `mapstructure:"http"`
	TCP    *checks.TCPSpec  `mapstructure:"tcp"`
	TLS    *checks.TLSSpec  `mapstructure:"tls"`
	DNS    *checks.DNSSpec  `mapstructure:"dns"`
	GRPC   *checks.GRPCSpec `mapstructure:"grpc"`
	ICMP   *checks.ICMPSpec `mapstructure:"icmp"`
	Expect *checks.Expect   `mapstructure:"expect"`
	Script scripts.Script   `mapstructure:"script"`
	// Push makes the check a push (heartbeat) check: its job pings the
	// agent, which judges the pings instead of probing a target.
	Push *PushSpec `mapstructure:"push"`

	schedule cron.Schedule
	// timeoutExplicit is true when the check set its own timeout.
	timeoutExplicit bool
}

// Schedule returns the compiled cron schedule, or nil for interval checks.
func (c *CheckConfig) Schedule() cron.Schedule { return c.schedule }

// Kind names what the check does: http, tcp, tls, dns, grpc, icmp,
// script or push.
func (c *CheckConfig) Kind() string {
	switch {
	case c.Push != nil:
		return "push"
	case c.Script != nil:
		return "script"
	case c.TCP != nil:
		return "tcp"
	case c.TLS != nil:
		return "tls"
	case c.DNS != nil:
		return "dns"
	case c.GRPC != nil:
		return "grpc"
	case c.ICMP != nil:
		return "icmp"
	}
	return "http"
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ValidateAndSetDefaults fills defaults and validates the whole canary
// config, returning every error with its key path.
func (c *Config) ValidateAndSetDefaults() error {
	var errs []error
	errs = append(errs, c.explicitZeros()...)
	if c.isSet("defaults.flap.max_changes") && c.Defaults.Flap.MaxChanges == 0 {
		c.Defaults.Flap.noDamping = true
	}
	if c.isSet("defaults.flap.extra_passes") && c.Defaults.Flap.ExtraPasses == 0 {
		c.Defaults.Flap.noExtraPasses = true
	}
	for i := range c.Checks {
		if f := c.Checks[i].Flap; f != nil {
			p := fmt.Sprintf("checks[%d].flap.", i)
			f.noDamping = c.isSet(p+"max_changes") && f.MaxChanges == 0
			f.noExtraPasses = c.isSet(p+"extra_passes") && f.ExtraPasses == 0
		}
		if s := c.Checks[i].Push; s != nil {
			s.graceSet = c.isSet(fmt.Sprintf("checks[%d].push.grace", i))
		}
	}
	errs = append(errs, c.expectZeros()...)
	errs = append(errs, units.Prefix("agent", c.Agent.ValidateAndSetDefaults()))
	errs = append(errs, units.Prefix("defaults", c.Defaults.ValidateAndSetDefaults()))
	targets := map[string]string{}
	// invalid holds the names of targets that failed validation: a check
	// naming one gets no "unknown target" error on top of the target's own.
	invalid := map[string]bool{}
	for i := range c.Targets {
		t := &c.Targets[i]
		p := fmt.Sprintf("targets[%d]", i)
		if err := t.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix(p, err))
			invalid[t.Name] = true
			continue
		}
		if _, dup := targets[t.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: %q: %w", p, t.Name, ErrDuplicate))
		}
		targets[t.Name] = t.URL
	}
	names := map[string]bool{}
	for i := range c.Checks {
		ch := &c.Checks[i]
		p := fmt.Sprintf("checks[%d]", i)
		errs = append(errs, units.Prefix(p, ch.validate(c.Defaults, targets, invalid)))
		if ch.Name != "" && names[ch.Name] {
			errs = append(errs, fmt.Errorf("%s.name: %q: %w", p, ch.Name, ErrDuplicate))
		}
		names[ch.Name] = true
	}
	errs = append(errs, c.validatePushTokens()...)
	return errors.Join(errs...)
}

// explicitZeros rejects keys the file set to 0 where 0 makes no sense and
// an omitted key takes a default (interval: 0s used to run every 30s).
func (c *Config) explicitZeros() []error {
	key := units.Zero
	const holdDown = "5m; flap.max_changes: 0 turns flap damping off"
	d := &c.Defaults
	keys := []units.ZeroKey{
		key("defaults.interval", d.Interval == 0, "30s"),
		key("defaults.timeout", d.Timeout == 0, "min(10s, 80% of the interval)"),
		key("defaults.expire_after", d.ExpireAfter == 0, "3 × interval"),
		key("defaults.rise", d.Rise == 0, "2"),
		key("defaults.fall", d.Fall == 0, "3"),
		key("agent.concurrency", c.Agent.Concurrency == 0, "256"),
		key("agent.browser.max_concurrent", c.Agent.Browser.MaxConcurrent == 0, "2"),
		key("agent.triggers.for", c.Agent.Triggers.For == 0, "60s"),
		// 0% would trigger every window, failures or not.
		key("agent.triggers.failure_rate", c.Agent.Triggers.FailureRate != nil && *c.Agent.Triggers.FailureRate == 0, "1%"),
		key("agent.triggers.min_requests", c.Agent.Triggers.MinRequests == 0, "20"),
		key("agent.triggers.min_gap", c.Agent.Triggers.MinGap == 0, "30s"),
		key("agent.triggers.poll", c.Agent.Triggers.Poll == 0, "5s"),
		key("agent.probe.max_concurrent", c.Agent.Probe.MaxConcurrent == 0, "8"),
		key("agent.probe.timeout_offset", c.Agent.Probe.TimeoutOffset == 0, "500ms"),
	}
	// With flap damping off (an explicit max_changes: 0), a zero window or
	// hold_down means nothing either way.
	if !(c.isSet("defaults.flap.max_changes") && d.Flap.MaxChanges == 0) {
		keys = append(keys,
			key("defaults.flap.window", d.Flap.Window == 0, "10m"),
			key("defaults.flap.hold_down", d.Flap.HoldDown == 0, holdDown))
	}
	for i := range c.Checks {
		ch := &c.Checks[i]
		p := fmt.Sprintf("checks[%d].", i)
		keys = append(keys,
			key(p+"interval", ch.Interval == 0, "defaults.interval"),
			key(p+"timeout", ch.Timeout == 0, "defaults.timeout, capped at 80% of the interval"),
			key(p+"expire_after", ch.ExpireAfter == 0, "defaults.expire_after or 3 × interval"),
			key(p+"rise", ch.Rise == 0, "defaults.rise"),
			key(p+"fall", ch.Fall == 0, "defaults.fall"))
		if ch.HTTP != nil {
			keys = append(keys, key(p+"http.body_limit", ch.HTTP.BodyLimit == 0, "10MiB"))
		}
		if ch.TCP != nil {
			keys = append(keys, key(p+"tcp.read_limit", ch.TCP.ReadLimit == 0, "64KiB"))
		}
		for j := range ch.Script {
			st := &ch.Script[j]
			sp := fmt.Sprintf("%sscript[%d].", p, j)
			keys = append(keys, key(sp+"timeout", st.Timeout == 0, "10s, capped by what is left of the check's timeout"))
			if st.HTTP != nil {
				keys = append(keys, key(sp+"http.body_limit", st.HTTP.BodyLimit == 0, "10MiB"))
			}
		}
		if ch.Flap != nil && !(c.isSet(p+"flap.max_changes") && ch.Flap.MaxChanges == 0) {
			keys = append(keys,
				key(p+"flap.window", ch.Flap.Window == 0, "10m"),
				key(p+"flap.hold_down", ch.Flap.HoldDown == 0, holdDown))
		}
	}
	return c.set.ExplicitZeros(keys)
}

// expectZeros reads the explicit 0s of every expect (the check's and its
// script steps'): `size.max: 0B` asserts an empty body (an omitted max is
// no bound), while `ttfb: 0s` and `duration: 0s` are errors: no run takes
// 0s, so the check could never pass, and an omitted key is no limit.
func (c *Config) expectZeros() []error {
	var errs []error
	one := func(p string, e *checks.Expect) {
		if e == nil {
			return
		}
		if c.isSet(p+"size.max") && e.Size.Max == 0 {
			e.Size.MaxSet = true
		}
		for _, k := range []struct {
			key string
			d   time.Duration
		}{{"ttfb", e.TTFB}, {"duration", e.Duration}} {
			if c.isSet(p+k.key) && k.d == 0 {
				errs = append(errs, fmt.Errorf("%s%s: 0s: no run takes 0s, so the check could never pass (omit the key for no limit)", p, k.key))
			}
		}
	}
	for i := range c.Checks {
		ch := &c.Checks[i]
		one(fmt.Sprintf("checks[%d].expect.", i), ch.Expect)
		for j := range ch.Script {
			one(fmt.Sprintf("checks[%d].script[%d].expect.", i, j), ch.Script[j].Expect)
		}
	}
	return errs
}

// ValidateAndSetDefaults fills the agent defaults.
func (a *AgentConfig) ValidateAndSetDefaults() error {
	var errs []error
	// A token read from a file or a variable often ends in a newline: the
	// presented token is trimmed, so the configured one is too (and one of
	// only spaces is no token: writes are disabled).
	a.AdminToken = strings.TrimSpace(a.AdminToken)
	if a.Region == "" {
		a.Region = "local"
	}
	if a.Vantage == "" {
		a.Vantage, _ = os.Hostname()
		if a.Vantage == "" {
			a.Vantage = "local"
		}
	}
	if a.Listen == "" {
		a.Listen = "127.0.0.1:9470"
	}
	if err := checkListen(a.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %w", err))
	}
	if a.DataDir == "" {
		a.DataDir = "./vigil-data"
	}
	if a.Concurrency == 0 {
		a.Concurrency = 256
	}
	if a.ShutdownDelay < 0 || a.ShutdownDelay > 10*time.Minute {
		errs = append(errs, fmt.Errorf("shutdown_delay: %s: must be between 0s and 10m", a.ShutdownDelay))
	}
	if a.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency: must be positive, got %d", a.Concurrency))
	}
	if a.Browser.MaxConcurrent == 0 {
		a.Browser.MaxConcurrent = 2
	}
	if a.Browser.MaxConcurrent < 0 {
		errs = append(errs, fmt.Errorf("browser.max_concurrent: must be positive, got %d", a.Browser.MaxConcurrent))
	}
	sc := scripts.BrowserConfig{Env: a.Browser.Env, CAFile: a.Browser.CAFile}
	errs = append(errs, units.Prefix("browser", sc.ValidateAndSetDefaults()))
	errs = append(errs, units.Prefix("triggers", a.Triggers.ValidateAndSetDefaults()))
	errs = append(errs, units.Prefix("probe", a.Probe.validate(a.AdminToken != "")))
	return errors.Join(errs...)
}

// checkListen rejects a listen address that net.Listen would refuse:
// not host:port, or a port that is neither 0..65535 (0: any free port) nor a
// known service name.
func checkListen(addr string) error { return units.CheckListen(addr, "127.0.0.1:9470") }

// ValidateAndSetDefaults fills the global defaults.
func (d *Defaults) ValidateAndSetDefaults() error {
	var errs []error
	if d.Interval == 0 {
		d.Interval = 30 * time.Second
	}
	if d.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval: must be positive, got %s", d.Interval))
	}
	if d.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout: must be positive, got %s", d.Timeout))
	}
	if d.Jitter == nil {
		p := units.Percent(10)
		d.Jitter = &p
	}
	if d.Rise == 0 {
		d.Rise = 2
	}
	if d.Fall == 0 {
		d.Fall = 3
	}
	if d.Rise < 0 {
		errs = append(errs, fmt.Errorf("rise: must be positive, got %d", d.Rise))
	}
	if d.Fall < 0 {
		errs = append(errs, fmt.Errorf("fall: must be positive, got %d", d.Fall))
	}
	errs = append(errs, units.Prefix("flap", d.Flap.ValidateAndSetDefaults()))
	if d.ExpireAfter < 0 {
		errs = append(errs, fmt.Errorf("expire_after: must be positive, got %s", d.ExpireAfter))
	}
	return errors.Join(errs...)
}

// ValidateAndSetDefaults fills flap damping defaults.
func (f *FlapConfig) ValidateAndSetDefaults() error {
	if f.MaxChanges == 0 && !f.noDamping {
		f.MaxChanges = 4
	}
	if f.Window == 0 {
		f.Window = 10 * time.Minute
	}
	if f.HoldDown == 0 {
		f.HoldDown = 5 * time.Minute
	}
	if f.ExtraPasses == 0 && !f.noExtraPasses {
		f.ExtraPasses = 2
	}
	var errs []error
	if f.MaxChanges < 0 {
		errs = append(errs, fmt.Errorf("max_changes: %d: must not be negative (0 turns flap damping off)", f.MaxChanges))
	}
	if f.Window < 0 {
		errs = append(errs, fmt.Errorf("window: %s: must be positive", f.Window))
	}
	if f.HoldDown < 0 {
		errs = append(errs, fmt.Errorf("hold_down: %s: must be positive", f.HoldDown))
	}
	if f.ExtraPasses < 0 {
		errs = append(errs, fmt.Errorf("extra_passes: %d: must not be negative (0: rise alone recovers)", f.ExtraPasses))
	}
	return errors.Join(errs...)
}

// hysteresisDefaults fills rise, fall and flap from d and checks them.
func (c *CheckConfig) hysteresisDefaults(d Defaults) []error {
	var errs []error
	if c.Rise == 0 {
		c.Rise = d.Rise
	}
	if c.Fall == 0 {
		c.Fall = d.Fall
	}
	if c.Rise < 0 {
		errs = append(errs, fmt.Errorf("rise: must be positive, got %d", c.Rise))
	}
	if c.Fall < 0 {
		errs = append(errs, fmt.Errorf("fall: must be positive, got %d", c.Fall))
	}
	if c.Flap == nil {
		f := d.Flap
		c.Flap = &f
	} else {
		errs = append(errs, units.Prefix("flap", c.Flap.ValidateAndSetDefaults()))
	}
	return errs
}

// ValidateAndSetDefaults checks a target's name and URL.
func (t *TargetConfig) ValidateAndSetDefaults() error {
	var errs []error
	if t.Name == "" {
		errs = append(errs, errors.New("name: required"))
	} else if !nameRE.MatchString(t.Name) {
		errs = append(errs, fmt.Errorf("name: %q: use letters, digits and _ . : -", t.Name))
	}
	if err := validateURL(t.URL); err != nil {
		errs = append(errs, fmt.Errorf("url: %w", err))
	}
	return errors.Join(errs...)
}

// schemeTypo matches one of the schemes a target takes followed by a
// separator other than "://" ("http//", "http:/", "https:"): the scheme is
// there, mistyped, and the hint writes it right rather than adding another.
var schemeTypo = regexp.MustCompile(`^(?i)(https?|tcp|tls|dns|icmp)(?::/?|//)`)

func validateURL(raw string) error {
	if raw == "" {
		return errors.New("required")
	}
	if !strings.Contains(raw, "://") {
		shown := units.RedactURL(raw)
		if m := schemeTypo.FindStringSubmatch(shown); m != nil {
			return fmt.Errorf("%q: no scheme: write it as %s://%s", shown, strings.ToLower(m[1]), shown[len(m[0]):])
		}
		return fmt.Errorf("%q: no scheme: write it as http://%s (or https://, tcp://, tls://)", shown, shown)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q: not a URL: %v", units.RedactURL(raw), errors.Unwrap(err))
	}
	switch u.Scheme {
	case "http", "https", "tcp", "tls", "dns", "icmp":
	default:
		return fmt.Errorf("%q: scheme must be http, https, tcp, tls, dns or icmp", units.RedactURL(raw))
	}
	if u.Host == "" {
		return fmt.Errorf("%q: no host", units.RedactURL(raw))
	}
	// url.Parse takes any run of digits as a port; a dial to port 0 or
	// one above 65535 fails on every run, as an outage.
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q: want a number from 1 to 65535", units.RedactURL(raw), p)
		}
	}
	return nil
}

func (c *CheckConfig) validate(d Defaults, targets map[string]string, invalid map[string]bool) error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("name: required"))
	} else if !nameRE.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("name: %q: use letters, digits and _ . : -", c.Name))
	}
	if c.Push != nil {
		return errors.Join(append(errs, c.validatePush(d))...)
	}
	n := 0
	for _, set := range []bool{c.HTTP != nil, c.TCP != nil, c.TLS != nil, c.DNS != nil, c.GRPC != nil, c.ICMP != nil, c.Script != nil} {
		if set {
			n++
		}
	}
	// Without a probe key the URL's scheme (the check's url, or its first
	// target's) says what to do: tcp:// connects, tls:// handshakes, http(s) requests.
	scheme := c.URL
	if scheme == "" && len(c.Targets) > 0 {
		scheme = targets[c.Targets[0]]
	}
	if n == 0 && strings.HasPrefix(scheme, "tcp://") {
		c.TCP, n = &checks.TCPSpec{}, 1
	} else if n == 0 && strings.HasPrefix(scheme, "tls://") {
		c.TLS, n = &checks.TLSSpec{}, 1
	} else if n == 0 && strings.HasPrefix(scheme, "dns://") {
		c.DNS, n = &checks.DNSSpec{}, 1
	} else if n == 0 && strings.HasPrefix(scheme, "icmp://") {
		c.ICMP, n = &checks.ICMPSpec{}, 1
	} else if n == 0 {
		c.HTTP, n = &checks.HTTPSpec{}, 1
	}
	if n != 1 {
		errs = append(errs, ErrNoProbe)
	}
	switch c.Tier {
	case "":
		switch c.Kind() {
		case "tcp", "tls", "dns", "grpc", "icmp":
			c.Tier = reporting.TierShallow
		case "script":
			c.Tier = reporting.TierSynthetic
		default:
			c.Tier = reporting.TierDeep
		}
	case reporting.TierShallow, reporting.TierDeep, reporting.TierSynthetic:
	default:
		errs = append(errs, fmt.Errorf("tier: %q: want shallow, deep or synthetic", c.Tier))
	}

	// Targets.
	if len(c.Targets) == 0 && c.URL == "" {
		errs = append(errs, errors.New("targets: name at least one target, or set url"))
	}
	if len(c.Targets) > 0 && c.URL != "" {
		errs = append(errs, errors.New("url: set either targets or url, not both"))
	}
	if c.URL != "" {
		if err := validateURL(c.URL); err != nil {
			errs = append(errs, fmt.Errorf("url: %w", err))
		} else if err := c.urlFits(c.URL); err != nil {
			errs = append(errs, fmt.Errorf("url: %q: %w", units.RedactURL(c.URL), err))
		}
	}
	for i, t := range c.Targets {
		u, ok := targets[t]
		switch {
		case !ok && invalid[t]:
			// The target's own error says what is wrong.
		case !ok:
			hint := "define it under targets:"
			if near := units.NearestName(t, slices.Sorted(maps.Keys(targets))); near != "" {
				hint = fmt.Sprintf("did you mean %q? or define it under targets:", near)
			}
			errs = append(errs, fmt.Errorf("targets[%d]: %q: %w (%s)", i, t, ErrUnknownTarget, hint))
		default:
			if err := c.urlFits(u); err != nil {
				errs = append(errs, fmt.Errorf("targets[%d]: %q (url %q): %w", i, t, units.RedactURL(u), err))
			}
		}
	}

	// Schedule.
	if c.Cron != "" && c.Interval != 0 {
		errs = append(errs, errors.New("cron: set either interval or cron, not both"))
	}
	if c.Cron != "" {
		s, err := cronParser.Parse(c.Cron)
		if err != nil {
			errs = append(errs, fmt.Errorf("cron: %q: %w: %v", c.Cron, ErrBadCron, err))
		} else {
			c.schedule = s
			errs = append(errs, cronFits(c.Cron, s, time.Now())...)
			// A cron check's interval (what its default timeout,
			// expire_after and confirm cadence derive from, and its
			// verdicts' interval_ms) is the longest gap between two of
			// its runs: the same whenever the config is loaded, and long
			// enough that a verdict outlives every gap (expireFits).
			c.Interval = CronMaxGap(s, time.Now())
		}
	}
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval: must be positive, got %s", c.Interval))
	}
	if c.Interval == 0 {
		c.Interval = d.Interval
	}
	switch {
	case c.Timeout < 0:
		errs = append(errs, fmt.Errorf("timeout: must be positive, got %s", c.Timeout))
	case c.Timeout > 0:
		c.timeoutExplicit = true
		if c.Interval > 0 && c.Timeout >= c.Interval {
			errs = append(errs, fmt.Errorf("timeout: %s ≥ interval %s: %w", c.Timeout, c.Interval, ErrTimeoutInterval))
		}
	default:
		capped := c.Interval * 8 / 10
		c.Timeout = d.Timeout
		if c.Timeout == 0 {
			c.Timeout = min(10*time.Second, capped)
		}
		c.Timeout = min(c.Timeout, capped)
	}
	switch {
	case c.Jitter == nil && c.Cron != "":
		// A cron check runs at the time written, as a crontab does;
		// defaults.jitter (10% of a daily cron's 24 h is 2.4 h) does not
		// apply to it.
		zero := units.Percent(0)
		c.Jitter = &zero
	case c.Jitter == nil:
		c.Jitter = d.Jitter
	case c.Cron != "" && c.Interval > 0 && time.Duration(c.Jitter.Fraction()*float64(c.Interval)) > MaxCronJitter:
		capped := units.Percent(100 * float64(MaxCronJitter) / float64(c.Interval))
		c.Jitter = &capped
	}
	errs = append(errs, c.hysteresisDefaults(d)...)
	if c.ExpireAfter == 0 {
		c.ExpireAfter = d.ExpireAfter
	}
	if c.ExpireAfter == 0 {
		c.ExpireAfter = 3 * c.Interval
	} else if c.ExpireAfter > 0 && c.Interval > 0 {
		errs = append(errs, c.expireFits(d.ExpireAfter > 0 && c.ExpireAfter == d.ExpireAfter))
	}
	if c.Adaptive == nil {
		a := d.Adaptive
		c.Adaptive = &a
	}

	// Probe specs. A script asserts per step: a check-level expect would
	// be ignored and the check pass whatever the steps got.
	if c.Script != nil && c.Expect != nil && len(c.Expect.Keys()) > 0 {
		errs = append(errs, errors.New("expect: script checks do not use it; put it on a step (script[0].expect)"))
	}
	if c.Expect == nil {
		c.Expect = &checks.Expect{}
	}
	if c.HTTP != nil {
		errs = append(errs, units.Prefix("http", c.HTTP.ValidateAndSetDefaults()))
	}
	if c.TCP != nil {
		errs = append(errs, units.Prefix("tcp", c.TCP.ValidateAndSetDefaults()))
	}
	if c.TLS != nil {
		errs = append(errs, units.Prefix("tls", c.TLS.ValidateAndSetDefaults()))
	}
	if c.DNS != nil {
		errs = append(errs, units.Prefix("dns", c.DNS.ValidateAndSetDefaults()))
	}
	if c.GRPC != nil {
		errs = append(errs, units.Prefix("grpc", c.GRPC.ValidateAndSetDefaults()))
	}
	if c.ICMP != nil {
		errs = append(errs, units.Prefix("icmp", c.ICMP.ValidateAndSetDefaults()))
	}
	if err := c.Expect.ValidateAndSetDefaults(); err != nil {
		errs = append(errs, units.Prefix("expect", err))
	} else if c.Script == nil {
		errs = append(errs, units.Prefix("expect", c.Expect.ValidateFor(c.Kind())))
		errs = append(errs, c.certOnPlainHTTP(targets)...)
	}
	if c.Script != nil {
		errs = append(errs, units.Prefix("script", c.Script.ValidateAndSetDefaults(c.Timeout)))
	}
	errs = append(errs, c.expectFitsTimeout()...)
	return errors.Join(errs...)
}

// expectFitsTimeout rejects an expect.duration or expect.ttfb at or above
// the check's timeout: the run is cancelled at the timeout (cause timeout)
// before either can be exceeded, so the assertion could never fail.
func (c *CheckConfig) expectFitsTimeout() []error {
	if c.Expect == nil || c.Timeout <= 0 || c.Script != nil {
		return nil
	}
	timeout := fmt.Sprintf("timeout %s", c.Timeout)
	if !c.timeoutExplicit {
		timeout = fmt.Sprintf("timeout %s (inherited: defaults.timeout or min(10s, 80%% of the interval))", c.Timeout)
	}
	var errs []error
	for _, e := range []struct {
		key string
		d   time.Duration
	}{{"expect.duration", c.Expect.Duration}, {"expect.ttfb", c.Expect.TTFB}} {
		if e.d > 0 && e.d >= c.Timeout {
			errs = append(errs, fmt.Errorf("%s: %s ≥ %s: the run times out first, so the assertion can never fail (set %s below timeout, or raise timeout)", e.key, e.d, timeout, e.key))
		}
	}
	return errs
}

// MaxCronJitter caps an explicit jitter on a cron check: a cron check runs
// at most this long after the time written.
const MaxCronJitter = time.Minute

// expireFits rejects an expire_after that ends a verdict before the next
// run can renew it: the pair would then stay unknown for ever, since a run
// that comes after its predecessor expired starts again from unknown. The
// longest wait is the interval (for cron, the longest gap between two
// firings) plus the jitter plus the run's timeout.
func (c *CheckConfig) expireFits(inherited bool) error {
	gap, what := c.Interval, fmt.Sprintf("interval %s", c.Interval)
	if c.schedule != nil {
		what = fmt.Sprintf("the longest gap between cron runs %s", gap)
	}
	jit := time.Duration(c.Jitter.Fraction() * float64(c.Interval))
	need := gap + jit + c.Timeout
	if c.ExpireAfter >= need {
		return nil
	}
	from := ""
	if inherited {
		from = " (inherited from defaults.expire_after)"
	}
	omit := "3 × interval"
	if c.schedule != nil {
		omit = fmt.Sprintf("3 × the longest gap = %s", 3*gap)
	}
	return fmt.Errorf("expire_after: %s%s is shorter than %s + jitter %s + timeout %s = %s: the verdict would expire before the next run renews it and the pair would stay unknown (set at least %s, or omit it for %s)",
		c.ExpireAfter, from, what, jit, c.Timeout, need, need, omit)
}

// cronFits rejects a cron schedule that parses but would not run as
// written: an "@every" below 1s or not a whole number of seconds
// (robfig/cron rounds it down to whole seconds and up to at least 1s, so
// "@every 500ms" and "@every 0s" would run every second, "@every 1500ms"
// every second too), and one that matches no time in the next five years
// ("0 0 30 2 *": robfig/cron gives up after five years and the pair would
// stay unknown for ever without a run).
func cronFits(spec string, s cron.Schedule, now time.Time) []error {
	expr := strings.TrimSpace(spec)
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		if i := strings.IndexAny(expr, " \t"); i > 0 {
			expr = strings.TrimSpace(expr[i:])
		}
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		if d, err := time.ParseDuration(strings.TrimSpace(rest)); err == nil && (d < time.Second || d%time.Second != 0) {
			return []error{fmt.Errorf("cron: %q: %w: @every needs a whole number of seconds, at least 1s (it would run every %s)",
				spec, ErrBadCron, max(d.Truncate(time.Second), time.Second))}
		}
	}
	if s.Next(now).IsZero() {
		return []error{fmt.Errorf("cron: %q: %w: it matches no time in the next 5 years, so the check would never run", spec, ErrBadCron)}
	}
	return nil
}

// CronMaxGap is the longest time between two consecutive firings of s over
// its next 64 firings after from, and at least over the next 8 days (a
// week and a day, at most 20,000 firings): for a schedule that repeats
// within a week (daily, weekdays only, every minute on weekdays), the same
// whatever from is.
func CronMaxGap(s cron.Schedule, from time.Time) time.Duration {
	var gap time.Duration
	t := s.Next(from)
	first := t
	for i := 0; i < 20000 && (i < 64 || t.Sub(first) < 8*24*time.Hour); i++ {
		n := s.Next(t)
		if n.IsZero() {
			break
		}
		gap = max(gap, n.Sub(t))
		t = n
	}
	return gap
}

// certOnPlainHTTP rejects expect.cert_min_days on an http check whose
// request goes to a plain http:// URL: there is no certificate, so every
// run would fail with cause cert.
func (c *CheckConfig) certOnPlainHTTP(targets map[string]string) []error {
	if c.Expect.CertMinDays <= 0 || c.Kind() != "http" {
		return nil
	}
	const fix = "plain http:// has no TLS certificate to check (use an https:// URL or drop the key)"
	plain := func(u string) bool { return strings.HasPrefix(strings.ToLower(u), "http://") }
	key := "expect.cert_min_days"
	switch {
	case c.HTTP != nil && c.HTTP.URL != "":
		if plain(c.HTTP.URL) {
			return []error{fmt.Errorf("%s: check %q: http.url %q: %s", key, c.Name, units.RedactURL(c.HTTP.URL), fix)}
		}
	case c.URL != "":
		if plain(c.URL) {
			return []error{fmt.Errorf("%s: check %q: url %q: %s", key, c.Name, units.RedactURL(c.URL), fix)}
		}
	default:
		var errs []error
		for _, t := range c.Targets {
			if u, ok := targets[t]; ok && plain(u) {
				errs = append(errs, fmt.Errorf("%s: check %q, target %q (url %q): %s", key, c.Name, t, units.RedactURL(u), fix))
			}
		}
		return errs
	}
	return nil
}

// urlFits reports whether a (valid) target URL suits what the check does: an
// http check without http.url, and a script's http steps without their own
// http.url, request http:// or https:// URLs, a tcp
// check needs a port unless the scheme implies one (http 80, https/tls 443),
// and a tls check does not handshake with an http:// URL.
// Without this a run would fail every time with cause internal.
func (c *CheckConfig) urlFits(raw string) error {
	if k := c.Kind(); k != "icmp" && strings.HasPrefix(raw, "icmp://") {
		return fmt.Errorf("an icmp:// URL is a host to ping, for icmp checks, not for a %s check", k)
	}
	switch c.Kind() {
	case "http":
		if c.HTTP != nil && c.HTTP.URL != "" {
			return nil
		}
		if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
			return errors.New("want an http:// or https:// URL for an http check")
		}
		if c.HTTP != nil {
			// http2: h2c needs http://, required needs https://.
			if err := c.HTTP.HTTP2Fits(raw); err != nil {
				return fmt.Errorf("http.%w", err)
			}
		}
	case "script":
		if strings.HasPrefix(raw, "http://") || strings.HasPrefix(raw, "https://") {
			for i, st := range c.Script {
				if st.HTTP != nil && st.HTTP.URL == "" {
					if err := st.HTTP.HTTP2Fits(raw); err != nil {
						return fmt.Errorf("script[%d].http.%w", i, err)
					}
				}
			}
			return nil
		}
		for i, st := range c.Script {
			if st.HTTP != nil && st.HTTP.URL == "" {
				return fmt.Errorf("want an http:// or https:// URL: script[%d] is an http step without its own http.url", i)
			}
		}
	case "tcp":
		u, err := url.Parse(raw)
		if err == nil && u.Port() == "" && u.Scheme == "tcp" {
			return errors.New("a port is required for a tcp check (tcp://host:port)")
		}
	case "tls":
		// A plain http:// origin answers no handshake (or the run dials
		// port 80): every run would fail with cause tls.
		if strings.HasPrefix(raw, "http://") {
			return errors.New("want a tls:// or https:// URL for a tls check (http:// is plain text)")
		}
	case "dns":
		return c.DNS.TargetFits(raw)
	case "grpc":
		if strings.HasPrefix(raw, "dns://") {
			return errors.New("want an https://, http:// (with grpc.tls: false), tls:// or tcp:// URL for a grpc check")
		}
		if u, err := url.Parse(raw); err == nil && u.Port() == "" && u.Scheme == "tcp" {
			return errors.New("a port is required for a grpc check of a tcp:// URL (tcp://host:port)")
		}
		return c.GRPC.URLFits(raw)
	case "icmp":
		return c.ICMP.TargetFits(raw)
	}
	return nil
}
