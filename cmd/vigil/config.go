package main

import (
	"bytes"
	"cmp"
	"encoding"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/proxy"
	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/alerting"
	"github.com/vigil-synthetics/vigil/reporting/statuspage"
	"github.com/vigil-synthetics/vigil/reporting/store"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// ErrUnknownKey marks a config key that vigil does not know.
var ErrUnknownKey = errors.New("unknown key")

// errNothingConfigured: the file gives no role anything to do.
var errNothingConfigured = errors.New("nothing to run: no checks:, proxy:, alerting:, slos: or store: section (is this a vigil config file?)")

// File is the whole config file. Each section is owned by the package that
// uses it; File only composes them.
type File struct {
	canary.Config `mapstructure:",squash"`
	Store         store.Config      `mapstructure:"store"`
	SLOs          []alerting.SLO    `mapstructure:"slos"`
	Alerting      alerting.Config   `mapstructure:"alerting"`
	StatusPage    statuspage.Config `mapstructure:"status_page"`
	// Proxy is nil when the file has no proxy section.
	Proxy *proxy.Config `mapstructure:"proxy"`

	path     string
	stamp    string            // fileStamp of the file as it was read
	keys     *keyIndex         // the line of each key the file writes
	fromEnv  map[string]string // key → the VIGIL_* variable that set it
	redactor *redactor
	// foreign: variables written as other tools write them in request
	// fields, warned about (see foreignVars).
	foreign []foreignVar
	// sections holds the top-level keys the file sets (lower case).
	sections map[string]bool
	// statusPageDefault: alerting.status_page_url was not set and is
	// derived from agent.listen (statusPageBase); --listen moves it
	// (overrideListen).
	statusPageDefault bool
}

// overrideListen applies --listen (listen, "" for none) to what the file
// derives from agent.listen: a defaulted alerting.status_page_url links
// to the address the status page is served on, not to agent.listen's.
// Call it on every config the app runs, at start and on reload. A
// --listen binding every address is warned about as agent.listen is (see
// statusPageWarning), unless agent.listen is the same and was already.
func (f *File) overrideListen(listen string) {
	if listen == "" || !f.statusPageDefault {
		return
	}
	base, wildcard := statusPageBase(listen)
	f.Alerting.StatusPageURL = base
	if wildcard && listen != f.Agent.Listen && !f.Alerting.Disabled {
		slog.Warn(statusPageWarning("--listen", listen, base))
	}
}

// hostName is os.Hostname; tests replace it.
var hostName = os.Hostname

// statusPageBase is the default alerting.status_page_url for a status page
// served on listen (host:port): "http://" + listen, except that a host
// binding every address (empty, 0.0.0.0, ::), which no browser can open,
// is replaced by the machine's host name (localhost when it has none);
// wildcard reports that replacement.
func statusPageBase(listen string) (base string, wildcard bool) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "http://" + listen, false
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return "http://" + listen, false
	}
	name, err := hostName()
	if name = strings.ToLower(strings.TrimSuffix(name, ".")); err != nil || name == "" {
		name = "localhost"
	}
	return "http://" + net.JoinHostPort(name, port), true
}

// statusPageWarning says that the default alerting.status_page_url guessed
// base for a status page served on addr, a wildcard address set by key
// (agent.listen or --listen).
func statusPageWarning(key, addr, base string) string {
	return fmt.Sprintf("alerting.status_page_url: not set and %s %q binds every address; alert links use %s: set status_page_url to the address your on-call reaches",
		key, addr, base)
}

// statusPageWarnings warns when alerting.status_page_url defaulted to a
// guess (agent.listen binds every address): every alert link (status_url,
// Slack and PagerDuty links, generatorURL, the Prometheus rules'
// annotations) is built on it. Not when alerting is disabled.
func (f *File) statusPageWarnings() []string {
	if !f.statusPageDefault || f.Alerting.Disabled {
		return nil
	}
	if base, wildcard := statusPageBase(f.Agent.Listen); wildcard {
		return []string{statusPageWarning("agent.listen", f.Agent.Listen, base)}
	}
	return nil
}

// minCheckInterval is the shortest interval a check may run at (checks[].interval,
// defaults.interval). Package tests lower it to run end-to-end scenarios fast.
var minCheckInterval atomic.Int64

func init() { minCheckInterval.Store(int64(time.Second)) }

// ValidateAndSetDefaults validates every section and the references
// between them (SLOs name checks, proxy origins name targets).
func (f *File) ValidateAndSetDefaults() error {
	var errs []error
	if len(f.Checks) == 0 && len(f.SLOs) == 0 && f.Proxy == nil && !f.sections["alerting"] && !f.sections["store"] {
		// Nothing for any role to do: an empty file, or a typo'd section name
		// caught as an unknown key already.
		errs = append(errs, errNothingConfigured)
	}
	errs = append(errs, f.checkIntervals()...)
	canaryErr := f.Config.ValidateAndSetDefaults()
	errs = append(errs, canaryErr)
	if canaryErr == nil {
		// The same compile step `vigil run` and `vigil check` take, so that
		// validate rejects everything they would (expect.size above
		// http.body_limit, script steps, …). Pairs are discarded.
		if _, err := f.Config.Compile(canary.CompileOptions{IncludeDisabled: true}); err != nil {
			errs = append(errs, err)
		}
	} else {
		errs = append(errs, f.compileValidChecks(canaryErr)...)
	}
	errs = append(errs, units.Prefix("store", f.Store.ValidateAndSetDefaults()))
	errs = append(errs, units.Prefix("status_page", f.StatusPage.ValidateAndSetDefaults()))
	checkNames := map[string]bool{}
	checkTargets := map[string][]string{} // check name → the targets it runs on
	for _, c := range f.Checks {
		checkNames[c.Name] = true
		checkTargets[c.Name] = checkTargetNames(c)
	}
	targets := map[string]string{}
	for _, t := range f.Targets {
		targets[t.Name] = t.URL
	}
	// Targets with an error of their own (targets[i]…).
	badTargets := map[string]bool{}
	for _, e := range units.Errors(canaryErr) {
		for i, t := range f.Targets {
			if strings.HasPrefix(e.Error(), fmt.Sprintf("targets[%d].", i)) {
				badTargets[t.Name] = true
			}
		}
	}
	for i := range f.SLOs {
		p := fmt.Sprintf("slos[%d]", i)
		errs = append(errs, units.Prefix(p, f.SLOs[i].ValidateAndSetDefaults()))
		if c := f.SLOs[i].Check; c != "" && !checkNames[c] {
			errs = append(errs, &checkRefError{fmt.Sprintf("%s.check: %q: no check with that name%s", p, c, didYouMean(c, checkNames))})
		}
		if t := f.SLOs[i].Target; t != "" {
			if _, ok := targets[t]; !ok {
				errs = append(errs, fmt.Errorf("%s.target: %q: %w%s", p, t, canary.ErrUnknownTarget, didYouMean(t, targets)))
			} else if ts, ok := checkTargets[f.SLOs[i].Check]; ok && !slices.Contains(ts, t) {
				// No verdict of that pair ever comes: the SLO could never fire.
				errs = append(errs, fmt.Errorf("%s.target: %q: check %q does not run on target %s (its targets: %s)",
					p, t, f.SLOs[i].Check, t, strings.Join(ts, ", ")))
			}
		}
	}
	errs = append(errs, alerting.ValidateSLOs(f.SLOs))
	// Check names elsewhere must exist when this file defines checks. A file
	// without checks (a proxy or alerter reading other regions' verdicts
	// from InfluxDB or --verdicts-from) cannot know them.
	knownCheck := func(key, name string) error {
		if len(f.Checks) == 0 || checkNames[name] {
			return nil
		}
		return &checkRefError{fmt.Sprintf("%s: unknown check %q%s", key, name, didYouMean(name, checkNames))}
	}
	for i, m := range f.Alerting.Maintenance {
		for j, c := range m.Checks {
			errs = append(errs, knownCheck(fmt.Sprintf("alerting.maintenance[%d].checks[%d]", i, j), c))
		}
	}
	for i, pc := range f.StatusPage.Public.Checks {
		if pc.Check != "" {
			errs = append(errs, knownCheck(fmt.Sprintf("status_page.public.checks[%d]", i), pc.Check))
		}
	}
	if pl := f.StatusPage.Public.Listen; pl != "" && !strings.HasSuffix(pl, ":0") {
		others := []struct{ key, addr string }{{"agent.listen", f.Agent.Listen}}
		if f.Proxy != nil {
			others = append(others, struct{ key, addr string }{"proxy.listen", f.Proxy.Listen}, struct{ key, addr string }{"proxy.tls_listen", f.Proxy.TLSListen})
		}
		for _, o := range others {
			if o.addr == pl {
				errs = append(errs, fmt.Errorf("status_page.public.listen: %s is also %s: each listener needs its own address", pl, o.key))
			}
		}
	}
	if f.Proxy != nil {
		// Two listeners on one address: the second fails to bind at start.
		// Port 0 (any free port) never clashes.
		seen := map[string]string{}
		for _, l := range []struct{ key, addr string }{
			{"agent.listen", f.Agent.Listen}, {"proxy.listen", f.Proxy.Listen}, {"proxy.tls_listen", f.Proxy.TLSListen},
		} {
			if l.addr == "" || strings.HasSuffix(l.addr, ":0") {
				continue
			}
			if prev, ok := seen[l.addr]; ok {
				errs = append(errs, fmt.Errorf("%s: %s is also %s: each listener needs its own address", l.key, l.addr, prev))
				continue
			}
			seen[l.addr] = l.key
		}
		for i, p := range f.Proxy.Pools {
			for j, c := range p.Verdicts.Checks {
				errs = append(errs, knownCheck(fmt.Sprintf("proxy.pools[%d].verdicts.checks[%d]", i, j), c))
			}
			for j, t := range p.Verdicts.Tiers {
				switch t {
				case reporting.TierShallow, reporting.TierDeep, reporting.TierSynthetic:
				default:
					errs = append(errs, fmt.Errorf("proxy.pools[%d].verdicts.tiers[%d]: %q: want shallow, deep or synthetic", i, j, t))
				}
			}
		}
	}
	if f.Alerting.StatusPageURL == "" && f.Agent.Listen != "" {
		f.Alerting.StatusPageURL, _ = statusPageBase(f.Agent.Listen)
		f.statusPageDefault = true
	}
	errs = append(errs, units.Prefix("alerting", f.Alerting.ValidateAndSetDefaults()))
	if f.Proxy != nil {
		f.Proxy.AdminToken = strings.TrimSpace(f.Proxy.AdminToken) // as agent.admin_token
		if f.Proxy.AdminToken == "" {
			f.Proxy.AdminToken = f.Agent.AdminToken
		}
		if f.Proxy.Region == "" {
			f.Proxy.Region = f.Agent.Region
		}
		if f.Proxy.Vantage == "" {
			f.Proxy.Vantage = f.Agent.Vantage
		}
		var unknownTarget []string // origins whose target is unknown: they have no url
		for i := range f.Proxy.Pools {
			for j := range f.Proxy.Pools[i].Origins {
				o := &f.Proxy.Pools[i].Origins[j]
				if o.Target == "" || o.URL != "" {
					continue
				}
				u, ok := targets[o.Target]
				if !ok {
					errs = append(errs, fmt.Errorf("proxy.pools[%d].origins[%d].target: %q: %w%s", i, j, o.Target, canary.ErrUnknownTarget, didYouMean(o.Target, targets)))
					unknownTarget = append(unknownTarget, fmt.Sprintf("proxy.pools[%d].origins[%d].url", i, j))
					continue
				}
				o.URL = u
			}
		}
		// An origin whose target is invalid gets the target's error only,
		// and one whose target is unknown that error only.
		fromBad := unknownTarget
		for i, p := range f.Proxy.Pools {
			for j, o := range p.Origins {
				if o.Target != "" && badTargets[o.Target] {
					fromBad = append(fromBad, fmt.Sprintf("proxy.pools[%d].origins[%d].url", i, j))
				}
			}
		}
		errs = append(errs, dropUnder(units.Errors(units.Prefix("proxy", f.Proxy.ValidateAndSetDefaults())), fromBad)...)
	}
	return errors.Join(errs...)
}

// verdictAges warns about a pool whose verdicts.max_age is shorter than the
// longest gap between two verdicts of a check it counts on one of its
// origins: interval + jitter (the next run may start that late in its slot)
// + timeout (and end that late) + verdict_poll (and be read that late).
// Between two such verdicts the last one is stale, so an origin the check
// fails would return to service until the next run, every run. Cron checks
// (no fixed interval) and disabled ones are not judged. A warning, not an
// error: the file ran before this was checked, and the fix (a longer
// max_age, or a pool counting only its frequent checks) is the user's call.
func (f *File) verdictAges() []string {
	if f.Proxy == nil {
		return nil
	}
	var warns []string
	for i, p := range f.Proxy.Pools {
		if p.Verdicts.MaxAge <= 0 {
			continue
		}
		origins := map[string]bool{}
		for _, o := range p.Origins {
			if o.Target != "" {
				origins[o.Target] = true
			}
		}
		for _, c := range f.Checks {
			if c.Disabled || c.Cron != "" || c.Interval <= 0 || !poolCounts(p, c) {
				continue
			}
			onOrigin := false
			for _, t := range c.Targets {
				onOrigin = onOrigin || origins[t]
			}
			if !onOrigin {
				continue
			}
			var jitter time.Duration
			if c.Jitter != nil {
				jitter = time.Duration(float64(c.Interval) * c.Jitter.Fraction())
			}
			gap := c.Interval + jitter + c.Timeout + f.Proxy.VerdictPoll
			if gap <= p.Verdicts.MaxAge {
				continue
			}
			warns = append(warns, fmt.Sprintf("proxy.pools[%d].verdicts.max_age: %s is shorter than the longest gap between two verdicts of check %q "+
				"(interval %s + jitter %s + timeout %s + verdict_poll %s = %s): between its runs the verdict is stale and an origin it fails "+
				"returns to service until the next run; set max_age to at least %s, or leave the check out of the pool's verdicts.checks/tiers "+
				"(a long max_age also keeps a stopped canary's verdicts counting that long)",
				i, p.Verdicts.MaxAge, c.Name, c.Interval, jitter, c.Timeout, f.Proxy.VerdictPoll, gap, gap.Round(time.Second)+time.Second))
		}
	}
	return warns
}

// checkTargetNames returns the targets check c runs on: the host:port of
// its url, then its targets.
func checkTargetNames(c canary.CheckConfig) []string {
	var ts []string
	if c.Push != nil {
		ts = append(ts, c.Name) // a push check's one target
	}
	if c.URL != "" {
		ts = append(ts, canary.TargetNameForURL(c.URL))
	}
	return append(ts, c.Targets...)
}

// poolChecks warns about a check a pool's verdicts.checks names that runs
// on none of the pool's origin targets: its verdicts never concern the
// pool, which judges its origins without it (and, when it names no other
// check that does run on them, by passive detection alone). A warning, not
// an error: the file ran before this was checked. Pools with an origin
// given by url (no target) are not judged.
func (f *File) poolChecks() []string {
	if f.Proxy == nil {
		return nil
	}
	byName := map[string]canary.CheckConfig{}
	for _, c := range f.Checks {
		byName[c.Name] = c
	}
	var warns []string
	for i, p := range f.Proxy.Pools {
		var origins []string
		for _, o := range p.Origins {
			if o.Target == "" {
				origins = nil
				break
			}
			origins = append(origins, o.Target)
		}
		if len(origins) == 0 {
			continue
		}
		for j, name := range p.Verdicts.Checks {
			c, ok := byName[name]
			if !ok {
				continue // an unknown check is an error of its own
			}
			ts := checkTargetNames(c)
			if slices.ContainsFunc(ts, func(t string) bool { return slices.Contains(origins, t) }) {
				continue
			}
			warns = append(warns, fmt.Sprintf("proxy.pools[%d].verdicts.checks[%d]: check %q runs on none of the pool's origins (its targets: %s; the pool's origins: %s): "+
				"its verdicts never count for the pool, which judges its origins without it (by passive detection alone when no other check it counts runs on them)",
				i, j, name, strings.Join(ts, ", "), strings.Join(origins, ", ")))
		}
	}
	return warns
}

// poolCounts reports whether a pool's verdicts count check c: every check
// when the pool names neither checks nor tiers.
func poolCounts(p proxy.PoolConfig, c canary.CheckConfig) bool {
	if len(p.Verdicts.Checks) == 0 && len(p.Verdicts.Tiers) == 0 {
		return true
	}
	return slices.Contains(p.Verdicts.Checks, c.Name) || slices.Contains(p.Verdicts.Tiers, c.Tier)
}

// compileValidChecks compiles, one by one, the checks that passed
// validation when others did not, so that one run of validate lists their
// compile errors too. It compiles nothing when an error lies outside
// checks[] (agent, defaults, targets), since every check depends on those,
// nor a check whose name is empty or shared.
func (f *File) compileValidChecks(canaryErr error) []error {
	bad := map[int]bool{}
	for _, e := range units.Errors(canaryErr) {
		m := checkIndexRE.FindStringSubmatch(e.Error())
		if m == nil {
			return nil
		}
		i, _ := strconv.Atoi(m[1])
		bad[i] = true
	}
	names := map[string]int{}
	for _, ch := range f.Checks {
		names[ch.Name]++
	}
	var errs []error
	for i, ch := range f.Checks {
		if bad[i] || ch.Name == "" || names[ch.Name] > 1 {
			continue
		}
		_, err := f.Config.Compile(canary.CompileOptions{IncludeDisabled: true, Check: ch.Name})
		for _, e := range units.Errors(err) {
			if checkIndexRE.MatchString(e.Error()) {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

// checkIndexRE matches an error about one check: "checks[3]…".
var checkIndexRE = regexp.MustCompile(`^checks\[(\d+)\]`)

// checkIntervals rejects intervals set in the file below minCheckInterval
// (before defaults fill them in, so an inherited interval is reported once,
// at defaults.interval).
func (f *File) checkIntervals() []error {
	min := time.Duration(minCheckInterval.Load())
	var errs []error
	if d := f.Defaults.Interval; d > 0 && d < min {
		errs = append(errs, fmt.Errorf("defaults.interval: %s is below the %s minimum", d, min))
	}
	for i, c := range f.Checks {
		if c.Interval > 0 && c.Interval < min && c.Cron == "" {
			errs = append(errs, fmt.Errorf("checks[%d].interval: %s is below the %s minimum", i, c.Interval, min))
		}
	}
	return errs
}

// LoadError is every problem found in a config file, one per line, each
// naming its key path, and the line of the file that key is written on
// ("vigil.yaml:12: checks[3].interval: …"), in file order. Errors about a
// value an environment override (VIGIL_*) set name that variable instead
// of a line; errors about no one key (nothing configured) come first,
// without a line. Secrets interpolated from the environment are redacted.
type LoadError struct {
	File   string
	Errors []error
	red    *redactor
}

func (e *LoadError) Error() string { return e.text(false) }

// Report is the LoadError as vigil validate prints it: as Error, but a
// YAML syntax error is followed by the line at fault, shown with a caret
// under its column (see excerpt), instead of quoting that line.
func (e *LoadError) Report() string { return e.text(true) }

func (e *LoadError) text(excerpts bool) string {
	var b strings.Builder
	for i, err := range e.Errors {
		if i > 0 {
			b.WriteByte('\n')
		}
		le, ok := err.(*lineError)
		if !ok || le.line <= 0 {
			b.WriteString(e.File + ": " + e.red.redact(errorLine(err.Error())))
			continue
		}
		b.WriteString(prefix(e.File, le.line, le.col) + e.red.redact(errorLine(err.Error())) + le.note)
		switch {
		case le.src != "" && excerpts:
			b.WriteString("\n" + excerpt(le.line, le.src, le.col))
		case le.src != "":
			b.WriteString(" (" + quoteLine([]byte(le.src)) + ")")
		}
	}
	return b.String()
}

// newLoadError is the LoadError of file for errs (nil ones left out), each
// placed at the line of the key it names (see keyIndex.lookup; keys nil:
// none is), sorted by line. An error already placed (lineError) keeps its
// line, and one about a value an environment override set (envError) gets
// none: it names the variable.
func newLoadError(file string, errs []error, red *redactor, keys *keyIndex) *LoadError {
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		if err == nil {
			continue
		}
		switch err.(type) {
		case *lineError, *envError:
		default:
			if kp, ok := keys.lookup(err.Error()); ok {
				err = atPlace(kp, err)
			}
		}
		out = append(out, err)
	}
	slices.SortStableFunc(out, func(a, b error) int {
		la, ca := errorPlace(a)
		lb, cb := errorPlace(b)
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(ca, cb))
	})
	return &LoadError{File: file, Errors: out, red: red}
}

// errorPlace is the line and column of the file err is placed at, 0 for
// none.
func errorPlace(err error) (line, col int) {
	if le, ok := err.(*lineError); ok {
		return le.line, le.col
	}
	return 0, 0
}

// errorLine puts an error of several lines (an expression's compile error
// with its source excerpt) on one, so that each line of a LoadError is one
// error: the lines are joined with "; ", and the excerpt lines ("| 1 + ",
// "| ..^") dropped, as the first line gives the position.
func errorLine(msg string) string {
	if !strings.Contains(msg, "\n") {
		return msg
	}
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "|") {
			continue
		}
		parts = append(parts, l)
	}
	return strings.Join(parts, "; ")
}

var dupKeyRE = regexp.MustCompile(`^line (\d+): mapping key "(.*)" already defined at line (\d+)$`)

// yamlTypeErrors turns the YAML decoder's list of problems ("yaml:
// unmarshal errors:\n  line 11: mapping key …") into one error each. A
// key given twice in one mapping is named by its path:
// "checks[0].interval: given twice, at lines 10 and 11 (keep one)".
func yamlTypeErrors(doc *yaml.Node, te *yaml.TypeError) []error {
	// The decoder stops at the first mapping with a key given twice: the
	// node tree (where a key given twice is no error) has them all.
	if errs := dupKeys(doc, ""); len(errs) > 0 {
		return errs
	}
	var errs []error
	for _, m := range te.Errors {
		m = strings.TrimSpace(m)
		if sm := dupKeyRE.FindStringSubmatch(m); sm != nil {
			line, _ := strconv.Atoi(sm[1])
			if p := nodePathAt(doc, "", line, sm[2]); p != "" {
				errs = append(errs, atLine(line, fmt.Errorf("%s: given twice, at lines %s and %s (keep one)", p, sm[3], sm[1])))
				continue
			}
		}
		if sm := typeErrRE.FindStringSubmatch(m); sm != nil {
			line, _ := strconv.Atoi(sm[1])
			errs = append(errs, atLine(line, fmt.Errorf("not valid YAML: %s", sm[2])))
			continue
		}
		errs = append(errs, fmt.Errorf("not valid YAML: %s", m))
	}
	return errs
}

// onlyDupKeys reports whether the YAML decoder's problems are all keys
// given twice in a mapping.
func onlyDupKeys(te *yaml.TypeError) bool {
	for _, m := range te.Errors {
		if !dupKeyRE.MatchString(strings.TrimSpace(m)) {
			return false
		}
	}
	return len(te.Errors) > 0
}

// typeErrRE matches one of the YAML decoder's problems: "line N: message".
var typeErrRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// configDocument parses raw and returns its one YAML document. A file
// holds one: documents that are empty (a "---" marker alone, comments, a
// null) are skipped, so a leading "---" is fine, but a second document
// with content is an error naming the line of its marker, since vigil would
// otherwise read the first and drop the rest without a word (the YAML
// decoder reads one document). A file with no content at all is its first
// (empty) document.
func configDocument(raw []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var doc *yaml.Node
	for {
		n := new(yaml.Node)
		err := dec.Decode(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, locateYAMLError(raw, err.Error())
		}
		switch {
		case doc == nil:
			doc = n
		case emptyDocument(n):
		case emptyDocument(doc):
			doc = n
		default:
			// Its "---" marker, on the line before its content (or on it).
			line := n.Line
			lines := bytes.Split(raw, []byte("\n"))
			for line > 1 && line <= len(lines) && !bytes.HasPrefix(lines[line-1], []byte("---")) {
				line--
			}
			src := ""
			if line <= len(lines) {
				src = strings.TrimRight(string(lines[line-1]), "\r")
			}
			return nil, &lineError{line: line, col: 1, src: src,
				err: errors.New(`a second YAML document ("---"): vigil reads one document per file (merge them into one)`)}
		}
	}
	if doc == nil {
		doc = &yaml.Node{Kind: yaml.DocumentNode}
	}
	return doc, nil
}

// emptyDocument reports whether a YAML document holds nothing (comments
// only) or a null.
func emptyDocument(n *yaml.Node) bool {
	return len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].ShortTag() == "!!null")
}

// dupKeys returns an error for each key given twice in one mapping of
// the tree, in file order.
func dupKeys(n *yaml.Node, path string) []error {
	var errs []error
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			errs = append(errs, dupKeys(c, path)...)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			errs = append(errs, dupKeys(c, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case yaml.MappingNode:
		first := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if k.Kind == yaml.ScalarNode && k.ShortTag() != "!!merge" {
				if f, ok := first[k.Value]; ok {
					err := &lineError{line: k.Line, err: fmt.Errorf("%s: given twice, at lines %d and %d (keep one)", p, f.Line, k.Line)}
					if n.Style&yaml.FlowStyle != 0 {
						// In a flow mapping ({a: 1, a: 2}), maybe on one line.
						err.col = k.Column
						if f.Line == k.Line {
							err.err = fmt.Errorf("%s: given twice on this line, at columns %d and %d (keep one)", p, f.Column, k.Column)
						}
					}
					errs = append(errs, err)
				} else {
					first[k.Value] = k
				}
			}
			errs = append(errs, dupKeys(v, p)...)
		}
	}
	return errs
}

// nodePathAt returns the key path ("checks[0].interval") of the mapping
// key written key at line, or "".
func nodePathAt(n *yaml.Node, path string, line int, key string) string {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p := nodePathAt(c, path, line, key); p != "" {
				return p
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p := nodePathAt(c, fmt.Sprintf("%s[%d]", path, i), line, key); p != "" {
				return p
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Line == line && k.Value == key {
				return join(k.Value)
			}
			if p := nodePathAt(v, join(k.Value), line, key); p != "" {
				return p
			}
		}
	}
	return ""
}

// Unwrap exposes the individual errors to errors.Is.
func (e *LoadError) Unwrap() []error { return e.Errors }

// loadConfig reads, interpolates, decodes and validates a config file.
// env is the environment lookup (os.LookupEnv in production). VIGIL_*
// variables of the process environment that override no key are logged as
// warnings (see unknownEnv).
func loadConfig(path string, env func(string) (string, bool)) (*File, error) {
	return loadConfigWarn(path, env, os.Environ(), func(msg string) { slog.Warn(msg) })
}

// loadConfigWarn is loadConfig with the environment listing to look for
// misspelled overrides in and the function that reports them (see
// loadConfigWarnings), each message whole.
func loadConfigWarn(path string, env func(string) (string, bool), environ []string, warn func(string)) (*File, error) {
	f, warns, err := loadConfigWarnings(path, env, environ)
	for _, w := range warns {
		warn(w.text)
	}
	return f, err
}

// warning is a warning about a config file or the environment, as it is
// printed, and where in the file it is placed.
type warning struct {
	line, col int
	text      string
}

// sortWarnings puts warnings in file order: those placed at no line (about
// the environment, or a value an override set) first.
func sortWarnings(ws []warning) {
	slices.SortStableFunc(ws, func(a, b warning) int {
		return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.col, b.col))
	})
}

// loadConfigWarnings is loadConfig with the environment listing to look
// for misspelled overrides in; it returns the warnings about the file and
// the environment instead of logging them, in file order (see warn), after
// those about the environment. The file's warnings are known once it
// loads: a file with errors gets only those about the environment.
func loadConfigWarnings(path string, env func(string) (string, bool), environ []string) (*File, []warning, error) {
	// Stamped before reading: a change written while the file is read is
	// seen by the reload watcher as a change.
	stamp := fileStamp(path)
	raw, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && path == defaultConfigFile {
			// A user who forgot -c sees where the name came from.
			return nil, nil, fmt.Errorf("config: %w (%s is the default of -c; pass -c FILE)", err, defaultConfigFile)
		}
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	var warns []warning
	for _, msg := range unknownEnv(environ, raw) {
		warns = append(warns, warning{text: msg})
	}
	f, err := parseConfig(path, raw, env)
	if f != nil {
		f.stamp = stamp
	}
	if err != nil {
		return f, warns, err
	}
	var msgs []string
	if f.Store.InfluxDB != nil {
		for _, msg := range f.Store.InfluxDB.Warnings() {
			msgs = append(msgs, "store.influxdb."+msg)
		}
	}
	msgs = append(msgs, tokenWarnings(f)...)
	msgs = append(msgs, pushWarnings(f)...)
	msgs = append(msgs, probeLoadWarnings(f)...)
	for _, msg := range f.Agent.Probe.Warnings(f.Agent.Listen) {
		msgs = append(msgs, "agent.probe."+msg)
	}
	msgs = append(msgs, f.foreignVarWarnings(f.foreign)...)
	if f.Proxy != nil {
		for _, msg := range f.Proxy.Warnings() {
			msgs = append(msgs, "proxy."+msg)
		}
	}
	msgs = append(msgs, tlsWarnings(f)...)
	msgs = append(msgs, f.verdictAges()...)
	msgs = append(msgs, f.poolChecks()...)
	msgs = append(msgs, f.statusPageWarnings()...)
	msgs = append(msgs, f.retentionWarnings()...)
	msgs = append(msgs, f.permWarnings(raw)...)
	var checkNames []string
	for _, c := range f.Checks {
		checkNames = append(checkNames, c.Name)
	}
	for _, msg := range append(f.Alerting.Warnings(), f.Alerting.RouteWarnings(checkNames)...) {
		msgs = append(msgs, "alerting."+msg)
	}
	var own []warning
	for _, msg := range msgs {
		own = append(own, f.warn(msg))
	}
	sortWarnings(own)
	return f, append(warns, own...), nil
}

// retentionWarnings warns when the embedded store keeps less history than
// the file asks of it: SLO windows, the burn-rate pairs' long windows and
// the status page's uptime columns are summed from per-minute rollups
// (kept store.embedded.rollup_retention), the check page's recent failures
// from raw verdicts (kept store.embedded.retention). Past the retention
// those figures cover the history kept, under the longer window's name (a
// 30d budget of 1h of runs). One warning per reader, naming every window
// it lacks. None with store.influxdb: readers read InfluxDB, whose
// retention is its bucket's. A warning, not an error: a short retention
// is fine for a demo or a trial.
func (f *File) retentionWarnings() []string {
	e := f.Store.Embedded
	if !e.On() || f.Store.InfluxDB != nil || e.RollupRetention <= 0 {
		return nil
	}
	roll, raw := e.RollupRetention, e.Retention
	rollKey := "store.embedded.rollup_retention: " + retentionDur(roll)
	if !f.writes("store.embedded.rollup_retention") {
		rollKey += " (the default)"
		if roll != store.DefaultRollupRetention {
			rollKey = "store.embedded.rollup_retention: " + retentionDur(roll) + " (the default: retention)"
		}
	}
	var out []string
	if !f.Alerting.Disabled {
		var short []string
		var one alerting.SLO
		var longest time.Duration
		for i, s := range f.SLOs {
			if s.Window > roll {
				short = append(short, fmt.Sprintf("slos[%d].window %s (%q)", i, retentionDur(s.Window), s.Name))
				one = s
				longest = max(longest, s.Window)
			}
		}
		switch {
		case len(short) == 1:
			figures := "availability and error budget are"
			switch {
			case one.Objective > 0 && one.TTFBP95 > 0:
				figures = "availability, error budget and TTFB p95 are"
			case one.Objective == 0:
				figures = "TTFB p95 is"
			}
			out = append(out, fmt.Sprintf("%s is shorter than %s: its %s computed from at most %s of history; set rollup_retention to at least %s",
				rollKey, short[0], figures, retentionDur(roll), retentionDur(longest)))
		case len(short) > 1:
			const most = 5
			list := strings.Join(short[:min(len(short), most)], ", ")
			if len(short) > most {
				list += fmt.Sprintf(" and %d more", len(short)-most)
			}
			out = append(out, fmt.Sprintf("%s is shorter than the windows of %d SLOs (%s): their figures (availability, error budget, TTFB p95) are computed from at most %s of history; set rollup_retention to at least %s",
				rollKey, len(short), list, retentionDur(roll), retentionDur(longest)))
		}
		burn := !f.Alerting.BurnRate.Disabled && slices.ContainsFunc(f.SLOs, func(s alerting.SLO) bool { return s.Objective > 0 })
		var pairs []string
		for _, w := range alerting.BurnWindows {
			if burn && w.Long > roll && (w.Severity != alerting.SeverityTicket || !f.Alerting.BurnRate.NoTicket) {
				pairs = append(pairs, w.Name())
			}
		}
		if len(pairs) > 0 {
			advice := "set rollup_retention to at least 3d"
			if f.Alerting.BurnRate.NoTicket {
				advice = "set rollup_retention to at least 6h"
			} else if roll >= 6*time.Hour {
				advice += ", or alerting.burn_rate.no_ticket: true"
			}
			out = append(out, fmt.Sprintf("%s is shorter than the long windows of the burn-rate pairs %s (alerting.burn_rate): they are judged on at most %s of runs, so a short outage counts as a larger share of them; %s",
				rollKey, strings.Join(pairs, ", "), retentionDur(roll), advice))
		}
	}
	if len(f.Checks) > 0 || len(f.SLOs) > 0 {
		// The check pages' uptime columns (statuspage's uptimeWindows).
		var cols []string
		for _, w := range []struct {
			label string
			d     time.Duration
		}{{"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"30d", 30 * 24 * time.Hour}} {
			if w.d > roll {
				cols = append(cols, w.label)
			}
		}
		if len(cols) > 0 {
			noun, they := "column", "it shows"
			if len(cols) > 1 {
				noun, they = "columns", "they show"
			}
			out = append(out, fmt.Sprintf("%s is shorter than the status page's uptime %s %s: %s the uptime of at most the last %s; set rollup_retention to at least 30d",
				rollKey, noun, strings.Join(cols, ", "), they, retentionDur(roll)))
		}
		if failures := 24 * time.Hour; raw < failures {
			out = append(out, fmt.Sprintf("store.embedded.retention: %s is shorter than the 24h of the check pages' recent failures and slow runs: they list those of at most the last %s",
				retentionDur(raw), retentionDur(raw)))
		}
	}
	return out
}

// writes reports whether the file (or a VIGIL_* override) sets key, a
// key path as errors spell it ("store.embedded.rollup_retention").
func (f *File) writes(key string) bool {
	if _, ok := f.fromEnv[key]; ok {
		return true
	}
	if f.keys == nil {
		return false
	}
	if _, ok := f.keys.exact[key]; ok {
		return true
	}
	_, ok := f.keys.fold[strings.ToLower(key)]
	return ok
}

// retentionDur prints a span as the config writes it: 30d, 6h, 90m.
func retentionDur(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// minTokenLen is the shortest admin token vigil does not warn about: 16
// characters, as `head -c 16 /dev/urandom | od -An -tx1` gives 32.
const minTokenLen = 16

// tokenWarnings warns about an admin token short enough to guess (the
// admin API answers every guess; its refusals are only counted and
// logged), never showing it.
func tokenWarnings(f *File) []string {
	const advice = ": easy to guess; use 16 or more random characters (e.g. `head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n'`)"
	var out []string
	if t := f.Agent.AdminToken; t != "" && len(t) < minTokenLen {
		out = append(out, fmt.Sprintf("agent.admin_token: shorter than %d characters%s", minTokenLen, advice))
	}
	if f.Proxy != nil {
		if t := f.Proxy.AdminToken; t != "" && t != f.Agent.AdminToken && len(t) < minTokenLen {
			out = append(out, fmt.Sprintf("proxy.admin_token: shorter than %d characters%s", minTokenLen, advice))
		}
	}
	for i, c := range f.Checks {
		if c.Push != nil && c.Push.Token != "" && len(c.Push.Token) < minTokenLen {
			out = append(out, fmt.Sprintf("checks[%d].push.token: shorter than %d characters%s", i, minTokenLen, advice))
		}
	}
	return out
}

// permWarnings warns about secrets other users of the host can read: the
// config file itself when group or others may read it and it writes a
// secret literally (a password in a URL or a basic_auth, a token, a
// receiver's key or URL: not a ${NAME} reference, whose value the file
// does not hold), and every key_file (the proxy's TLS listener and its
// certs, client certificates of checks, receivers, store and pools)
// others may read. raw is the file as read. Never the secret itself:
// the lines that hold one. None on Windows, where mode bits say nothing
// about who may read a file.
func (f *File) permWarnings(raw []byte) []string {
	if runtime.GOOS == "windows" {
		return nil
	}
	var out []string
	if fi, err := os.Stat(f.path); err == nil && fi.Mode().Perm()&0o044 != 0 {
		if lines := literalSecretLines(raw, f.literalSecretCandidates()); len(lines) > 0 {
			who := "group and others"
			switch fi.Mode().Perm() & 0o044 {
			case 0o040:
				who = "its group"
			case 0o004:
				who = "every user of this host"
			}
			noun := "line"
			if len(lines) > 1 {
				noun = "lines"
			}
			out = append(out, fmt.Sprintf("mode %04o: readable by %s, and it holds secrets written in it (%s %s); chmod 600 %s, or write them as ${NAME} references to the environment",
				fi.Mode().Perm(), who, noun, joinInts(lines), f.path))
		}
	}
	for _, k := range keyFiles(reflect.ValueOf(f).Elem(), "") {
		if fi, err := os.Stat(k.path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o004 != 0 {
			out = append(out, fmt.Sprintf("%s: %q: mode %04o: the private key is readable by every user of this host; chmod 600 %s (or 640 with a group only vigil's user is in)",
				k.key, k.path, fi.Mode().Perm(), k.path))
		}
	}
	return out
}

// literalSecretCandidates lists the config's secrets as loaded: what the
// canary's Secrets() collects, the admin tokens, the InfluxDB token and
// the alert receivers' credentials (a Slack webhook URL, a webhook's
// headers, a routing_key, the password and sensitive query values of any
// receiver's URL) and the heartbeat's URLs and headers. Those that came from
// the environment are among them; literalSecretLines keeps the ones the
// file writes.
func (f *File) literalSecretCandidates() []string {
	out := f.Config.Secrets()
	if f.Proxy != nil {
		out = append(out, f.Proxy.AdminToken)
	}
	if f.Store.InfluxDB != nil {
		out = append(out, f.Store.InfluxDB.Token)
	}
	fromURL := func(raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
		for name, vs := range u.Query() {
			if checks.SensitiveName(name) {
				out = append(out, vs...)
			}
		}
	}
	for _, r := range f.Alerting.Receivers {
		switch {
		case r.Webhook != nil:
			fromURL(string(r.Webhook.URL))
			for _, v := range r.Webhook.Headers {
				out = append(out, string(v))
			}
		case r.Slack != nil:
			out = append(out, string(r.Slack.URL))
		case r.PagerDuty != nil:
			out = append(out, string(r.PagerDuty.RoutingKey))
			fromURL(r.PagerDuty.URL)
		case r.Alertmanager != nil:
			fromURL(r.Alertmanager.URL)
		}
	}
	// A heartbeat URL is its own credential (a healthchecks.io ping URL).
	hb := f.Alerting.Heartbeat
	out = append(out, string(hb.URL), string(hb.FailURL))
	for _, v := range hb.Headers {
		out = append(out, string(v))
	}
	return out
}

// minLiteralSecret is the length under which permWarnings does not look
// for a secret in the file: a shorter one ("demo", a test origin's
// password) would match words of the file by chance.
const minLiteralSecret = 6

// literalSecretLines returns the lines (1-based, ascending) of the YAML
// scalars of raw that hold one of secrets as written, outside their
// ${NAME} references: a secret a reference brought in is not in the
// file. Secrets shorter than minLiteralSecret, and a "user:" with an
// empty password, are left out. Comments are not read.
func literalSecretLines(raw []byte, secrets []string) []int {
	var keep []string
	for _, s := range secrets {
		if len(s) >= minLiteralSecret && !strings.HasSuffix(s, ":") {
			keep = append(keep, s)
		}
	}
	var doc yaml.Node
	if len(keep) == 0 || yaml.Unmarshal(raw, &doc) != nil {
		return nil
	}
	seen := map[int]bool{}
	var lines []int
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || depth > 64 {
			return
		}
		if n.Kind == yaml.ScalarNode && !seen[n.Line] {
			v := interpRE.ReplaceAllString(n.Value, "\x00")
			if slices.ContainsFunc(keep, func(s string) bool { return strings.Contains(v, s) }) {
				seen[n.Line] = true
				lines = append(lines, n.Line)
			}
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(&doc, 0)
	slices.Sort(lines)
	return lines
}

// joinInts is "5, 9, 12".
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// keyFile is a key_file the config names, with its key path.
type keyFile struct{ key, path string }

// keyFiles walks a config value (a struct decoded from the file) for
// every non-empty key_file, with its key path as errors spell it
// ("proxy.certs[1].key_file", "alerting.receivers[0].tls.key_file").
func keyFiles(v reflect.Value, prefix string) []keyFile {
	var out []keyFile
	var walk func(v reflect.Value, p string, depth int)
	walk = func(v reflect.Value, p string, depth int) {
		if depth > 16 {
			return
		}
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), p, depth+1)
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i), fmt.Sprintf("%s[%d]", p, i), depth+1)
			}
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String {
				return
			}
			for _, k := range slices.Sorted(func(yield func(string) bool) {
				for _, k := range v.MapKeys() {
					if !yield(k.String()) {
						return
					}
				}
			}) {
				walk(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())), p+"."+k, depth+1)
			}
		case reflect.Struct:
			t := v.Type()
			for i := range t.NumField() {
				sf := t.Field(i)
				tag, ok := sf.Tag.Lookup("mapstructure")
				if !sf.IsExported() || !ok {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				child := p
				if opts != "squash" {
					if name == "" || name == "-" {
						continue
					}
					child = strings.TrimPrefix(p+"."+name, ".")
				}
				if name == "key_file" && sf.Type.Kind() == reflect.String {
					if s := v.Field(i).String(); s != "" {
						out = append(out, keyFile{child, s})
					}
					continue
				}
				walk(v.Field(i), child, depth+1)
			}
		}
	}
	walk(v, prefix, 0)
	return out
}

// verdictsFromEnv is the environment variable `vigil proxy` reads more
// --verdicts-from URLs from (separated by spaces or newlines): a URL with
// a password or a token in its query, which on the command line every
// user of the host reads in ps and /proc/PID/cmdline, while a process's
// environment is readable only by its own user and root.
const verdictsFromEnv = "VIGIL_VERDICTS_FROM"

// verdictsFromWarnings warns, never showing a password or a query value,
// about --verdicts-from URLs that give a credential away: one written on
// the command line (fromFlags) with a password or a query string in it,
// and any (fromEnv too) that sends its user info or query string over
// plain http to a host that is not loopback, as receivers' and
// store.influxdb's warnings do.
func verdictsFromWarnings(fromFlags, fromEnv []string) []string {
	var out []string
	check := func(raw string, argv bool) {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return
		}
		var creds []string
		if u.User != nil {
			if _, ok := u.User.Password(); ok {
				creds = append(creds, "password")
			} else {
				creds = append(creds, "user name")
			}
		}
		if u.RawQuery != "" {
			creds = append(creds, "query string")
		}
		if len(creds) == 0 {
			return
		}
		what := strings.Join(creds, " and ")
		shown := units.RedactURL(raw)
		be, verb := "is", "travels"
		if len(creds) > 1 {
			be, verb = "are", "travel"
		}
		if argv && (u.RawQuery != "" || slices.Contains(creds, "password")) {
			out = append(out, fmt.Sprintf("--verdicts-from: %q: its %s %s on the command line, which every user of this host can read (ps, /proc/PID/cmdline); pass the URL in the environment variable %s instead (readable only by vigil's own user and root)",
				shown, what, be, verdictsFromEnv))
		}
		if strings.EqualFold(u.Scheme, "http") && !units.LoopbackHost(u.Hostname()) {
			out = append(out, fmt.Sprintf("--verdicts-from: %q: http, not https: its %s %s unencrypted to %s; use https (--verdicts-from-ca FILE for a private CA), or a loopback address for a canary on this host",
				shown, what, verb, u.Hostname()))
		}
	}
	for _, u := range fromFlags {
		check(u, true)
	}
	for _, u := range fromEnv {
		check(u, false)
	}
	return out
}

// warn places msg, a warning about a key of the file ("checks[2].tls.…:
// …"), as errors are: "FILE:LINE: msg" at the line the key (or the
// nearest key enclosing it) is written on, with its column inside a flow
// collection (see keyPlace), "FILE: msg" when the file writes none of
// it. A key a VIGIL_* override set is named with its variable instead of a
// line ("agent.data_dir (from VIGIL_AGENT_DATA_DIR): …").
func (f *File) warn(msg string) warning {
	for key, name := range f.fromEnv {
		if rest, ok := strings.CutPrefix(msg, key+":"); ok {
			return warning{text: f.path + ": " + key + " (from " + name + "):" + rest}
		}
		if strings.HasPrefix(msg, key+" (from ") {
			return warning{text: f.path + ": " + msg}
		}
	}
	kp, ok := f.keys.lookup(msg)
	if !ok {
		return warning{text: f.path + ": " + msg}
	}
	return warning{line: kp.line, col: kp.col, text: prefix(f.path, kp.line, kp.col) + msg + kp.note()}
}

// defaultConfigFile is the config file of every command without -c.
const defaultConfigFile = "vigil.yaml"

func parseConfig(path string, raw []byte, env func(string) (string, bool)) (*File, error) {
	red := &redactor{}
	fail := func(errs ...error) error { return newLoadError(path, errs, red, nil) }

	// viper reads the file and checks its syntax, but lower-cases every key
	// (spf13/viper#411), which would break header names, JSON bodies and
	// script variables. The struct decoder matches keys case-insensitively,
	// so vigil decodes from the case-preserving YAML tree instead.
	// The YAML tree is read first so that a top-level list or scalar gets
	// the message below rather than viper's "cannot unmarshal !!seq".
	doc, err := configDocument(raw)
	if err != nil {
		return nil, fail(err)
	}
	keys := newKeyIndex(doc)
	var tree any
	// A key given twice is an error, but the file is validated on with
	// its first value (as nodeValue reads it, and keyIndex places it), so
	// that one run lists the other errors too, in file order.
	var dupErrs []error
	if err := doc.Decode(&tree); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, fail(locateYAMLError(raw, err.Error()))
		}
		if !onlyDupKeys(te) {
			return nil, fail(yamlTypeErrors(doc, te)...)
		}
		dupErrs = yamlTypeErrors(doc, te)
	}
	// The tree decoded again from the node tree keeps the text of every
	// number as written (yamlNumber), for keys that take a string.
	settings, _ := nodeValue(doc).(map[string]any)
	if settings == nil {
		if tree != nil || dupErrs != nil {
			return nil, fail(append(dupErrs, errors.New("the top level must be a mapping of sections (agent, targets, checks, …)"))...)
		}
		settings = map[string]any{}
	}
	v := viper.New()
	v.SetConfigType("yaml")
	// viper refuses a key given twice, which dupErrs report.
	if err := v.ReadConfig(bytes.NewReader(raw)); err != nil && dupErrs == nil {
		return nil, fail(locateYAMLError(raw, unwrapViper(err)))
	}

	sections := map[string]bool{}
	for k := range settings {
		sections[strings.ToLower(k)] = true
	}
	// A section written with no value (`proxy:`) is an empty section, as
	// `proxy: {}` is: it is validated (a proxy needs a pool) rather than
	// read as absent.
	for k, v := range settings {
		if v == nil && nullSections[strings.ToLower(k)] {
			settings[k] = map[string]any{}
		}
	}

	// Environment overrides: VIGIL_<SECTION>_<KEY> for every scalar key outside lists.
	fromEnv := map[string]string{} // key → variable, to say where a bad value came from
	for _, key := range scalarKeys(reflect.TypeOf(File{}), "") {
		name := "VIGIL_" + strings.ToUpper(strings.NewReplacer(".", "_").Replace(key))
		if val, ok := env(name); ok {
			setPath(settings, strings.Split(key, "."), val)
			fromEnv[key] = name
			if secretKey.MatchString(key) {
				red.add(key, val)
			}
		}
	}
	// A section the file does not have, made by an override alone: its
	// errors (a proxy section needs a pool) say which variable made it.
	envSections := map[string]string{}
	for key, name := range fromEnv {
		sec, _, _ := strings.Cut(key, ".")
		if !sections[sec] {
			if prev, ok := envSections[sec]; !ok || name < prev {
				envSections[sec] = name
			}
		}
	}
	fail = func(errs ...error) error {
		return newLoadError(path, markEnvSections(markEnv(firstGiven(errs, settings, keys), fromEnv), envSections), red, keys)
	}

	// ${NAME} interpolation (not inside check scripts, which resolve their own
	// ${var} at run time and read secrets with ${env:NAME}).
	// An unset variable is an error, and the file is validated on with
	// "${NAME}" left in its place, so that one run lists the other errors
	// too; errors about a key holding such a placeholder are left out, as
	// they could only follow from it.
	var errs []error
	var unsetKeys []string
	foreign := foreignVars(settings)
	refs := map[string]bool{} // the references left as written, as "${NAME}"
	interpolated := interpolate(settings, "", env, red, &errs, &unsetKeys, refs)
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	errs = append(errs, dupErrs...)
	settings = interpolated.(map[string]any)

	var f File
	var md mapstructure.Metadata
	dec, err := newFileDecoder(&f, &md)
	if err != nil {
		return nil, fail(err)
	}
	unknown, mapTwins := treeKeys(reflect.TypeOf(f), settings, "")
	var badKeys []string   // the scopes of keys whose value did not decode (left at zero)
	var undecoded []string // those keys themselves
	// A key written with no value (`checksum:`, `interval: ~`) would decode
	// as omitted: an assertion would vanish without a word.
	for _, n := range nullValues(reflect.TypeOf(f), settings, "") {
		k := n.path
		switch {
		case strings.HasSuffix(k, "]"):
			errs = append(errs, fmt.Errorf("%s: no value (remove the item, or give one)", k))
		case n.list:
			// Often a list whose items are all commented out.
			errs = append(errs, fmt.Errorf("%s: no value (omit the key, or give items: are they all commented out?)", k))
		default:
			errs = append(errs, fmt.Errorf("%s: no value (omit the key, or give one)", k))
		}
		badKeys = append(badKeys, decodeScope(k))
		undecoded = append(undecoded, k)
	}
	decodeErr := dec.Decode(settings)
	if decodeErr != nil && f.Proxy == nil {
		// The decoder sets a pointer only when everything under it
		// decoded: one bad value (a pool's weight: 1.5) left out the whole
		// proxy section, whose other errors then went unreported. What
		// did decode is validated as for the other sections.
		if sec, ok := lookupKey(settings, "proxy"); ok {
			if m, ok := sec.(map[string]any); ok {
				var p proxy.Config
				if pd, err := newFileDecoder(&p, nil); err == nil {
					_ = pd.Decode(m) // its errors are decodeErr's
					f.Proxy = &p
				}
			}
		}
	}
	if decodeErr != nil {
		// The decoder does not list the unused keys of a mapping once one
		// of its values failed: they come from the tree instead.
		md.Unused = unknown
		for _, e := range decodeErrors(decodeErr) {
			if k, _, ok := strings.Cut(e.Error(), ": "); ok {
				badKeys = append(badKeys, decodeScope(k))
				undecoded = append(undecoded, k)
			}
			if len(dropUnder([]error{e}, unsetKeys)) == 0 {
				continue // the placeholder of an unset variable
			}
			errs = append(errs, e)
		}
	}
	// Which keys were set, so that validation tells an explicit 0 from
	// an omitted key. A key whose value is empty (`${X:-}`, an empty
	// VIGIL_* override, `key: ""`) counts as not set.
	md.Keys = dropEmpty(md.Keys, settings)
	f.Config.SetKeys(md.Keys)
	f.Alerting.SetKeys(keysUnder(md.Keys, "alerting."))
	f.StatusPage.SetKeys(keysUnder(md.Keys, "status_page."))
	f.Store.SetKeys(keysUnder(md.Keys, "store."))
	for i := range f.SLOs {
		f.SLOs[i].SetKeys(keysUnder(md.Keys, fmt.Sprintf("slos[%d].", i)))
	}
	if f.Proxy != nil {
		f.Proxy.SetKeys(keysUnder(md.Keys, "proxy."))
	}
	// A password written in a URL, a basic_auth or a proxy_url, a
	// sensitive header's value: secrets too, as an origin may echo the
	// header the check sends.
	// A reference to an unset variable, left as written, is not one: its
	// value is (an error quoting "${API_TOKEN}" must show it).
	for _, sec := range f.Config.Secrets() {
		for _, part := range withoutRefs(sec, refs) {
			red.add("url", part)
		}
	}
	if f.Proxy != nil && f.Proxy.AdminToken != "" && !strings.Contains(f.Proxy.AdminToken, "${") {
		red.add("proxy.admin_token", f.Proxy.AdminToken)
	}
	unused := md.Unused
	sort.Strings(unused)
	for _, k := range unused {
		if known := caseTwin(settings, k); known != "" {
			errs = append(errs, fmt.Errorf("%s: duplicates %s (keys match case-insensitively: keep one)", k, known))
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %w%s", k, ErrUnknownKey, keyHint(k)))
	}
	errs = append(errs, mapTwins...)
	f.sections = sections
	if len(errs) > 0 {
		// Validate what did decode too, so one run lists every error: an
		// unknown key is ignored and a value that did not decode is left at
		// its zero value (as if omitted), which validation must accept
		// anyway. The errors that could follow from the missing value are
		// dropped (followsFrom): those about the value's own key, what is
		// under it, and the keys holding it (url: [1] → "checks[0]: name at
		// least one target, or set url"), and those of its list element
		// or section that name it (interval: "1m30" → "timeout … interval");
		// the element's other errors stay (a bad regex, a path without
		// "/"). A whole section that did not decode (checks: "x") is left
		// out the same way, and so are the references into it (an SLO
		// naming a check when checks did not decode, a check naming a
		// target when targets did not).
		if err := f.ValidateAndSetDefaults(); err != nil {
			for _, e := range dropUnder(units.Errors(err), unsetKeys) {
				if followsFrom(e, undecoded) {
					continue
				}
				// A section that did not decode is still a section:
				// "nothing configured" would be wrong.
				if errors.Is(e, errNothingConfigured) && slices.ContainsFunc(badKeys, func(k string) bool {
					return slices.Contains([]string{"checks", "proxy", "slos", "alerting", "store"}, rootKey(k))
				}) {
					continue
				}
				var ref *checkRefError
				if (errors.As(e, &ref) && wholeUndecoded(undecoded, "checks")) ||
					(errors.Is(e, canary.ErrUnknownTarget) && wholeUndecoded(undecoded, "targets")) {
					continue
				}
				errs = append(errs, e)
			}
		}
		return nil, fail(errs...)
	}
	if err := f.ValidateAndSetDefaults(); err != nil {
		return nil, fail(dropUnder(units.Errors(err), unsetKeys)...)
	}
	f.path = path
	f.redactor = red
	f.keys = keys
	f.fromEnv = fromEnv
	f.foreign = foreign
	return &f, nil
}

// at is where msg, a message about a key of the file f was loaded from
// ("agent.data_dir: …"), points: "FILE:LINE" when the file writes that key
// (or the nearest key enclosing it), "FILE:LINE:COL" inside a flow
// collection (see keyPlace), else "FILE".
func (f *File) at(msg string) string {
	if kp, ok := f.keys.lookup(msg); ok {
		return strings.TrimSuffix(prefix(f.path, kp.line, kp.col), ": ")
	}
	return f.path
}

// newFileDecoder is the decoder of a config file's tree into f (a *File,
// or a pointer to one of its sections).
func newFileDecoder(f any, md *mapstructure.Metadata) (*mapstructure.Decoder, error) {
	return mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           f,
		Metadata:         md,
		WeaklyTypedInput: true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			numberTextHook,              // a number's text for a string key
			checks.DecodeHook,           // equals: null, status: true, headers as a list
			statuspage.PublicDecodeHook, // status_page.public.checks: [name, …]
			shapeHook,
			durationHook,
			unitHook,
			scalarHook,
			strictHook,
			mapstructure.TextUnmarshallerHookFunc(),
		),
	})
}

// treeKeys walks the tree v that the decoder reads into type t and returns
// the keys of its mappings that name no field, spelt as the decoder's
// unused keys are ("checks[0].expect.statuss"), sorted; and an error for
// each key of a map (http.headers, extract, webhook headers) that differs
// from another only in case: header names and variable names match
// case-insensitively, so one of the two would be dropped without a word.
// Of several keys matching one field case-insensitively, the one spelt
// as the field's name is read, else the first in sorted order; the others
// are unknown (and reported as duplicates).
func treeKeys(t reflect.Type, v any, path string) (unknown []string, twins []error) {
	treeWalker{
		field: func(_ reflect.Type, k structKey, _ any, path string) (string, bool) {
			if !k.read {
				unknown = append(unknown, joinKey(path, k.key))
				return "", false
			}
			return joinKey(path, k.field), true
		},
		entry: func(k, twinOf, path string) (string, bool) {
			if twinOf != "" {
				twins = append(twins, fmt.Errorf("%s: duplicates %s (keys match case-insensitively: keep one)", joinKey(path, k), twinOf))
				return "", false
			}
			return path + "[" + k + "]", true
		},
	}.walk(t, v, path)
	sort.Strings(unknown)
	slices.SortFunc(twins, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return unknown, twins
}

// nullValues returns the paths of the keys in the tree v (decoded into
// type t) written with no value (`key:`, `key: ~`, `key: null`), and of
// list items written so (`- `), in sorted order. Not reported:
// `expect.json[].equals`, where null is a value (it asserts JSON null, see
// checks.DecodeHook), and everything inside a value of any type (a JSON
// body in http.json). The top-level sections that are mappings are not
// seen here: written with no value they are empty sections (nullSections).
// Keys are spelt as written, each key matching a field case-insensitively
// included (treeKeys reports all but one of those).
func nullValues(t reflect.Type, v any, path string) []nullKey {
	var out []nullKey
	treeWalker{
		value: func(t reflect.Type, v any, path string) bool {
			if v == nil && path != "" {
				for t.Kind() == reflect.Pointer {
					t = t.Elem()
				}
				out = append(out, nullKey{path, t.Kind() == reflect.Slice})
			}
			return v == nil
		},
		field: func(t reflect.Type, k structKey, v any, path string) (string, bool) {
			if k.field == "" || v == nil && t == jsonExpectType && strings.EqualFold(k.key, "equals") {
				return "", false
			}
			return joinKey(path, k.key), true
		},
		entry: func(k, _, path string) (string, bool) {
			return joinKey(path, k), true
		},
	}.walk(t, v, path)
	slices.SortFunc(out, func(a, b nullKey) int { return comparePaths(a.path, b.path) })
	return out
}

// nullKey is a key written with no value, and whether a list belongs there.
type nullKey struct {
	path string
	list bool
}

// comparePaths orders key paths as they stand in the file: list indexes by
// number (checks[2] before checks[10]), the rest as text.
func comparePaths(a, b string) int {
	for a != "" && b != "" {
		i, j := digitsAt(a), digitsAt(b)
		if i > 0 && j > 0 {
			x, _ := strconv.Atoi(a[:i])
			y, _ := strconv.Atoi(b[:j])
			if x != y {
				return cmp.Compare(x, y)
			}
			a, b = a[i:], b[j:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitsAt is the length of the run of digits s starts with.
func digitsAt(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// treeWalker is the descent that the checks of a config file's tree
// against the config types (treeKeys, nullValues) share. walk follows the
// tree v that the decoder reads into type t, pointers followed, and stops
// at a value of an interface type, a duration or a type read as text
// (what is inside is the value's, not config keys). A mapping read into a
// struct goes down the keys that name a field, a list item by item
// ("path[i]"), a mapping read into a map entry by entry. What a check does
// at each step, and the path it gives each value, are its own.
type treeWalker struct {
	// value, when set, is called first at each value reached, with its
	// type (pointers followed); true stops the descent there.
	value func(t reflect.Type, v any, path string) (stop bool)
	// field is called with each key of a mapping read into struct type t,
	// in sorted order, and its value; it returns the path of the value and
	// whether to go down into it. A key that names no field is not gone
	// down into.
	field func(t reflect.Type, k structKey, v any, path string) (string, bool)
	// entry is called with each key k of a mapping read into a map, in
	// sorted order, and twinOf, the first key in sorted order that equals
	// k but for case when that is not k ("" when none: only the empty key
	// lowers to ""); it returns the path of the entry's value and whether
	// to go down into it.
	entry func(k, twinOf, path string) (string, bool)
}

func (w treeWalker) walk(t reflect.Type, v any, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if w.value != nil && w.value(t, v, path) {
		return
	}
	if t.Kind() == reflect.Interface || t == durationType || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, k := range structKeys(t, m) {
			if p, ok := w.field(t, k, m[k.key], path); ok && k.field != "" {
				w.walk(k.typ, m[k.key], p)
			}
		}
	case reflect.Slice, reflect.Array:
		l, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range l {
			w.walk(t.Elem(), e, fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		first := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			twinOf, ok := first[strings.ToLower(k)]
			if !ok {
				first[strings.ToLower(k)] = k
			}
			if p, ok := w.entry(k, twinOf, path); ok {
				w.walk(t.Elem(), m[k], p)
			}
		}
	}
}

// A structKey is a key of a mapping read into a struct.
type structKey struct {
	key   string       // as written
	field string       // the field it names (its mapstructure name, else the one equal to it but for case); "" for none
	typ   reflect.Type // the field's type
	// read: the key is the one the decoder reads into the field, the one
	// spelt as its name, else the first in sorted order that matches it.
	// (No two fields of a config type have names equal but for case.)
	read bool
}

// structKeys returns the keys of the mapping m read into struct type t,
// sorted.
func structKeys(t reflect.Type, m map[string]any) []structKey {
	fields := map[string]reflect.Type{}
	structFields(t, fields)
	names := slices.Sorted(maps.Keys(fields))
	taken := map[string]bool{} // the fields a key of m is read into
	out := make([]structKey, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		sk := structKey{key: k}
		if _, ok := fields[k]; ok {
			sk.field = k
		} else if i := slices.IndexFunc(names, func(n string) bool { return strings.EqualFold(n, k) }); i >= 0 {
			sk.field = names[i]
		}
		if sk.field != "" {
			sk.typ = fields[sk.field]
			_, exact := m[sk.field]
			sk.read = k == sk.field || !exact && !taken[sk.field]
			taken[sk.field] = taken[sk.field] || sk.read
		}
		out = append(out, sk)
	}
	return out
}

// joinKey is the path of key k of the mapping at path.
func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// fieldsOf returns the config keys of struct type t (through pointers)
// with their types, or false when t is not a struct.
func fieldsOf(t reflect.Type) (map[string]reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	fields := map[string]reflect.Type{}
	structFields(t, fields)
	return fields, true
}

// structFields adds the mapstructure names of t's fields (those of
// squashed embedded structs included) to fields.
func structFields(t reflect.Type, fields map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if opts == "squash" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			structFields(ft, fields)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
}

// keyHint is what follows "unknown key" for key (a decoder path,
// "checks[0].intervall"): " (did you mean interval?)" when a key of the
// same mapping is a typo away, and for an expect.json element the keys it
// takes; for a key of another tool (foreignKeys) in a check or defaults
// (Gatus's endpoints: at the top level), what vigil writes instead; else "".
func keyHint(key string) string {
	segs := strings.Split(key, ".")
	if h := foreignKeyHint(segs); h != "" {
		return h
	}
	t := reflect.TypeOf(File{})
	var up reflect.Type // the struct holding t, one key up
	for _, seg := range segs[:len(segs)-1] {
		up = t
		name, idx, _ := strings.Cut(seg, "[")
		fields, ok := fieldsOf(t)
		if !ok {
			return ""
		}
		ft, ok := fields[name]
		if !ok {
			for n, f := range fields {
				if strings.EqualFold(n, name) {
					ft, ok = f, true
				}
			}
		}
		if !ok {
			return ""
		}
		t = ft
		for range strings.Count(idx, "]") {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if k := t.Kind(); k != reflect.Slice && k != reflect.Array && k != reflect.Map {
				return ""
			}
			t = t.Elem()
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	fields, ok := fieldsOf(t)
	if !ok {
		return ""
	}
	last := strings.ToLower(segs[len(segs)-1])
	if len(segs) >= 2 && up != nil {
		// A key written one level too deep (max_body inside a pool,
		// nginx-style): the level above takes it.
		for up.Kind() == reflect.Pointer {
			up = up.Elem()
		}
		if upFields, ok := fieldsOf(up); ok {
			if _, ok := upFields[last]; ok {
				parent := strings.Join(segs[:len(segs)-2], ".")
				if parent == "" {
					parent = "the top level"
				}
				return fmt.Sprintf(" (%s is a key of %s, not of %s: move it there)", last, parent, strings.Join(segs[:len(segs)-1], "."))
			}
		}
	}
	if h := higherKeyHint(segs, t); h != "" {
		return h
	}
	names := slices.Sorted(maps.Keys(fields))
	var hints []string
	if near := nearestName(strings.ToLower(segs[len(segs)-1]), names); near != "" {
		hints = append(hints, "did you mean "+near+"?")
	}
	switch {
	case t == reflect.TypeOf(checks.JSONExpect{}):
		hints = append(hints, "expect.json elements take "+strings.Join(names, ", "))
	case len(hints) == 0 && len(names) <= maxListedKeys:
		// No typo away: a key from another tool (retry: {attempts: 3}
		// for tries), or a section name made up (x-common:). A mapping
		// of a few keys lists them.
		parent := "the top level takes "
		if len(segs) > 1 {
			name, idx, elem := strings.Cut(segs[len(segs)-2], "[")
			switch {
			case elem && digitsAt(idx) > 0:
				parent = name + " elements take "
			default:
				parent = name + " takes "
			}
		}
		hints = append(hints, parent+strings.Join(names, ", "))
	}
	if len(hints) == 0 {
		return ""
	}
	return " (" + strings.Join(hints, " ") + ")"
}

// maxListedKeys is the most keys an unknown key's hint lists (see keyHint).
const maxListedKeys = 10

// caseTwin returns the name of another key beside key (a decoder path,
// "checks[0].Interval") in the same mapping that differs from it only in
// case, or "". The decoder matches keys case-insensitively, so of two such
// keys it reads one and reports the other as unused.
func caseTwin(tree map[string]any, key string) string {
	var node any = tree
	segs := strings.Split(key, ".")
	for i, seg := range segs {
		name, idx := seg, ""
		if j := strings.IndexByte(seg, '['); j >= 0 {
			name, idx = seg[:j], seg[j:]
		}
		m, ok := node.(map[string]any)
		if !ok {
			return ""
		}
		if i == len(segs)-1 && idx == "" {
			for k := range m {
				if k != name && strings.EqualFold(k, name) {
					return k
				}
			}
			return ""
		}
		next, ok := m[name]
		if !ok {
			// The decoder names the struct key; the file may spell it otherwise.
			for k, v := range m {
				if strings.EqualFold(k, name) {
					next, ok = v, true
					break
				}
			}
		}
		if !ok {
			return ""
		}
		for idx != "" {
			end := strings.IndexByte(idx, ']')
			n, err := strconv.Atoi(idx[1:end])
			l, isList := next.([]any)
			if err != nil || !isList || n < 0 || n >= len(l) {
				return ""
			}
			next, idx = l[n], idx[end+1:]
		}
		node = next
	}
	return ""
}

// dropEmpty returns keys without those whose value in settings is an empty
// string. Keys are mapstructure's ("checks[0].http.body_limit"); map keys
// match case-insensitively, as in decoding.
func dropEmpty(keys []string, settings map[string]any) []string {
	out := keys[:0:0]
	for _, k := range keys {
		if v, ok := lookupKey(settings, k); ok {
			if str, isStr := v.(string); isStr && strings.TrimSpace(str) == "" {
				continue
			}
		}
		out = append(out, k)
	}
	return out
}

// lookupKey finds the value of a mapstructure key in decoded YAML.
func lookupKey(v any, key string) (any, bool) {
	for _, seg := range strings.Split(key, ".") {
		name, idx := seg, -1
		if i := strings.IndexByte(seg, '['); i >= 0 && strings.HasSuffix(seg, "]") {
			n, err := strconv.Atoi(seg[i+1 : len(seg)-1])
			if err != nil {
				return nil, false
			}
			name, idx = seg[:i], n
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		found := false
		for mk, mv := range m {
			if strings.EqualFold(mk, name) {
				v, found = mv, true
				break
			}
		}
		if !found {
			return nil, false
		}
		if idx >= 0 {
			l, ok := v.([]any)
			if !ok || idx >= len(l) {
				return nil, false
			}
			v = l[idx]
		}
	}
	return v, true
}

// keysUnder returns the keys that start with prefix, without it.
func keysUnder(keys []string, prefix string) []string {
	var out []string
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

// decodeScope is the part of the config a key that did not decode can
// affect: its list element ("checks[0].http.url" → "checks[0]",
// "alerting.receivers[0].webhook.headers[X-Key]" → "alerting.receivers[0]":
// a map entry's [name] is no element), else its parent
// ("agent.concurrency" → "agent"), else itself.
func decodeScope(key string) string {
	if m := lastElemRE.FindStringIndex(key); m != nil {
		return key[:m[1]]
	}
	if i := strings.LastIndex(key, "."); i >= 0 {
		return key[:i]
	}
	return key
}

// followsFrom reports whether err, a validation error of a file whose
// values at the keys undecoded did not decode (and were left at zero),
// could follow from one of them: err is about such a key, a key under it
// or a key holding it ("checks[0]: …" for "checks[0].url"), or about
// another key of its list element or section (decodeScope) whose message
// names it ("checks[0].timeout: … interval" for "checks[0].interval").
func followsFrom(err error, undecoded []string) bool {
	key, msg, ok := strings.Cut(err.Error(), ": ")
	if !ok {
		return false
	}
	within := func(k, anc string) bool { // k is anc or under it
		rest, ok := strings.CutPrefix(k, anc)
		return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
	}
	for _, u := range undecoded {
		if within(key, u) || within(u, key) {
			return true
		}
		if scope := decodeScope(u); scope != u && within(key, scope) {
			leaf := u[strings.LastIndexAny(u, ".]")+1:]
			if leaf != "" && leafWordRE(leaf).MatchString(msg) {
				return true
			}
		}
	}
	return false
}

// leafWordRE matches leaf ("interval") as a word of a message.
func leafWordRE(leaf string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^a-z_])` + regexp.QuoteMeta(leaf) + `($|[^a-z_])`)
}

// lastElemRE matches a key up to its last list index ("checks[3]").
var lastElemRE = regexp.MustCompile(`^.*\[\d+\]`)

// nullSections are the top-level sections that are mappings.
var nullSections = map[string]bool{"agent": true, "defaults": true, "store": true, "alerting": true, "status_page": true, "proxy": true}

// rootKey is the section a key is in: "checks[0].http" → "checks".
func rootKey(key string) string {
	if i := strings.IndexAny(key, ".["); i >= 0 {
		return key[:i]
	}
	return key
}

// wholeUndecoded reports whether, of the keys that did not decode, one is
// section, an element of it or an element's name (checks: "x", targets:
// [5], checks[2].name: [a]): the names it defines are unknown. A check
// with another value that did not decode (checks[0].rise: two) still
// defines its name, and references to it are judged.
func wholeUndecoded(keys []string, section string) bool {
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(k, section); ok && (rest == "" || wholeElemRE.MatchString(rest)) {
			return true
		}
	}
	return false
}

var wholeElemRE = regexp.MustCompile(`^\[\d+\](?:\.name)?$`)

// checkRefError is a key naming a check the file does not define.
type checkRefError struct{ msg string }

func (e *checkRefError) Error() string { return e.msg }

// dropUnder leaves out the errors about a key in keys or below it.
func dropUnder(errs []error, keys []string) []error {
	out := errs[:0:0]
next:
	for _, err := range errs {
		msg := err.Error()
		for _, k := range keys {
			if rest, ok := strings.CutPrefix(msg, k); ok && (rest == "" || strings.ContainsRune(":.[ ", rune(rest[0]))) {
				continue next
			}
		}
		out = append(out, err)
	}
	return out
}

// dupNameRE matches the error for the name of a list element that an
// earlier element has too: `checks[7].name: "api": duplicate name`.
var dupNameRE = regexp.MustCompile(`^((?:[A-Za-z_]+\.)*[A-Za-z_]+)\[(\d+)\]\.name: ("(?:[^"\\]|\\.)*"): duplicate (?:pool )?name$`)

// firstGiven adds to each error about a duplicate name (of a check, a
// target, an SLO, a pool, a receiver) the element that has it first and
// its line: in a large file "duplicate name" alone leaves the user to
// search for the other one. settings is the file's tree, keys its lines.
func firstGiven(errs []error, settings map[string]any, keys *keyIndex) []error {
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		if err != nil {
			if m := dupNameRE.FindStringSubmatch(err.Error()); m != nil {
				n, _ := strconv.Atoi(m[2])
				name, uerr := strconv.Unquote(m[3])
				list, _ := lookupKey(settings, m[1])
				items, _ := list.([]any)
				for i := 0; uerr == nil && i < n && i < len(items); i++ {
					item, _ := items[i].(map[string]any)
					if v, _ := lookupKey(item, "name"); scalarText(v) != name {
						continue
					}
					first := fmt.Sprintf("%s[%d]", m[1], i)
					if kp, ok := keys.lookup(first + ".name:"); ok {
						first += fmt.Sprintf(", line %d", kp.line)
					}
					err = &notedError{msg: fmt.Sprintf("%s (first given at %s)", err.Error(), first), err: err}
					break
				}
			}
		}
		out = append(out, err)
	}
	return out
}

// scalarText is a scalar of the file's tree as its text (a number as
// written).
func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case yamlNumber:
		return x.Text
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// notedError is a config error with a note added to its message.
type notedError struct {
	msg string
	err error
}

func (e *notedError) Error() string { return e.msg }
func (e *notedError) Unwrap() error { return e.err }

// envError is a config error whose value came from an environment override.
type envError struct {
	msg string
	err error
}

func (e *envError) Error() string { return e.msg }
func (e *envError) Unwrap() error { return e.err }

// markEnv rewrites "agent.concurrency: …" into "agent.concurrency (from
// VIGIL_AGENT_CONCURRENCY): …" for keys set by an environment override.
func markEnv(errs []error, fromEnv map[string]string) []error {
	if len(fromEnv) == 0 {
		return errs
	}
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		if err == nil {
			continue
		}
		msg := err.Error()
		for key, name := range fromEnv {
			if rest, ok := strings.CutPrefix(msg, key+":"); ok {
				err = &envError{msg: key + " (from " + name + "):" + rest, err: err}
				break
			}
		}
		out = append(out, err)
	}
	return out
}

// markEnvSections adds to an error about a section the file does not have
// the variable that made it: "proxy.pools: at least one pool is required
// (the file has no proxy section: VIGIL_PROXY_LISTEN made one; unset it or
// add the section)".
func markEnvSections(errs []error, envSections map[string]string) []error {
	if len(envSections) == 0 {
		return errs
	}
	for i, err := range errs {
		if _, ok := err.(*envError); ok {
			continue // about the variable's own value: named already
		}
		msg := err.Error()
		for sec, name := range envSections {
			if strings.HasPrefix(msg, sec+".") || strings.HasPrefix(msg, sec+":") || strings.HasPrefix(msg, sec+" ") {
				errs[i] = &envError{msg: fmt.Sprintf("%s (the file has no %s section: %s made one; unset it or add the section)", msg, sec, name), err: err}
				break
			}
		}
	}
	return errs
}

func unwrapViper(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "While parsing config: ")
	return s
}

// decodeErrors splits mapstructure's aggregated error into one error per key,
// rewriting "'checks[0].interval' expected …" into "checks[0].interval: …".
func decodeErrors(err error) []error {
	var out []error
	for _, e := range units.Errors(err) {
		msg := e.Error()
		msg = strings.TrimPrefix(msg, "decoding failed due to the following error(s):\n\n")
		for _, line := range strings.Split(msg, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			if m := quotedKey.FindStringSubmatch(line); m != nil {
				line = m[1] + ": " + strings.TrimSpace(m[2])
				line = dayHint(m[1], line)
			}
			out = append(out, errors.New(line))
		}
	}
	return out
}

// dayHint replaces the "e.g. "7s" or "7ms"" hint for a bare number with
// "e.g. "7d"" on keys measured in days (retention, at least 1h), where the
// seconds suggestion would fail the next check.
func dayHint(key, line string) string {
	k := key[strings.LastIndex(key, ".")+1:]
	if k != "retention" && k != "rollup_retention" {
		return line
	}
	m := bareHintRE.FindStringSubmatch(line)
	if m == nil {
		return line
	}
	return strings.Replace(line, m[0], fmt.Sprintf("e.g. %q", m[1]+"d"), 1)
}

var bareHintRE = regexp.MustCompile(`e\.g\. "([0-9.]+)s" or "[0-9.]+ms"`)

var quotedKey = regexp.MustCompile(`^'([^']*)'\s*(.*)$`)

var durationType = reflect.TypeOf(time.Duration(0))

// durationHook parses durations with a unit ("5s", "600ms", "30d", "1d12h")
// and rejects bare numbers other than 0, so `interval: 5` is an error rather
// than five nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch d := data.(type) {
	case string:
		return parseDuration(d)
	case int, int64, float64, uint64:
		if reflect.ValueOf(d).Convert(reflect.TypeOf(float64(0))).Float() == 0 {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("%v: a duration needs a unit, e.g. \"%vs\" or \"%vms\"", d, d, d)
	}
	return data, nil
}

var (
	percentType = reflect.TypeOf(units.Percent(0))
	sizeType    = reflect.TypeOf(units.ByteSize(0))
)

// unitHook rejects a bare number for a percentage or a size (`25` could be
// 25 % or 0.25 %, 10 could be bytes or MiB); strings go on to the types'
// UnmarshalText.
func unitHook(from, to reflect.Type, data any) (any, error) {
	if to != percentType && to != sizeType {
		return data, nil
	}
	if s, ok := data.(string); ok {
		if to == percentType {
			return units.ParsePercent(s)
		}
		// "-1MiB" is a size with a sign, not one without a unit.
		if rest, neg := strings.CutPrefix(strings.TrimSpace(s), "-"); neg {
			if _, err := units.ParseByteSize(rest); err == nil {
				return nil, fmt.Errorf("%q: a size must not be negative", s)
			}
		}
		return units.ParseByteSize(s)
	}
	switch data.(type) {
	case int, int64, uint64, float64:
		if to == percentType {
			// 0.999 is most likely a fraction: suggest 99.9%, not 0.999%.
			hint := reflect.ValueOf(data).Convert(reflect.TypeOf(float64(0))).Float()
			if hint > 0 && hint < 1 {
				hint = math.Round(hint*100*1e6) / 1e6
			}
			return nil, fmt.Errorf("%v: a percentage needs a %% sign, e.g. \"%s%%\"", data, strconv.FormatFloat(hint, 'f', -1, 64))
		}
		return nil, fmt.Errorf("%v: a size needs a unit, e.g. \"%vB\" or \"%vMiB\"", data, data, data)
	}
	return data, nil
}

var (
	textUnmarshalerType = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	jsonExpectType      = reflect.TypeOf(checks.JSONExpect{})
	statusListType      = reflect.TypeOf(checks.StatusList(nil))
)

// scalarHook says in words what a string given for a number or a bool
// should be (`"abc": want an integer`) where the weak decoder would say
// `cannot parse value as 'int': strconv.ParseInt: invalid syntax`. Every
// environment override is such a string. A value that parses goes on to
// the decoder unchanged, so what it accepts is as before.
func scalarHook(from, to reflect.Type, data any) (any, error) {
	s, ok := data.(string)
	if !ok || s == "" || reflect.PointerTo(to).Implements(textUnmarshalerType) {
		return data, nil
	}
	var err error
	var want string
	switch to.Kind() {
	case reflect.Bool:
		_, err = strconv.ParseBool(s)
		want = "want true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		_, err = strconv.ParseInt(s, 0, to.Bits())
		want = "want an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		_, err = strconv.ParseUint(s, 0, to.Bits())
		want = "want a non-negative integer"
	case reflect.Float32, reflect.Float64:
		_, err = strconv.ParseFloat(s, to.Bits())
		want = "want a number"
	default:
		return data, nil
	}
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, strconv.ErrRange):
		return nil, fmt.Errorf("%q: out of range (%s)", s, to.Kind())
	}
	return nil, fmt.Errorf("%q: %s", s, want)
}

// strictHook rejects the conversions of the weak decoder (and of
// mapstructure's plain integer decoding) that lose what the file says:
// a fraction for an integer (`rise: 2.5` would be 2), a bool for a number
// (`fall: true` would be 1) and a number for a bool (`disabled: 1` would
// be true). A bool for a string keeps its words ("true", not the weak
// decoder's "1"). Strings are scalarHook's; weak typing stays on for them,
// since every environment override and ${VAR} is a string.
func strictHook(from, to reflect.Type, data any) (any, error) {
	for to.Kind() == reflect.Pointer {
		to = to.Elem()
	}
	if reflect.PointerTo(to).Implements(textUnmarshalerType) {
		return data, nil
	}
	switch to.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		switch d := data.(type) {
		case bool:
			return nil, fmt.Errorf("%v: want an integer", d)
		case float64:
			if d != math.Trunc(d) || math.IsInf(d, 0) {
				return nil, fmt.Errorf("%v: want an integer", d)
			}
		case float32:
			if float64(d) != math.Trunc(float64(d)) {
				return nil, fmt.Errorf("%v: want an integer", d)
			}
		}
	case reflect.Float32, reflect.Float64:
		if d, ok := data.(bool); ok {
			return nil, fmt.Errorf("%v: want a number", d)
		}
	case reflect.Bool:
		switch data.(type) {
		case int, int64, uint64, float64, float32, int32, uint, uint32:
			return nil, fmt.Errorf("%v: want true or false", data)
		}
	case reflect.String:
		if d, ok := data.(bool); ok {
			return strconv.FormatBool(d), nil
		}
	}
	return data, nil
}

// parseDuration is units.ParseDuration (time.ParseDuration plus a leading
// "<n>d" for days), with "" read as 0, a negative "-1d" read (for
// validation to reject by key, "must be positive", rather than "not a
// duration"), and a hint for a near miss ("5 min").
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, nil
	}
	if rest, ok := strings.CutPrefix(t, "-"); ok && strings.Contains(rest, "d") {
		// time.ParseDuration reads "-5s" itself.
		d, err := parseDuration(rest)
		if err != nil {
			return 0, errors.New(strings.Replace(err.Error(), strconv.Quote(rest), strconv.Quote(s), 1))
		}
		return -d, nil
	}
	d, err := units.ParseDuration(s)
	if err != nil && !strings.Contains(err.Error(), "needs a unit") {
		if h := durationHint(s); h != "" {
			return 0, fmt.Errorf("%q: not a duration%s", s, h)
		}
	}
	return d, err
}

// scalarKeys lists the dotted keys of scalar fields reachable from t without
// crossing a slice or map: those can be overridden from the environment.
func scalarKeys(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("mapstructure")
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if opts == "squash" {
			out = append(out, scalarKeys(ft, prefix)...)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		key := prefix + name
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			out = append(out, scalarKeys(ft, key+".")...)
		case ft.Kind() == reflect.Slice, ft.Kind() == reflect.Map, ft.Kind() == reflect.Interface:
		default:
			out = append(out, key)
		}
	}
	return out
}

// yamlNumber is a plain (unquoted) YAML scalar that YAML reads as a
// number: Value is the number (int, uint64 or float64), Text the scalar as
// written. A key that takes a number gets Value; a key that takes a string
// gets Text, so that `admin_token: 0123456`, `X-Api-Version: 2.0` and
// `name: 1.10` keep what the file says rather than the number's form
// (42798, 2, 1.1).
type yamlNumber struct {
	Value any
	Text  string
}

// nodeValue turns a YAML node tree into the values yaml.v3 decodes into an
// any (maps of string keys, []any, scalars), except that plain numbers are
// yamlNumber and every mapping key is its text as written. Aliases are
// followed and merge keys (<<) applied: a key of the mapping itself wins
// over a merged one, and of several merged mappings the first wins.
func nodeValue(n *yaml.Node) any {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return nodeValue(n.Content[0])
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil
		}
		return nodeValue(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			out[i] = nodeValue(c)
		}
		return out
	case yaml.MappingNode:
		out := map[string]any{}
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				merges = append(merges, v)
				continue
			}
			// A key given twice (an error) has its first value, where
			// keyIndex places it.
			if _, twice := out[nodeKey(k)]; !twice {
				out[nodeKey(k)] = nodeValue(v)
			}
		}
		merge := func(m *yaml.Node) {
			for m.Kind == yaml.AliasNode && m.Alias != nil {
				m = m.Alias
			}
			if mm, ok := nodeValue(m).(map[string]any); ok {
				for k, v := range mm {
					if _, set := out[k]; !set {
						out[k] = v
					}
				}
			}
		}
		for _, m := range merges {
			if m.Kind == yaml.SequenceNode {
				for _, e := range m.Content {
					merge(e)
				}
				continue
			}
			merge(m)
		}
		return out
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return n.Value
		}
		if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			switch v.(type) {
			case int, int64, uint64, float64:
				return yamlNumber{Value: v, Text: n.Value}
			}
		}
		return v
	}
	return nil
}

// nodeKey is a mapping key as text: a scalar as written, anything else as
// yaml.v3 would print its value.
func nodeKey(k *yaml.Node) string {
	for k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind == yaml.ScalarNode {
		return k.Value
	}
	return fmt.Sprint(plainValue(nodeValue(k)))
}

// plainValue replaces every yamlNumber in v by its number.
func plainValue(v any) any {
	switch x := v.(type) {
	case yamlNumber:
		return x.Value
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = plainValue(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = plainValue(val)
		}
		return out
	}
	return v
}

// numberTextHook hands a key that takes a string (or a text type such as
// a TLS version) the text of a number as written, and every other key the
// number. A list keeps its numbers for its elements to decide; a key of
// any type (http.json, expect.json[].equals) gets plain numbers.
func numberTextHook(_, to reflect.Type, data any) (any, error) {
	for to.Kind() == reflect.Pointer {
		to = to.Elem()
	}
	switch x := data.(type) {
	case yamlNumber:
		switch {
		case to.Kind() == reflect.String:
			return x.Text, nil
		case to.Kind() == reflect.Slice || to.Kind() == reflect.Array:
			return x, nil
		case to != percentType && to != sizeType && reflect.PointerTo(to).Implements(textUnmarshalerType):
			return x.Text, nil
		}
		return x.Value, nil
	case map[string]any, []any:
		if to.Kind() == reflect.Interface {
			return plainValue(x), nil
		}
	}
	return data, nil
}

// shapeHook rejects a mapping or list given for a single value, and a
// list or single value given for a mapping, in words ("want a duration,
// got a list") rather than the decoder's Go type names ("expected type
// 'time.Duration', got unconvertible type '[]interface {}'"). A number or
// a bool where a list belongs is an error too (`hosts: 5` would be a list
// of "5"), except in expect.status, which takes a code alone. A string or
// a mapping for a list is left to the decoder, which reads it as a list
// of one (`targets: web1`).
func shapeHook(_, to reflect.Type, data any) (any, error) {
	if data == nil {
		return data, nil
	}
	for to.Kind() == reflect.Pointer {
		to = to.Elem()
	}
	var got string
	switch data.(type) {
	case map[string]any:
		got = "a mapping"
	case []any:
		got = "a list"
	case string:
		got = "a string"
	case bool:
		got = "true or false"
	case int, int64, uint64, float64, yamlNumber:
		got = "a number"
	default:
		return data, nil
	}
	want := ""
	switch {
	case (to.Kind() == reflect.Slice || to.Kind() == reflect.Array) &&
		to != statusListType && !reflect.PointerTo(to).Implements(textUnmarshalerType):
		switch v := data.(type) {
		case bool:
			return nil, fmt.Errorf("want a list, got a bool (%v)", v)
		case yamlNumber:
			return nil, fmt.Errorf("want a list, got a number (%s)", v.Text)
		case int, int64, uint64, float64:
			return nil, fmt.Errorf("want a list, got a number (%v)", v)
		}
		return data, nil
	case to == durationType:
		want = "a duration"
	case to == percentType:
		want = "a percentage"
	case to == sizeType:
		want = "a size"
	case reflect.PointerTo(to).Implements(textUnmarshalerType):
		want = "a string"
	case to.Kind() == reflect.Struct || to.Kind() == reflect.Map:
		if got == "a mapping" {
			return data, nil
		}
		return nil, fmt.Errorf("want a mapping (key: value), got %s", got)
	case to.Kind() == reflect.String:
		want = "a string"
	case to.Kind() == reflect.Bool:
		want = "true or false"
	case to.Kind() >= reflect.Int && to.Kind() <= reflect.Int64:
		want = "an integer"
	case to.Kind() >= reflect.Uint && to.Kind() <= reflect.Uint64:
		want = "a non-negative integer"
	case to.Kind() == reflect.Float32 || to.Kind() == reflect.Float64:
		want = "a number"
	default:
		return data, nil
	}
	if got == "a mapping" || got == "a list" {
		return nil, fmt.Errorf("want %s, got %s", want, got)
	}
	return data, nil
}

// setPath sets a dotted key in the tree, matching existing keys
// case-insensitively as the decoder does.
func setPath(m map[string]any, path []string, val string) {
	for i, p := range path {
		for k := range m {
			if strings.EqualFold(k, p) {
				p = k
				break
			}
		}
		if i == len(path)-1 {
			m[p] = val
			return
		}
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
}

// secretKey matches keys whose values are secrets.
var secretKey = regexp.MustCompile(`(?i)(token|password|secret|key|auth)`)

var interpRE = regexp.MustCompile(`\$\$\{|\$\{(env:)?([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// interpolate replaces ${NAME}, ${env:NAME} and ${NAME:-default} in every
// string value with the environment's value. "$${" is a literal "${". An
// unset variable without a default is an error naming the key; it is left
// as written ("${NAME}") and the key added to unset. Inside check scripts
// only ${env:NAME} is left for the script (resolved at run time) and
// ${name} is a script variable.
// Each reference left as written is added to refs.
func interpolate(v any, path string, env func(string) (string, bool), red *redactor, errs *[]error, unset *[]string, refs map[string]bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if k == "script" && strings.HasPrefix(path, "checks[") {
				out[k] = val
				continue
			}
			out[k] = interpolate(val, p, env, red, errs, unset, refs)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = interpolate(val, fmt.Sprintf("%s[%d]", path, i), env, red, errs, unset, refs)
		}
		return out
	case string:
		if !strings.Contains(x, "${") {
			return x
		}
		return interpRE.ReplaceAllStringFunc(x, func(m string) string {
			if m == "$${" {
				return "${"
			}
			sm := interpRE.FindStringSubmatch(m)
			name, hasDefault, def := sm[2], sm[3] != "", sm[4]
			val, set := env(name)
			if set && val != "" {
				red.add(path, val)
				return val
			}
			if hasDefault {
				return def
			}
			if set {
				*errs = append(*errs, fmt.Errorf("%s: ${%s} is empty in the environment (give it a value, or use ${%s:-default} for an optional value)", path, name, name))
			} else {
				*errs = append(*errs, fmt.Errorf("%s: ${%s} is not set in the environment (use ${%s:-default} for an optional value)", path, name, name))
			}
			if len(*unset) == 0 || (*unset)[len(*unset)-1] != path {
				*unset = append(*unset, path)
			}
			refs[m] = true
			return m
		})
	}
	return v
}

// withoutRefs returns the parts of sec, a credential the config writes,
// between the references in refs (unset variables left as written): a
// reference names a secret, it is none. sec itself when it holds none.
func withoutRefs(sec string, refs map[string]bool) []string {
	parts := []string{sec}
	for ref := range refs {
		var next []string
		for _, p := range parts {
			next = append(next, strings.Split(p, ref)...)
		}
		parts = next
	}
	return parts
}

// nonKeyEnv are VIGIL_* variables that are not config overrides: the
// README's conventional ${VIGIL_ADMIN_TOKEN}, the Grafana provisioning
// variables, and the test and benchmark switches (names ending in "_" are
// prefixes).
var nonKeyEnv = []string{
	"VIGIL_ADMIN_TOKEN", "VIGIL_INFLUXDB_ORG", "VIGIL_INFLUXDB_TOKEN", verdictsFromEnv,
	"VIGIL_INFLUXD", "VIGIL_CHROMIUM", "VIGIL_SCREENSHOT_DIR", "VIGIL_FLAGS",
	"VIGIL_OUTAGE", "VIGIL_SCENARIOS", "VIGIL_STORE_CRASH_CHILD", "VIGIL_INFLUX_CRASH_CHILD",
	"VIGIL_TEST_", "VIGIL_BENCH_", "VIGIL_BENCH", "VIGIL_SOAK_", "VIGIL_SOAK", "VIGIL_CANARY_CHILD_",
}

// unknownEnv returns a warning for each VIGIL_* variable in environ
// ("NAME=value" entries) that overrides no config key: a misspelled
// override (VIGIL_AGENT_REGOIN) would otherwise be ignored without a word.
// Variables the file reads with ${NAME} and those in nonKeyEnv are not
// reported. These are warnings, not errors, because the environment is
// shared with other programs (compose files, CI, Grafana) that vigil cannot
// know.
func unknownEnv(environ []string, raw []byte) []string {
	known := map[string]bool{}
	var keys []string
	for _, key := range scalarKeys(reflect.TypeOf(File{}), "") {
		name := "VIGIL_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
		known[name] = true
		keys = append(keys, name)
	}
	for _, m := range interpRE.FindAllStringSubmatch(string(raw), -1) {
		if m[2] != "" {
			known[m[2]] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "VIGIL_") || known[name] || seen[name] || exemptEnv(name) {
			continue
		}
		seen[name] = true
		msg := fmt.Sprintf("environment variable %s overrides no config key and is ignored", name)
		if near := nearestName(name, keys); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		} else if listEnvRE.MatchString(name) {
			msg += " (keys inside lists such as checks[] cannot be set from the environment)"
		}
		out = append(out, msg)
	}
	sort.Strings(out)
	return out
}

var listEnvRE = regexp.MustCompile(`^VIGIL_[A-Z_]*_[0-9]+(_|$)`)

func exemptEnv(name string) bool {
	for _, n := range nonKeyEnv {
		if name == n || (strings.HasSuffix(n, "_") && strings.HasPrefix(name, n)) {
			return true
		}
	}
	return false
}

// didYouMean is ` (did you mean "api"?)` for a name a typo away from a key
// of names, else "".
func didYouMean[V any](name string, names map[string]V) string {
	if near := nearestName(name, slices.Sorted(maps.Keys(names))); near != "" {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	return ""
}

// nearestName returns the name in names a typo away from name, else ""
// (units.NearestName).
func nearestName(name string, names []string) string { return units.NearestName(name, names) }
