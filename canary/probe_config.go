package canary

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Probe endpoint defaults.
const (
	// DefaultProbeMaxConcurrent is agent.probe.max_concurrent's default.
	DefaultProbeMaxConcurrent = 8
	// DefaultProbeTimeoutOffset is agent.probe.timeout_offset's default,
	// blackbox_exporter's --timeout-offset.
	DefaultProbeTimeoutOffset = 500 * time.Millisecond
)

// ProbeConfig is `agent.probe`: GET /probe?module=<check>&target=<target>,
// blackbox_exporter's endpoint, which runs a configured check once against
// a target the caller names. It makes vigil send traffic wherever a caller
// says, so it is off by default and, when on, reaches only the targets
// Allow lets through.
type ProbeConfig struct {
	// Enabled serves GET /probe on agent.listen (default false: 404).
	Enabled bool `mapstructure:"enabled"`
	// Allow lists what a probe may reach: CIDRs (10.0.0.0/8, 2001:db8::/32;
	// a bare address is a /32 or /128) and host-name globs (*.example.com,
	// api.internal; * matches any run of characters, dots included, so "*"
	// is any name). A target passes when its host name matches a glob, or
	// when an address it resolves to lies in a CIDR; the run then dials
	// that one address (resolved once and pinned, so a second answer cannot
	// send it elsewhere). A glob trusts the name's DNS: whatever it resolves
	// to is dialled. Required when enabled.
	Allow []string `mapstructure:"allow"`
	// RequireToken asks for Authorization: Bearer <agent.admin_token>
	// (default true; with it agent.admin_token must be set).
	RequireToken *bool `mapstructure:"require_token"`
	// MaxConcurrent caps probes running at once; one more is answered 503
	// at once (default 8).
	MaxConcurrent int `mapstructure:"max_concurrent"`
	// TimeoutOffset is taken off Prometheus' X-Prometheus-Scrape-Timeout-Seconds
	// to give the run its deadline, as blackbox_exporter's --timeout-offset
	// (default 500ms). The run's timeout is the smaller of that and the
	// check's timeout.
	TimeoutOffset time.Duration `mapstructure:"timeout_offset"`

	allow []allowRule
}

// allowRule is one compiled entry of agent.probe.allow: a prefix or a glob.
type allowRule struct {
	raw    string
	prefix netip.Prefix // valid for a CIDR or an address
	glob   string       // lower case, for a name glob
}

// tokenRequired reports whether /probe asks for the admin token.
func (p *ProbeConfig) tokenRequired() bool { return p.RequireToken == nil || *p.RequireToken }

// validate fills the defaults and compiles Allow; haveToken: agent.admin_token is set.
func (p *ProbeConfig) validate(haveToken bool) error {
	var errs []error
	if p.MaxConcurrent == 0 {
		p.MaxConcurrent = DefaultProbeMaxConcurrent
	}
	if p.MaxConcurrent < 0 {
		errs = append(errs, fmt.Errorf("max_concurrent: must be positive, got %d", p.MaxConcurrent))
	}
	if p.TimeoutOffset == 0 {
		p.TimeoutOffset = DefaultProbeTimeoutOffset
	}
	if p.TimeoutOffset < 0 {
		errs = append(errs, fmt.Errorf("timeout_offset: %s: must not be negative", p.TimeoutOffset))
	}
	p.allow = nil
	for i, raw := range p.Allow {
		r, err := parseAllowRule(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("allow[%d]: %q: %w", i, raw, err))
			continue
		}
		p.allow = append(p.allow, r)
	}
	if p.Enabled && len(p.Allow) == 0 {
		errs = append(errs, errors.New("allow: required when enabled: list the CIDRs and host globs /probe may reach (0.0.0.0/0 and ::/0 for anywhere)"))
	}
	if p.Enabled && p.tokenRequired() && !haveToken {
		errs = append(errs, errors.New("require_token: /probe asks for agent.admin_token, which is not set (set it, or require_token: false to serve /probe without a token)"))
	}
	return errors.Join(errs...)
}

// Warnings returns what is valid in p but unsafe, for vigil validate and
// the start log, each message prefixed with its key under agent.probe
// ("require_token: …"); listen is agent.listen. None when /probe is off.
//
//   - require_token: false on a listener reachable beyond loopback (any
//     address but 127.0.0.0/8, ::1 and localhost; an empty host is every
//     interface): anyone on the network can make vigil send requests;
//   - an allow entry of 0.0.0.0/0 or ::/0 (any /0): a probe may reach
//     every address, vigil's own loopback and a cloud's metadata address
//     included.
func (p *ProbeConfig) Warnings(listen string) []string {
	if !p.Enabled {
		return nil
	}
	var out []string
	if !p.tokenRequired() {
		host, _, err := net.SplitHostPort(listen)
		if err != nil || !units.LoopbackHost(host) {
			shown := listen
			if err == nil && host == "" {
				shown += " (every interface)"
			}
			out = append(out, fmt.Sprintf("require_token: false serves /probe without a token on agent.listen %s, which is reachable beyond this machine: "+
				"anyone who reaches it can make vigil send requests to what agent.probe.allow lets through; keep require_token: true (the default, with agent.admin_token) or listen on 127.0.0.1", shown))
		}
	}
	for i, raw := range p.Allow {
		r, err := parseAllowRule(raw)
		if err != nil || !r.prefix.IsValid() || r.prefix.Bits() != 0 {
			continue
		}
		every := "every IPv4 address, vigil's own loopback and a cloud's metadata address (169.254.169.254) included"
		if r.prefix.Addr().Is6() {
			every = "every IPv6 address, vigil's own loopback (::1) and a cloud's metadata address (fd00:ec2::254) included"
		}
		out = append(out, fmt.Sprintf("allow[%d]: %s lets a probe reach %s: list the networks the probes need", i, r.raw, every))
	}
	return out
}

func parseAllowRule(raw string) (allowRule, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return allowRule{}, errors.New("empty")
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return allowRule{}, errors.New("not a CIDR (want e.g. 10.0.0.0/8 or 2001:db8::/32)")
		}
		return allowRule{raw: s, prefix: p.Masked()}, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return allowRule{}, errors.New("an address with a zone cannot be allowed")
		}
		a = a.Unmap()
		return allowRule{raw: s, prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	if strings.ContainsAny(s, ":[] ") {
		return allowRule{}, errors.New("neither a CIDR, an address nor a host-name glob")
	}
	g := strings.TrimSuffix(strings.ToLower(s), ".")
	if _, err := path.Match(g, ""); err != nil {
		return allowRule{}, fmt.Errorf("bad glob: %v", err)
	}
	return allowRule{raw: s, glob: g}, nil
}

// matchName returns the glob rule that allows host name (not an address), if any.
func matchName(rules []allowRule, name string) (allowRule, bool) {
	n := strings.TrimSuffix(strings.ToLower(name), ".")
	for _, r := range rules {
		if r.glob != "" {
			if ok, _ := path.Match(r.glob, n); ok {
				return r, true
			}
		}
	}
	return allowRule{}, false
}

// matchAddr returns the CIDR rule that allows a, if any. An IPv4-mapped
// IPv6 address is matched as the IPv4 address it is; one with a zone never.
func matchAddr(rules []allowRule, a netip.Addr) (allowRule, bool) {
	a = a.Unmap()
	if a.Zone() != "" {
		return allowRule{}, false
	}
	for _, r := range rules {
		if r.prefix.IsValid() && r.prefix.Contains(a) {
			return r, true
		}
	}
	return allowRule{}, false
}
