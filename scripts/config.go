package scripts

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr/vm"
	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// DefaultStepTimeout bounds a step that sets no `timeout`, capped by what is
// left of the run's time.
const DefaultStepTimeout = 10 * time.Second

// Config errors that tests compare with errors.Is.
var (
	// ErrNoKind: a step has none of http, expr, browser.
	ErrNoKind = errors.New("step has no kind: want one of http, expr, browser")
	// ErrManyKinds: a step has more than one of http, expr, browser.
	ErrManyKinds = errors.New("step has more than one kind")
	// ErrEmptySelector: a browser action's CSS selector is empty.
	ErrEmptySelector = errors.New("selector is empty")
	// ErrUndefinedVar: a step uses a variable no earlier step extracts.
	ErrUndefinedVar = errors.New("undefined variable")
	// ErrLastBeforeHTTP: an expr step reads `last` and no earlier step is
	// an http step, so there is no response for it to read.
	ErrLastBeforeHTTP = errors.New("last is read before any http step")
	// ErrTimeoutSum: the steps' timeouts add up to more than the check's.
	ErrTimeoutSum = errors.New("step timeouts exceed the check timeout")
	// ErrEmptyScript: the script has no steps.
	ErrEmptyScript = errors.New("script has no steps")
)

// Script is a check's `script:` list: steps run in order against one target.
// Call ValidateAndSetDefaults once at load; New compiles it into a Runner.
type Script []Step

// Step is one entry of a script. Exactly one of HTTP, Expr and Browser is set.
type Step struct {
	// Name labels the step in results and errors. Default "<index> <kind>",
	// e.g. "2 browser.click".
	Name string `mapstructure:"name"`

	// HTTP is a request (`http:`), with the keys of package checks' HTTP
	// check: method, url, path (relative to the target URL), headers, body,
	// json, … `${var}` and `${env:NAME}` are expanded in url, path, header
	// values and body before sending.
	HTTP *checks.HTTPSpec `mapstructure:"http"`
	// Expect holds the assertions on the HTTP step's response (`expect:`),
	// with every key of package checks: status, headers, body, json, …
	// Only for http steps. Default: the checks defaults (status 200-399).
	// Variables are not expanded in it: a `${name}` naming a variable of the
	// script, or a `${env:NAME}`, is a config error (ErrVarInExpect); any
	// other "${" is matched as written.
	Expect *checks.Expect `mapstructure:"expect"`
	// Extract sets variables from the HTTP step's response, by variable
	// name (lower-case). Only for http steps; a browser step reads the
	// page into variables with its extract action (BrowserStep.Extract).
	Extract map[string]Extract `mapstructure:"extract"`

	// Expr is an expr-lang/expr boolean expression (`expr:`) over `vars`
	// (map of the script variables, strings) and `last` (the last HTTP
	// response: status_code, headers (lower-case names), body, json, url,
	// duration_ms). The step passes when it is true.
	Expr string `mapstructure:"expr"`

	// Browser is one action in the run's browser tab (`browser:`).
	Browser *BrowserStep `mapstructure:"browser"`

	// Timeout bounds the step. Default DefaultStepTimeout (10s), always capped
	// by what is left of the check's timeout. The explicit timeouts of all
	// steps (and browser sleeps) must not add up to more than the check's.
	Timeout time.Duration `mapstructure:"timeout"`

	// Always runs the step even after an earlier step failed (cleanup). An
	// always step runs even when the run's deadline has passed, with its own
	// timeout (default 5s there), so cleanup is not skipped by a timeout.
	Always bool `mapstructure:"always"`

	kind    string      // "http", "expr", "browser.<action>"
	unnamed bool        // Name is the default "<index> <kind>"
	refs    []ref       // variables used by the step
	program *vm.Program // compiled Expr
	extract map[string]*Extract
	timeout time.Duration // explicit or default
}

// Extract takes one value out of an HTTP step's response. Exactly one key is
// set.
type Extract struct {
	// JSON is a gjson path into the response body, e.g. `token` or
	// `data.items.0.id`, checked at load like expect.json[].path (see
	// checks.CompileJSONPath): a leading "$." reads JSONPath's [1] and
	// ['key'] as gjson's .1 and .key. Objects and arrays are extracted as
	// raw JSON.
	JSON string `mapstructure:"json"`
	// Regex is matched against the body; the first capture group (or the
	// whole match when it has none) is extracted.
	Regex string `mapstructure:"regex"`
	// Header names a response header (case-insensitive); its first value is
	// extracted.
	Header string `mapstructure:"header"`
	// Cookie names a cookie set by the response (or held by the run's cookie
	// jar for the response URL).
	Cookie string `mapstructure:"cookie"`
	// Secret makes the value a secret of the run: hidden, in every form
	// ${env:…} values are, in every message, assertion, URL and
	// screenshot. Values taken from a cookie, from a header or JSON key
	// whose name is sensitive (Authorization, Set-Cookie, token, password,
	// session, …; see checks.SensitiveName), or into a variable whose name
	// is, or that a step sends as a credential (a sensitive request header,
	// a sensitive query parameter, form or json field,
	// basic_auth.password: see credentialVars), are secrets without it.
	Secret bool `mapstructure:"secret"`

	re       *regexp.Regexp
	jsonPath string // JSON compiled to gjson
}

// ValidateAndSetDefaults validates the extractor and compiles its JSON path
// or regex.
func (e *Extract) ValidateAndSetDefaults() error {
	n := 0
	for _, s := range []string{e.JSON, e.Regex, e.Header, e.Cookie} {
		if s != "" {
			n++
		}
	}
	switch {
	case n == 0:
		return errors.New("want one of json, regex, header, cookie")
	case n > 1:
		return errors.New("more than one of json, regex, header, cookie")
	}
	if e.JSON != "" {
		p, err := checks.CompileJSONPath(e.JSON)
		if err != nil {
			return fmt.Errorf("json: %q: %w", e.JSON, err)
		}
		e.jsonPath = p
	}
	if e.Regex != "" {
		re, err := regexp.Compile(e.Regex)
		if err != nil {
			return fmt.Errorf("regex: %w", err)
		}
		e.re = re
	}
	return nil
}

// Kind returns the step's kind, e.g. "http", "expr" or "browser.click",
// after ValidateAndSetDefaults.
func (s *Step) Kind() string { return s.kind }

// HasBrowser reports whether any step drives the browser.
func (sc Script) HasBrowser() bool {
	for i := range sc {
		if sc[i].Browser != nil {
			return true
		}
	}
	return false
}

// ValidateAndSetDefaults validates every step, sets names and timeouts,
// compiles regexes and expressions, checks that every `${var}` is extracted
// by an earlier step, that no http step's expect holds a `${name}` of a
// variable of the script or a `${env:NAME}` (ErrVarInExpect: expect is not
// expanded), and that the explicit step timeouts fit in
// checkTimeout (0 = no limit). Errors start with the step's index, e.g.
// `[2].browser.click: selector is empty`; the caller prefixes the key of the
// list: units.Prefix("script", err).
func (sc Script) ValidateAndSetDefaults(checkTimeout time.Duration) error {
	if len(sc) == 0 {
		return ErrEmptyScript
	}
	var errs []error
	// Every variable the script extracts, for the expect check below: a
	// ${name} of a later step's extract is as likely a mistake.
	extracted := map[string]bool{}
	for i := range sc {
		for name := range sc[i].Extract {
			extracted[strings.ToLower(name)] = true
		}
		if b := sc[i].Browser; b != nil {
			for name := range b.Extract {
				extracted[strings.ToLower(name)] = true
			}
		}
	}
	defined := map[string]bool{}
	httpBefore := false // an earlier step is an http step: `last` is set
	var sum time.Duration
	var parts []string // what sum adds up, for its error
	sumReported := false
	for i := range sc {
		s := &sc[i]
		idx := fmt.Sprintf("[%d]", i)
		if err := s.validate(i); err != nil {
			errs = append(errs, units.Prefix(idx, err))
			httpBefore = httpBefore || s.HTTP != nil
			continue
		}
		if s.HTTP != nil {
			for _, err := range expectRefs(s.Expect, extracted, s.Name) {
				errs = append(errs, units.Prefix(idx, err))
			}
		}
		for _, r := range s.refs {
			if !r.env && !defined[r.name] {
				errs = append(errs, units.Prefix(idx+"."+r.key, fmt.Errorf("%w ${%s}: no earlier step extracts it%s", ErrUndefinedVar, r.written, envHint(r.written))))
			}
		}
		if s.program != nil {
			for _, name := range exprVars(s.Expr) {
				if !defined[name] {
					errs = append(errs, units.Prefix(idx, fmt.Errorf("expr: %w vars.%s: no earlier step extracts it", ErrUndefinedVar, name)))
				}
			}
			if !httpBefore && exprReadsLast(s.Expr) {
				errs = append(errs, units.Prefix(idx, fmt.Errorf("expr: %w: last is the response of the latest http step "+
					"before the expr (browser steps do not set it), and there is none", ErrLastBeforeHTTP)))
			}
		}
		if s.HTTP != nil {
			httpBefore = true
		}
		for name := range s.extract {
			defined[name] = true
		}
		if s.Browser != nil {
			for _, name := range s.Browser.extractNames() {
				defined[name] = true
			}
		}
		d, key := s.Timeout, "timeout"
		if s.Browser != nil && s.Browser.Sleep != nil && *s.Browser.Sleep > d {
			d, key = *s.Browser.Sleep, "browser.sleep"
		}
		sum += d
		if d > 0 {
			parts = append(parts, fmt.Sprintf("[%d].%s %s", i, key, d))
		}
		if checkTimeout > 0 && sum > checkTimeout && !sumReported {
			sumReported = true
			// The key is what this step adds: its timeout, or the sleep
			// of a browser step without one.
			errs = append(errs, units.Prefix(idx, fmt.Errorf("%s: %w: steps 0..%d add up to %s (%s), the check timeout is %s",
				key, ErrTimeoutSum, i, sum, sumParts(parts), checkTimeout)))
		}
		if s.timeout == 0 {
			s.timeout = DefaultStepTimeout
		}
		if checkTimeout > 0 && s.timeout > checkTimeout {
			s.timeout = checkTimeout
		}
	}
	return errors.Join(errs...)
}

// maxSumParts bounds the terms sumParts names.
const maxSumParts = 6

// sumParts joins the terms of a sum of step timeouts and sleeps for its
// error ("[0].timeout 4s + [2].browser.sleep 3s"), the first maxSumParts.
func sumParts(parts []string) string {
	if len(parts) > maxSumParts {
		return strings.Join(parts[:maxSumParts], " + ") + fmt.Sprintf(" + %d more", len(parts)-maxSumParts)
	}
	return strings.Join(parts, " + ")
}

// validate checks one step on its own (without the variables of other
// steps), with errors relative to the step.
func (s *Step) validate(i int) error {
	var kinds []string
	if s.HTTP != nil {
		kinds = append(kinds, "http")
	}
	if s.Expr != "" {
		kinds = append(kinds, "expr")
	}
	if s.Browser != nil {
		kinds = append(kinds, "browser")
	}
	switch len(kinds) {
	case 0:
		return ErrNoKind
	case 1:
	default:
		return fmt.Errorf("%w: %s", ErrManyKinds, strings.Join(kinds, ", "))
	}
	if s.Timeout < 0 {
		return errors.New("timeout: must not be negative")
	}
	var errs []error
	if kinds[0] != "http" {
		if s.Expect != nil {
			errs = append(errs, fmt.Errorf("expect: only for http steps"))
		}
		if len(s.Extract) > 0 {
			errs = append(errs, fmt.Errorf("extract: only for http steps"))
		}
	}
	s.refs = nil
	switch kinds[0] {
	case "http":
		s.kind = "http"
		if err := s.HTTP.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix("http", err))
		}
		if s.Expect == nil {
			s.Expect = &checks.Expect{}
		}
		if err := s.Expect.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix("expect", err))
		}
		refs, err := collectRefs("http", reflect.ValueOf(s.HTTP))
		if err != nil {
			errs = append(errs, err)
		}
		s.refs = refs
		s.extract = map[string]*Extract{}
		names := make([]string, 0, len(s.Extract))
		for name := range s.Extract {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			e := s.Extract[name]
			lname := strings.ToLower(name)
			if !varName.MatchString(lname) {
				errs = append(errs, fmt.Errorf("extract.%s: not a variable name (letters, digits, _)", name))
				continue
			}
			if err := e.ValidateAndSetDefaults(); err != nil {
				errs = append(errs, units.Prefix("extract."+name, err))
				continue
			}
			s.extract[lname] = &e
		}
	case "expr":
		s.kind = "expr"
		p, err := compileExpr(s.Expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("expr: %w", err))
		}
		s.program = p
	case "browser":
		kind, refs, err := s.Browser.validate()
		if err != nil {
			errs = append(errs, units.Prefix("browser", err))
		}
		s.kind = "browser." + kind
		s.refs = refs
	}
	if s.Name == "" || s.unnamed {
		s.Name, s.unnamed = fmt.Sprintf("%d %s", i, s.kind), true
	}
	s.timeout = s.Timeout
	return errors.Join(errs...)
}

// EnvVar is an environment variable a script reads (${env:NAME}) and the
// key that reads it, relative to the script ("[0].http.json.password").
type EnvVar struct{ Key, Name string }

// EnvVars lists the environment variables the script reads, in step
// order; call after ValidateAndSetDefaults. They are read at each run, so
// `vigil validate` warns about those not set where it runs.
func (sc Script) EnvVars() []EnvVar {
	var out []EnvVar
	for i := range sc {
		for _, r := range sc[i].refs {
			if r.env {
				out = append(out, EnvVar{Key: fmt.Sprintf("[%d].%s", i, r.key), Name: r.name})
			}
		}
	}
	return out
}

// envHint is the end of an undefined-variable error whose name is written
// as environment variables are (API_KEY): in a script, ${NAME} is a
// variable an earlier step extracts, and the environment is ${env:NAME}
// (a check's own keys read the environment with ${NAME}).
func envHint(name string) string {
	if name == "" || strings.ToUpper(name) != name || strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	}) {
		return ""
	}
	return " (for the environment variable " + name + " write ${env:" + name + "}: in a script step ${" + name + "} is a variable an earlier step extracts)"
}
