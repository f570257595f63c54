package canary

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
	"github.com/vigil-synthetics/vigil/scripts"
)

// Pair is one compiled check × target: the unit the canary schedules, judges
// and publishes a verdict for.
type Pair struct {
	Check  *CheckConfig
	Target checks.Target
	Probe  checks.Check
}

// defaultRunTimeout bounds a run whose check has no timeout.
const defaultRunTimeout = 10 * time.Second

// RunContext returns the context a run of the pair gets from parent: parent
// with the check's timeout (default 10s), or parent itself, with a no-op
// cancel, for a probe that enforces its timeout itself (a script: it starts
// the timeout when it holds its browser slot). A deadline put on the
// context before such a run waits for its slot would, once passed, hide a
// later cancellation of parent (Ctrl-C, shutdown) from the queued run.
func (p *Pair) RunContext(parent context.Context) (context.Context, context.CancelFunc) {
	if e, ok := p.Probe.(interface{ EnforcesTimeout() bool }); ok && e.EnforcesTimeout() {
		return parent, func() {}
	}
	timeout := p.Check.Timeout
	if timeout <= 0 {
		timeout = defaultRunTimeout
	}
	return context.WithTimeout(parent, timeout)
}

// Key identifies the pair across reloads: check name × target name × what
// the check does. A pair whose key survives a reload keeps its state.
func (p Pair) Key() string { return p.Check.Name + "\x00" + p.Target.Name + "\x00" + p.Target.URL }

// CompileOptions carries what compiled checks need from the process.
type CompileOptions struct {
	// Version goes into the synthetic User-Agent (vigil/<version>).
	Version string
	// DataDir is where scripts write artifacts (default: agent.data_dir).
	DataDir string
	// ArtifactMaxAge is how long scripts keep failure artifacts under
	// DataDir (scripts.Options.ArtifactMaxAge). The agent passes
	// store.embedded.retention when the embedded store is on. Default
	// scripts.DefaultArtifactMaxAge (7 days).
	ArtifactMaxAge time.Duration
	// Browser is the shared browser for browser script steps; nil: browser
	// steps fail with cause browser_unavailable.
	Browser *scripts.Browser
	// Check keeps only the named check (empty: all).
	Check string
	// Shard, when Of > 1, keeps only the pairs whose key hashes to Index (0-based).
	Shard Shard
	// IncludeDisabled keeps checks marked disabled (for `vigil check`).
	IncludeDisabled bool
}

// Shard selects a slice of the pairs: `--shard i/n` keeps pairs whose key hashes to i (1-based on the command line).
type Shard struct{ Index, Of int }

// Owns reports whether the shard runs the pair with this key.
func (s Shard) Owns(key string) bool {
	if s.Of <= 1 {
		return true
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32()%uint32(s.Of)) == s.Index
}

// Compile turns a validated config into pairs. Call ValidateAndSetDefaults
// first. Every check that does not compile is reported, one error each,
// prefixed "checks[i] (name): ".
func (c *Config) Compile(o CompileOptions) ([]Pair, error) {
	if o.DataDir == "" {
		o.DataDir = c.Agent.DataDir
	}
	targets := map[string]string{}
	for _, t := range c.Targets {
		targets[t.Name] = t.URL
	}
	var pairs []Pair
	var errs []error
	for i := range c.Checks {
		ch := &c.Checks[i]
		if o.Check != "" && ch.Name != o.Check {
			continue
		}
		if ch.Disabled && !o.IncludeDisabled {
			continue
		}
		if ch.Push != nil && !ch.Push.RunsIn(c.Agent.Region) {
			// Judged by the agents of push.region, which get its pings.
			continue
		}
		probe, err := ch.compile(o)
		if err != nil {
			// One error per line, each naming its check.
			for _, e := range units.Errors(err) {
				errs = append(errs, fmt.Errorf("checks[%d] (%s): %w", i, ch.Name, e))
			}
			continue
		}
		var ts []checks.Target
		if ch.Push != nil {
			// One implicit target, named after the check.
			ts = append(ts, checks.Target{Name: ch.Name})
		}
		if ch.URL != "" {
			ts = append(ts, checks.Target{Name: targetNameForURL(ch.URL), URL: ch.URL})
		}
		for _, name := range ch.Targets {
			ts = append(ts, checks.Target{Name: name, URL: targets[name]})
		}
		for _, t := range ts {
			p := Pair{Check: ch, Target: t, Probe: probe}
			if o.Shard.Owns(p.Key()) {
				pairs = append(pairs, p)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.Check != "" && len(pairs) == 0 {
		return nil, fmt.Errorf("no check named %q", o.Check)
	}
	return pairs, nil
}

// TargetNameForURL names the implicit target of a check that sets url:
// the URL's host:port.
func TargetNameForURL(u string) string { return targetNameForURL(u) }

func targetNameForURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexAny(u, "/?#"); i >= 0 {
		u = u[:i]
	}
	if i := strings.LastIndex(u, "@"); i >= 0 {
		u = u[i+1:]
	}
	return u
}

func (ch *CheckConfig) compile(o CompileOptions) (checks.Check, error) {
	opts := checks.Options{Check: ch.Name, Version: o.Version, Timeout: ch.Timeout}
	switch ch.Kind() {
	case "push":
		return pushProbe{check: ch.Name}, nil
	case "script":
		return scripts.New(ch.Script, scripts.Options{Check: ch.Name, Version: o.Version,
			Timeout: ch.Timeout, DataDir: o.DataDir, ArtifactMaxAge: o.ArtifactMaxAge, Browser: o.Browser})
	case "tcp":
		return checks.NewTCP(*ch.TCP, *ch.Expect, opts)
	case "tls":
		return checks.NewTLS(*ch.TLS, *ch.Expect, opts)
	case "dns":
		return checks.NewDNS(*ch.DNS, *ch.Expect, opts)
	case "grpc":
		return checks.NewGRPC(*ch.GRPC, *ch.Expect, opts)
	case "icmp":
		return checks.NewICMP(*ch.ICMP, *ch.Expect, opts)
	}
	return checks.NewHTTP(*ch.HTTP, *ch.Expect, opts)
}

// PairNames returns the check × target pairs the config runs, as check
// name → target names, over every shard and without disabled checks: what
// an alerter judges (alerting.Alerter.SetPairs).
func (c *Config) PairNames() map[string][]string {
	out := make(map[string][]string, len(c.Checks))
	for i := range c.Checks {
		ch := &c.Checks[i]
		if ch.Disabled {
			continue
		}
		var ts []string
		if ch.Push != nil {
			ts = append(ts, ch.Name)
		}
		if ch.URL != "" {
			ts = append(ts, targetNameForURL(ch.URL))
		}
		out[ch.Name] = append(ts, ch.Targets...)
	}
	return out
}

// Secrets returns the credentials the config writes as they are, for the
// config's redactor to hide as it hides ${NAME} values, in the encodings
// checks.Redactor knows: a check sends them (as Authorization: Basic, as
// Proxy-Authorization, as a header), and an origin, a proxy or their error
// pages may echo them back, raw or base64-encoded ("Basic ***"). They are:
//
//   - the userinfo of a URL: targets' url, checks' url and http.url,
//     http.proxy_url, a script http step's url and proxy_url and a
//     browser step's navigate URL: each password, each user:password, and
//     a user given without a password (https://TOKEN@host) of
//     checks.MinEncodedSecret bytes or more;
//   - http.basic_auth of checks and script steps: the password and
//     user:password;
//   - the value of every http.headers entry whose name is sensitive
//     (checks.SensitiveName: Authorization, Proxy-Authorization, Cookie,
//     X-Api-Key, …), as headerSecrets splits it: an Authorization value's
//     credentials without the scheme, a Cookie's values;
//   - the value of every query parameter and form field whose name is
//     sensitive (checks.SensitiveName: access_token, api_key, password,
//     …): http.query and http.form, and the query string of the URLs
//     above and of http.path (decoded);
//   - the value of every http.json field whose name is sensitive, at any
//     depth, and every value inside it (an object or an array under
//     "credentials");
//   - agent.admin_token, which the agent sends to its peers;
//   - every push check's push.token.
//
// The config's redactor leaves out values under 3 bytes.
//
// A script step's value that holds "${" is left out: it is expanded at
// run time, and a ${env:NAME} value is a secret of the run already. The
// URLs themselves are shown without userinfo (units.RedactURL).
func (c *Config) Secrets() []string {
	var out []string
	fromURL := func(raw string) {
		if !strings.Contains(raw, "@") {
			return
		}
		u, err := url.Parse(raw)
		if err != nil || u.User == nil {
			return
		}
		user := u.User.Username()
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw, user+":"+pw)
		} else if len(user) >= checks.MinEncodedSecret {
			out = append(out, user)
		}
	}
	// The values of a query string's parameters whose name is sensitive
	// (?access_token=…, ?api_key=…), decoded.
	fromQuery := func(raw string, literal func(string) bool) {
		_, q, ok := strings.Cut(raw, "?")
		if !ok {
			return
		}
		q, _, _ = strings.Cut(q, "#")
		vals, _ := url.ParseQuery(q) // the pairs before a malformed one
		for name, vs := range vals {
			if checks.SensitiveName(name) {
				for _, v := range vs {
					if literal(v) {
						out = append(out, v)
					}
				}
			}
		}
	}
	fromURLQuery := func(raw string, literal func(string) bool) {
		if literal(raw) {
			fromURL(raw)
		}
		fromQuery(raw, literal)
	}
	fromHTTP := func(h *checks.HTTPSpec, step bool) {
		if h == nil {
			return
		}
		literal := func(v string) bool { return !step || !strings.Contains(v, "${") }
		for _, raw := range []string{h.URL, h.ProxyURL} {
			fromURLQuery(raw, literal)
		}
		fromQuery(h.Path, literal)
		for _, m := range []map[string]string{h.Query, h.Form} {
			for name, v := range m {
				if checks.SensitiveName(name) && literal(v) {
					out = append(out, v)
				}
			}
		}
		out = append(out, jsonSecrets(h.JSON, false, literal)...)
		if ba := h.BasicAuth; ba != nil && literal(ba.Username) && literal(ba.Password) {
			out = append(out, ba.Password, ba.Username+":"+ba.Password)
		}
		for name, v := range h.Headers {
			if checks.SensitiveName(name) && literal(v) {
				out = append(out, headerSecrets(name, v)...)
			}
		}
	}
	always := func(string) bool { return true }
	for _, t := range c.Targets {
		fromURLQuery(t.URL, always)
	}
	for _, ch := range c.Checks {
		fromURLQuery(ch.URL, always)
		fromHTTP(ch.HTTP, false)
		for _, st := range ch.Script {
			fromHTTP(st.HTTP, true)
			if st.Browser != nil {
				fromURLQuery(navigateURL(st.Browser.Navigate), func(v string) bool { return !strings.Contains(v, "${") })
			}
		}
	}
	// An admin token still written "${NAME}" is a reference that did not
	// expand (the load fails, naming it): not a secret to hide.
	if c.Agent.AdminToken != "" && !strings.Contains(c.Agent.AdminToken, "${") {
		out = append(out, c.Agent.AdminToken)
	}
	for _, ch := range c.Checks {
		if ch.Push != nil && ch.Push.Token != "" && !strings.Contains(ch.Push.Token, "${") {
			out = append(out, ch.Push.Token)
		}
	}
	return out
}

// jsonSecrets returns the scalars of the json value v (an http.json body)
// whose key, or a key enclosing them, is a sensitive name, at any depth
// ({"user": {"password": …}}, {"tokens": […]}), as text; under is whether
// an enclosing key is sensitive. A string literal rejects is left out.
func jsonSecrets(v any, under bool, literal func(string) bool) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out = append(out, jsonSecrets(e, under || checks.SensitiveName(k), literal)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, jsonSecrets(e, under, literal)...)
		}
	case string:
		if under && literal(x) {
			out = append(out, x)
		}
	case nil, bool:
	default:
		if under {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

// headerSecrets are the parts of v, the value of the sensitive header
// name, to hide: each cookie value of a Cookie header; the credentials of
// an "<scheme> <credentials>" value, and for Basic the user:password they
// decode to and the password, so that an echo shows "Bearer ***"; else v.
func headerSecrets(name, v string) []string {
	v = strings.TrimSpace(v)
	if strings.EqualFold(name, "Cookie") {
		var out []string
		for _, kv := range strings.Split(v, ";") {
			if _, val, ok := strings.Cut(kv, "="); ok {
				out = append(out, strings.Trim(strings.TrimSpace(val), `"`))
			}
		}
		return out
	}
	scheme, cred, ok := strings.Cut(v, " ")
	cred = strings.TrimSpace(cred)
	if !ok || cred == "" || len(scheme) > 20 || strings.ContainsFunc(scheme, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._", r))
	}) {
		return []string{v}
	}
	out := []string{cred}
	if strings.EqualFold(scheme, "Basic") {
		if b, err := base64.StdEncoding.DecodeString(cred); err == nil && utf8.Valid(b) {
			if _, pw, ok := strings.Cut(string(b), ":"); ok {
				out = append(out, string(b), pw)
			}
		}
	}
	return out
}

// navigateURL is the URL of a browser step's navigate as decoded (a
// string, or a mapping with url), "" for none.
func navigateURL(v any) string {
	switch n := v.(type) {
	case string:
		return n
	case *string:
		if n != nil {
			return *n
		}
	case map[string]any:
		for k, u := range n {
			if s, ok := u.(string); ok && strings.EqualFold(k, "url") {
				return s
			}
		}
	case scripts.NavigateAction:
		return n.URL
	case *scripts.NavigateAction:
		if n != nil {
			return n.URL
		}
	}
	return ""
}
