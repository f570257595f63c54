package scripts

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/vigil-synthetics/vigil/checks"
)

// Variable syntax in step strings:
//
//	${name}      a script variable set by an earlier step's `extract`
//	${env:NAME}  an environment variable of the agent; its value is a secret
//	$${          a literal "${" (e.g. a JavaScript template literal)
//
// Variable names are matched lower-cased, because the config loader
// lower-cases the keys of `extract` maps; messages show a ${name} as the
// string wrote it.

// varName is the shape of a script variable name.
var varName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// envName is the shape of an environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ErrUnterminatedVar is returned for a "${" without its closing "}".
var ErrUnterminatedVar = errors.New(`unterminated "${"`)

// EnvUnsetError is a ${env:NAME} whose variable is not set in the agent's
// environment when a step runs. That is the agent's own configuration, not
// the target's doing: the step fails with cause agent
// (checks.Cause.AgentFault), before it sends anything, so a canary host
// missing a variable does not mark its targets unhealthy.
type EnvUnsetError struct{ Name string }

func (e *EnvUnsetError) Error() string {
	return fmt.Sprintf("environment variable %s is not set in the agent's environment "+
		"(the agent's own configuration, not the target's: nothing was sent; set %s where vigil runs)", e.Name, e.Name)
}

// ref is one variable reference found in a string.
type ref struct {
	name    string // lower-cased script variable, or the environment name
	written string // the name as the config wrote it, for messages
	env     bool
	key     string // where it was found, relative to the step, e.g. "http.headers.Authorization"
}

// parseRefs returns the references in s, or an error for a malformed one.
func parseRefs(s string) ([]ref, error) {
	var out []ref
	_, err := expand(s, func(r ref) (string, bool) {
		out = append(out, r)
		return "", true
	})
	return out, err
}

// expand replaces every reference in s with lookup's value. lookup's false
// means "not set": expand then fails naming the variable.
func expand(s string, lookup func(ref) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' {
			// "$${" is a literal "${".
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", ErrUnterminatedVar
		}
		body := s[i+2 : i+j]
		s = s[i+j+1:]
		var r ref
		if name, ok := strings.CutPrefix(body, "env:"); ok {
			if !envName.MatchString(name) {
				return "", fmt.Errorf("%q: not an environment variable name", body)
			}
			r = ref{name: name, written: name, env: true}
		} else {
			written := strings.TrimSpace(body)
			name := strings.ToLower(written)
			if !varName.MatchString(name) {
				return "", fmt.Errorf("${%s}: not a variable name (want ${name} or ${env:NAME})", body)
			}
			r = ref{name: name, written: written}
		}
		v, ok := lookup(r)
		if !ok {
			if r.env {
				return "", &EnvUnsetError{Name: r.name}
			}
			return "", fmt.Errorf("variable %s is not set", r.written)
		}
		b.WriteString(v)
	}
}

// collectRefs walks every string reachable from v (see walkStrings) and
// returns the references found, each with its key under prefix (e.g.
// "http.headers.Authorization", "http.json.items[0]"), or the first
// malformed-reference error, prefixed with its key. It lets the script
// validate variables in the request specs of package checks without knowing
// their fields.
func collectRefs(prefix string, v reflect.Value) ([]ref, error) {
	var out []ref
	err := walkStrings(prefix, v, func(key, s string) error { return addRefs(&out, key, s) })
	return out, err
}

// walkStrings calls fn with every string reachable from v (struct fields by
// their mapstructure key, maps in key order, slices, pointers, interfaces)
// and its key under prefix, and stops at fn's first error.
func walkStrings(prefix string, v reflect.Value, fn func(key, s string) error) error {
	var walk func(key string, v reflect.Value) error
	walk = func(key string, v reflect.Value) error {
		switch v.Kind() {
		case reflect.String:
			return fn(key, v.String())
		case reflect.Pointer, reflect.Interface:
			if v.IsNil() {
				return nil
			}
			return walk(key, v.Elem())
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				if !f.IsExported() {
					continue
				}
				name, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
				if name == "-" {
					continue
				}
				if name == "" {
					name = strings.ToLower(f.Name)
				}
				if err := walk(key+"."+name, v.Field(i)); err != nil {
					return err
				}
			}
		case reflect.Slice, reflect.Array:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				return nil
			}
			for i := 0; i < v.Len(); i++ {
				if err := walk(fmt.Sprintf("%s[%d]", key, i), v.Index(i)); err != nil {
					return err
				}
			}
		case reflect.Map:
			keys := v.MapKeys()
			sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
			for _, k := range keys {
				if err := walk(key+"."+fmt.Sprint(k), v.MapIndex(k)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(prefix, v)
}

// ErrVarInExpect: an http step's `expect` holds a ${name} that names a
// variable of the script, or a ${env:NAME}. expect is compiled at load
// and compared as written, so the reference would be matched as literal
// text (a not_contains of it would always pass).
var ErrVarInExpect = errors.New("variables are not expanded in expect")

// expectRefs returns one error for every string under the step's expect
// (walked like collectRefs, keys under "expect") that holds a ${name}
// naming one of vars (lower-case names of the script's extracts), or a
// ${env:NAME}. Any other "${" is left alone: expect may look for an
// unrendered template (`not_contains: ["${"]`, "${user.name}"). "$${" is
// not a reference.
func expectRefs(e any, vars map[string]bool, step string) []error {
	var errs []error
	_ = walkStrings("expect", reflect.ValueOf(e), func(key, s string) error {
		seen := map[string]bool{}
		for rest := s; ; {
			i := strings.Index(rest, "${")
			if i < 0 {
				break
			}
			escaped := i > 0 && rest[i-1] == '$'
			rest = rest[i+2:]
			j := strings.IndexByte(rest, '}')
			if j < 0 {
				break
			}
			body := rest[:j]
			if escaped {
				continue
			}
			rest = rest[j+1:]
			var why, name string
			if env, ok := strings.CutPrefix(body, "env:"); ok && envName.MatchString(env) {
				name, why = body, "expect cannot use environment variables (their values are secrets)"
			} else if name = strings.ToLower(strings.TrimSpace(body)); varName.MatchString(name) && vars[name] {
				why = fmt.Sprintf("compare the variable in an expr step instead, e.g. expr: 'last.body contains vars.%s'", name)
			} else {
				continue
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			errs = append(errs, fmt.Errorf("%s: %w (step %q): ${%s} would be matched as literal text; %s", key, ErrVarInExpect, step, body, why))
		}
		return nil
	})
	return errs
}

// addRefs appends the references in s, found at key, to out. A malformed
// reference is an error prefixed with the key.
func addRefs(out *[]ref, key, s string) error {
	rs, err := parseRefs(s)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	for _, r := range rs {
		r.key = key
		*out = append(*out, r)
	}
	return nil
}

// runVars is the variable state of one run.
type runVars struct {
	vars map[string]string
	// secrets holds the values of ${env:…} used in this run, and the
	// extracted values that are secrets (see secretExtract).
	secrets map[string]struct{}
	// red hides the secrets in every form checks.Redactor knows (base64
	// as in a Basic Authorization header, hex, base32, JSON-escaped,
	// percent-encoded once or twice, Go-quoted, Latin-1).
	red checks.Redactor
	// credential names the script variables the script sends as a
	// credential (see credentialVars): their values are secrets whatever
	// the variable's name or extractor.
	credential map[string]bool
	// secretNames are the variables set as secrets (set's secret, or
	// credential), whatever the length of their value.
	secretNames map[string]bool
}

func newRunVars() *runVars {
	return &runVars{vars: map[string]string{}, secrets: map[string]struct{}{}, secretNames: map[string]bool{}}
}

// minExtractedSecret is the shortest extracted value treated as a secret:
// a shorter one ("1", "ok") would be hidden in unrelated text.
const minExtractedSecret = 4

// addSecret makes v one of the run's secrets. As the config's redactor
// does for a ${NAME} value, red also hides it trimmed of surrounding
// spaces, all upper-case and all lower-case (from 3 bytes on), as a page's
// toUpperCase() or an origin that normalises it echoes it.
func (rv *runVars) addSecret(v string) {
	if v == "" {
		return
	}
	rv.secrets[v] = struct{}{}
	rv.red.Add(v)
	if t := strings.TrimSpace(v); len(t) >= 3 {
		for _, f := range []string{t, strings.ToUpper(t), strings.ToLower(t)} {
			if f != v {
				rv.red.Add(f)
			}
		}
	}
}

// set sets the variable name to v, a secret when secret is true (and v is
// at least minExtractedSecret bytes long).
func (rv *runVars) set(name, v string, secret bool) {
	rv.vars[name] = v
	secret = secret || rv.credential[name]
	rv.secretNames[name] = secret
	if secret && len(v) >= minExtractedSecret {
		rv.addSecret(v)
	}
}

// secretVar reports whether the variable name holds a secret: it was set
// as one, or its value is one of the run's secrets (an ${env:…} value,
// a cookie the jar received).
func (rv *runVars) secretVar(name string) bool {
	v, ok := rv.vars[name]
	if !ok {
		return false
	}
	if rv.secretNames[name] || checks.SensitiveName(name) {
		return true
	}
	_, s := rv.secrets[v]
	return s
}

// credentialKey reports whether a value at key (relative to the step, as
// ref.key) is sent as a credential: the value of a request header, a
// query parameter or a form field whose name is sensitive (Authorization,
// Proxy-Authorization, Cookie, X-Api-Key, access_token, password, …:
// checks.SensitiveName), a json field under a sensitive name at any depth
// (http.json.user.password, http.json.tokens[0]), or
// basic_auth.password.
func credentialKey(key string) bool {
	for _, p := range []string{"http.headers.", "http.query.", "http.form."} {
		if n, ok := strings.CutPrefix(key, p); ok {
			return checks.SensitiveName(n)
		}
	}
	if j, ok := strings.CutPrefix(key, "http.json"); ok && (j == "" || j[0] == '.' || j[0] == '[') {
		for _, seg := range strings.FieldsFunc(j, func(r rune) bool { return r == '.' || r == '[' || r == ']' }) {
			if checks.SensitiveName(seg) {
				return true
			}
		}
		return false
	}
	return key == "http.basic_auth.password"
}

// queryCredentialVars returns the variables that the query string of
// raw, an http step's url or path, substitutes into the value of a
// parameter whose name is sensitive (?access_token=${t}).
func queryCredentialVars(raw string) []string {
	_, q, ok := strings.Cut(raw, "?")
	if !ok {
		return nil
	}
	q, _, _ = strings.Cut(q, "#")
	var out []string
	for _, kv := range strings.Split(q, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if !checks.SensitiveName(k) {
			continue
		}
		rs, _ := parseRefs(v)
		for _, r := range rs {
			if !r.env {
				out = append(out, r.name)
			}
		}
	}
	return out
}

// credentialVars returns the script variables that some step substitutes
// into a credential (credentialKey, queryCredentialVars):
// `Authorization: "Bearer ${bearer}"` or `query: {access_token:
// "${bearer}"}` makes bearer's value a secret of the run from its
// extraction on, as a token extracted under a sensitive name is.
func (sc Script) credentialVars() map[string]bool {
	out := map[string]bool{}
	for i := range sc {
		for _, r := range sc[i].refs {
			if !r.env && credentialKey(r.key) {
				out[r.name] = true
			}
		}
		if h := sc[i].HTTP; h != nil {
			for _, raw := range []string{h.URL, h.Path} {
				for _, name := range queryCredentialVars(raw) {
					out[name] = true
				}
			}
		}
	}
	return out
}

// unset forgets the variables of a step whose extraction failed, so that
// a later step using one fails naming it instead of using the value of an
// earlier run of the extraction.
func (rv *runVars) unset(names ...string) {
	for _, n := range names {
		delete(rv.vars, n)
	}
}

// lookup resolves one reference, recording environment values as secrets.
func (rv *runVars) lookup(r ref) (string, bool) {
	if r.env {
		v, ok := os.LookupEnv(r.name)
		if ok && v != "" {
			rv.addSecret(v)
		}
		return v, ok
	}
	v, ok := rv.vars[r.name]
	return v, ok
}

// expand expands s with this run's variables.
func (rv *runVars) expand(s string) (string, error) {
	return expand(s, rv.lookup)
}

// redact is the one path every text a run reports goes through (step
// errors, expr and extract messages, assertions, URLs, the page's console
// errors and failed requests, failure notes). It replaces every secret
// value in s with "[redacted]", also as http.query and http.form encode it
// (url.QueryEscape) and as a URL path carries it (url.PathEscape), longer
// forms first so that a secret containing another is fully hidden; then
// the other forms of checks.Redactor (base64, as the "user:password" of a
// Basic Authorization header; hex; base32; percent-encoded twice;
// JSON-escaped; Go-quoted; Latin-1; the start of a form cut short with
// "…") with "***".
func (rv *runVars) redact(s string) string {
	if len(rv.secrets) == 0 || s == "" {
		return s
	}
	seen := map[string]bool{}
	keys := make([]string, 0, 3*len(rv.secrets))
	for k := range rv.secrets {
		for _, f := range []string{k, url.QueryEscape(k), url.PathEscape(k)} {
			if !seen[f] {
				seen[f] = true
				keys = append(keys, f)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		s = strings.ReplaceAll(s, k, "[redacted]")
	}
	return rv.red.Redact(s)
}
