package scripts

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// BrowserStep is one action in the run's browser tab (`browser:`). Exactly
// one key is set. Selectors are CSS selectors or text selectors (text=…,
// see selector). Every string may use
// `${var}` and `${env:NAME}`.
type BrowserStep struct {
	// Navigate loads a URL and waits for its load event. A URL without a
	// scheme is joined to the target URL ("/shop" → <target>/shop). A
	// document answered with status >= 400 fails the step. It is the URL
	// (a string or *string), or a NavigateAction (a mapping {url,
	// wait_until} in a config file) to wait for less than the load event.
	Navigate any `mapstructure:"navigate"`
	// Click waits until the element is visible, enabled (not disabled, not
	// in a disabled fieldset, not aria-disabled) and the one a click at its
	// center reaches (no overlay over it), then clicks its center.
	Click *string `mapstructure:"click"`
	// Type waits until the element is visible and enabled, focuses it and
	// types text.
	Type *TypeAction `mapstructure:"type"`
	// Fill waits as Type does, then replaces the field's value with text
	// (Playwright's fill): an input, a textarea or a contenteditable
	// element.
	Fill *FillAction `mapstructure:"fill"`
	// Select waits until the <select> is enabled, sets its value (the
	// option's value attribute) and fires input and change events; an
	// unknown option fails the step.
	Select *SelectAction `mapstructure:"select"`
	// WaitVisible waits until the element is visible.
	WaitVisible *string `mapstructure:"wait_visible"`
	// WaitText waits until the element's text matches.
	WaitText *TextMatch `mapstructure:"wait_text"`
	// AssertText checks the element's text, retrying within the step's
	// timeout until it matches (Playwright's toHaveText): it fails with
	// the last text seen.
	AssertText *TextMatch `mapstructure:"assert_text"`
	// AssertTitle checks document.title: exact match, or a regex after "~"
	// (e.g. "~^Shop"). It retries within the step's timeout until the
	// title matches (Playwright's toHaveTitle), so it may follow a click
	// that starts a navigation.
	AssertTitle *string `mapstructure:"assert_title"`
	// AssertURL checks the page URL: exact match (a URL without a scheme is
	// joined to the target URL), or a regex after "~" (e.g. "~/shop$"). It
	// retries as AssertTitle does (Playwright's toHaveURL).
	AssertURL *string `mapstructure:"assert_url"`
	// Eval runs JavaScript (awaiting a returned promise) and checks its
	// value.
	Eval *EvalAction `mapstructure:"eval"`
	// Extract reads values of the page into script variables, by variable
	// name (lower-case, as an http step's `extract`).
	Extract map[string]BrowserExtract `mapstructure:"extract"`
	// Screenshot, when true, saves a PNG of the viewport as an artifact.
	Screenshot *bool `mapstructure:"screenshot"`
	// Sleep waits for the duration, e.g. 500ms.
	Sleep *time.Duration `mapstructure:"sleep"`
	// NoConsoleErrors, when true, fails if the page logged console.error
	// calls or threw uncaught exceptions since the run began.
	NoConsoleErrors *bool `mapstructure:"no_console_errors"`
	// MaxFailedRequests fails if more network requests than this failed
	// (DNS, connection, aborted, blocked) since the run began. 0 allows none.
	MaxFailedRequests *int `mapstructure:"max_failed_requests"`

	// Frame is not an action: a selector of an iframe of the page (in the
	// page's own document) that the step's action runs in. The step waits,
	// within its timeout, for the iframe and its document; its selectors
	// are then looked up in that document, a click goes to the point of
	// the page where the element shows. Iframes of another origin work
	// too, also of another site (which Chromium runs in another process).
	// Only with the actions on elements and eval, assert_title, assert_url
	// and extract. Nil: the page.
	Frame *string `mapstructure:"frame"`

	extracts []namedExtract  // Extract compiled, by name
	nav      *NavigateAction // Navigate compiled
}

// The events a navigate step may wait for (NavigateAction.WaitUntil).
const (
	WaitLoad             = "load"
	WaitDOMContentLoaded = "domcontentloaded"
	WaitCommit           = "commit"
)

// NavigateAction is the mapping form of navigate (`navigate: {url,
// wait_until}`).
type NavigateAction struct {
	// URL is loaded as the string form of navigate is.
	URL string `mapstructure:"url"`
	// WaitUntil is the event the step waits for: "load" (the default: the
	// page and all its resources, third-party scripts included) or
	// "domcontentloaded" (the document is parsed; scripts it waits for
	// have run, images, async scripts and iframes may still load) or
	// "commit" (the document's response arrived and replaced the page;
	// the rest of it may still load, a script that blocks the parser
	// included), as Playwright's page.goto waitUntil. Case-insensitive.
	WaitUntil string `mapstructure:"wait_until"`
}

// compileNavigate turns the Navigate value into b.nav. Errors name the key
// under navigate.
func (b *BrowserStep) compileNavigate() (urlKey string, err error) {
	var n NavigateAction
	urlKey = "navigate"
	switch v := b.Navigate.(type) {
	case string:
		n.URL = v
	case *string:
		n.URL = *v
	case NavigateAction:
		n, urlKey = v, "navigate.url"
	case *NavigateAction:
		n, urlKey = *v, "navigate.url"
	case map[string]any:
		urlKey = "navigate.url"
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s, ok := v[k].(string)
			switch lk := strings.ToLower(k); {
			case lk != "url" && lk != "wait_until":
				return urlKey, fmt.Errorf("navigate.%s: unknown key (want url, wait_until)", k)
			case !ok:
				return urlKey, fmt.Errorf("navigate.%s: want a string, got %s", lk, shapeOf(v[k]))
			case lk == "url":
				n.URL = s
			default:
				n.WaitUntil = s
			}
		}
	default:
		return urlKey, fmt.Errorf("navigate: want a URL or a mapping {url, wait_until}, got %s", shapeOf(v))
	}
	switch w := strings.ToLower(strings.TrimSpace(n.WaitUntil)); w {
	case "", WaitLoad:
		n.WaitUntil = WaitLoad
	case WaitDOMContentLoaded, WaitCommit:
		n.WaitUntil = w
	default:
		return urlKey, fmt.Errorf("navigate.wait_until: %q: want %s, %s or %s", n.WaitUntil, WaitLoad, WaitDOMContentLoaded, WaitCommit)
	}
	b.nav = &n
	return urlKey, nil
}

// shapeOf names the kind of a decoded YAML value, for errors.
func shapeOf(v any) string {
	switch v.(type) {
	case map[string]any, map[any]any:
		return "a mapping"
	case []any:
		return "a list"
	case bool:
		return "true or false"
	case nil:
		return "nothing"
	case string:
		return "a string"
	}
	return "a number"
}

// TypeAction types text into an element (`type:`).
type TypeAction struct {
	Selector string `mapstructure:"selector"`
	// Text is typed key by key; "\n" presses Enter.
	Text string `mapstructure:"text"`
}

// FillAction replaces the value of a form field (`fill:`), as Playwright's
// fill does: it selects the field's content and inserts text in its place
// (an empty text clears the field), so that the page sees the input events
// of an edit, then fires change. Inputs of type date, time, color, range
// and the like get the value set directly, with input and change events.
type FillAction struct {
	Selector string `mapstructure:"selector"`
	// Text is the new value, inserted as it is ("\n" does not press
	// Enter, unlike type). Default "": the field is cleared.
	Text string `mapstructure:"text"`
}

// BrowserExtract reads one value of the page into a script variable
// (`browser.extract.<name>`). Exactly one key is set. The element
// extractors wait, within the step's timeout, until the element (and, for
// attr, its attribute) is there.
type BrowserExtract struct {
	// Text is a selector: the element's innerText, trimmed.
	Text string `mapstructure:"text"`
	// Value is a selector of an input, textarea or select: its value.
	Value string `mapstructure:"value"`
	// Attr reads an attribute of an element.
	Attr *AttrExtract `mapstructure:"attr"`
	// Eval is JavaScript, evaluated once (a returned promise is awaited): a
	// string is stored as it is, numbers, booleans, objects and arrays as
	// JSON; undefined or null fails the step.
	Eval string `mapstructure:"eval"`
	// Secret makes the value a secret of the run (see Extract.Secret);
	// a variable whose name is sensitive (token, password, session, …)
	// is one without it.
	Secret bool `mapstructure:"secret"`
}

// AttrExtract names an element and one of its attributes (`attr:`).
type AttrExtract struct {
	Selector string `mapstructure:"selector"`
	Name     string `mapstructure:"name"`
}

// namedExtract is a BrowserExtract under its variable name.
type namedExtract struct {
	name    string // lower-cased
	written string // as the config wrote it, for messages
	e       *BrowserExtract
}

// extractNames returns the lower-case names of the variables the step's
// extract sets, after validate.
func (b *BrowserStep) extractNames() []string {
	var out []string
	for _, n := range b.extracts {
		out = append(out, n.name)
	}
	return out
}

// SelectAction chooses an option of a <select> (`select:`).
type SelectAction struct {
	Selector string `mapstructure:"selector"`
	Value    string `mapstructure:"value"`
}

// TextMatch matches an element's text (innerText, trimmed). At least one of
// Equals, Contains, Regex is set; all that are set must hold.
type TextMatch struct {
	Selector string  `mapstructure:"selector"`
	Equals   *string `mapstructure:"equals"`
	Contains string  `mapstructure:"contains"`
	Regex    string  `mapstructure:"regex"`

	re *regexp.Regexp
}

// EvalAction evaluates JavaScript in the page (`eval:`). With none of
// Equals, Contains, Regex set, the step passes when the value is truthy.
type EvalAction struct {
	JS string `mapstructure:"js"`
	// Equals compares the value as JSON: 3 equals 3.0, "1" does not equal 1.
	Equals any `mapstructure:"equals"`
	// Contains and Regex apply to the value as text (strings unquoted,
	// other values as JSON).
	Contains string `mapstructure:"contains"`
	Regex    string `mapstructure:"regex"`

	re     *regexp.Regexp
	equals string // canonical JSON of Equals
}

// ErrNavigateScheme rejects a navigate URL whose scheme is not http or
// https (file:, data:, javascript:, chrome:, …): such a page would read the
// agent's files or browser internals into the run's verdicts and artifacts.
var ErrNavigateScheme = errors.New("want an http:// or https:// URL, or a path joined to the target URL")

// schemeRE matches a URL scheme (RFC 3986 section 3.1) and its colon.
var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

// navigateScheme returns the lower-cased scheme u starts with, "" when it
// has none (a path, joined to the target URL).
func navigateScheme(u string) string {
	m := schemeRE.FindStringSubmatch(strings.TrimSpace(u))
	if m == nil {
		return ""
	}
	return strings.ToLower(m[1])
}

func httpScheme(sc string) bool { return sc == "http" || sc == "https" }

// abbrevScheme keeps a scheme short in messages.
func abbrevScheme(sc string) string {
	if len(sc) > 16 {
		return sc[:16] + "…"
	}
	return sc
}

// literalPrefix is the part of s before its first variable: what is known
// of a URL before the run expands it.
func literalPrefix(s string) string {
	if i := strings.Index(s, "${"); i >= 0 {
		return s[:i]
	}
	return s
}

// checkNavigateURL rejects a navigate URL, after expansion and joining to
// the target URL, whose scheme is not http or https.
func checkNavigateURL(u string) error {
	if sc := navigateScheme(u); !httpScheme(sc) {
		if sc == "" {
			sc = "(none)"
		}
		return fmt.Errorf("scheme %s: %w", abbrevScheme(sc), ErrNavigateScheme)
	}
	return nil
}

// validate returns the action's name and the variables it uses.
func (b *BrowserStep) validate() (string, []ref, error) {
	type action struct {
		name string
		set  bool
	}
	actions := []action{
		{"navigate", b.Navigate != nil},
		{"click", b.Click != nil},
		{"type", b.Type != nil},
		{"fill", b.Fill != nil},
		{"select", b.Select != nil},
		{"wait_visible", b.WaitVisible != nil},
		{"wait_text", b.WaitText != nil},
		{"assert_text", b.AssertText != nil},
		{"assert_title", b.AssertTitle != nil},
		{"assert_url", b.AssertURL != nil},
		{"eval", b.Eval != nil},
		{"extract", b.Extract != nil},
		{"screenshot", b.Screenshot != nil},
		{"sleep", b.Sleep != nil},
		{"no_console_errors", b.NoConsoleErrors != nil},
		{"max_failed_requests", b.MaxFailedRequests != nil},
	}
	var set []string
	for _, a := range actions {
		if a.set {
			set = append(set, a.name)
		}
	}
	switch len(set) {
	case 0:
		return "", nil, errors.New("no action: want one of navigate, click, type, fill, select, wait_visible, wait_text, assert_text, assert_title, assert_url, eval, extract, screenshot, sleep, no_console_errors, max_failed_requests")
	case 1:
	default:
		return "", nil, fmt.Errorf("more than one action: %s", strings.Join(set, ", "))
	}
	kind := set[0]
	// The strings that may use variables, by key relative to `browser`.
	type keyed struct{ key, s string }
	var strs []keyed
	add := func(key, v string) { strs = append(strs, keyed{key, v}) }
	selector := func(key, sel string) error {
		if strings.TrimSpace(sel) == "" {
			return fmt.Errorf("%s: %w", key, ErrEmptySelector)
		}
		add(key, sel)
		// A selector with variables is checked after expansion, at run
		// time; "$${" is already a literal here.
		if lit, xerr := expand(sel, func(ref) (string, bool) { return "", false }); xerr == nil {
			if _, err := parseSelector(lit); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
		return nil
	}
	var err error
	if b.Frame != nil {
		switch kind {
		case "navigate", "screenshot", "sleep", "no_console_errors", "max_failed_requests":
			err = fmt.Errorf("frame: %s acts on the page, not in a frame", kind)
		default:
			err = selector("frame", *b.Frame)
		}
		if err != nil {
			return kind, nil, err
		}
	}
	switch kind {
	case "navigate":
		var key string
		if key, err = b.compileNavigate(); err != nil {
			break
		}
		if strings.TrimSpace(b.nav.URL) == "" {
			err = fmt.Errorf("%s: URL is empty", key)
		} else if sc := navigateScheme(literalPrefix(b.nav.URL)); sc != "" && !httpScheme(sc) {
			err = fmt.Errorf("%s: scheme %s: %w", key, abbrevScheme(sc), ErrNavigateScheme)
		}
		add(key, b.nav.URL)
	case "click":
		err = selector("click", *b.Click)
	case "wait_visible":
		err = selector("wait_visible", *b.WaitVisible)
	case "type":
		err = selector("type.selector", b.Type.Selector)
		add("type.text", b.Type.Text)
	case "fill":
		err = selector("fill.selector", b.Fill.Selector)
		add("fill.text", b.Fill.Text)
	case "select":
		err = selector("select.selector", b.Select.Selector)
		add("select.value", b.Select.Value)
	case "wait_text", "assert_text":
		m := b.WaitText
		if kind == "assert_text" {
			m = b.AssertText
		}
		if err = selector(kind+".selector", m.Selector); err == nil {
			err = m.compile(kind)
		}
		if m.Equals != nil {
			add(kind+".equals", *m.Equals)
		}
		add(kind+".contains", m.Contains)
	case "assert_title", "assert_url":
		var v string
		if kind == "assert_url" {
			v = *b.AssertURL
		} else {
			v = *b.AssertTitle
		}
		if re, ok := strings.CutPrefix(v, "~"); ok {
			if _, cerr := regexp.Compile(re); cerr != nil {
				err = fmt.Errorf("%s: %w", kind, cerr)
			}
		} else {
			add(kind, v)
		}
	case "eval":
		err = b.Eval.compile()
		add("eval.js", b.Eval.JS)
	case "extract":
		b.extracts = nil
		if len(b.Extract) == 0 {
			err = errors.New(`extract: want at least one variable, e.g. extract: {order_id: {text: "#order-id"}}`)
			break
		}
		names := make([]string, 0, len(b.Extract))
		for name := range b.Extract {
			names = append(names, name)
		}
		sort.Strings(names)
		var errs []error
		for _, name := range names {
			e := b.Extract[name]
			key := "extract." + name
			lname := strings.ToLower(name)
			if !varName.MatchString(lname) {
				errs = append(errs, fmt.Errorf("%s: not a variable name (letters, digits, _)", key))
				continue
			}
			var set []string
			for _, k := range []struct {
				name string
				set  bool
			}{{"text", e.Text != ""}, {"value", e.Value != ""}, {"attr", e.Attr != nil}, {"eval", e.Eval != ""}} {
				if k.set {
					set = append(set, k.name)
				}
			}
			var xerr error
			switch {
			case len(set) == 0:
				xerr = fmt.Errorf("%s: want one of text, value, attr, eval", key)
			case len(set) > 1:
				xerr = fmt.Errorf("%s: more than one of text, value, attr, eval: %s", key, strings.Join(set, ", "))
			case e.Text != "":
				xerr = selector(key+".text", e.Text)
			case e.Value != "":
				xerr = selector(key+".value", e.Value)
			case e.Attr != nil:
				if xerr = selector(key+".attr.selector", e.Attr.Selector); xerr == nil {
					if strings.TrimSpace(e.Attr.Name) == "" {
						xerr = fmt.Errorf("%s.attr.name: attribute name is empty", key)
					}
					add(key+".attr.name", e.Attr.Name)
				}
			case e.Eval != "":
				if strings.TrimSpace(e.Eval) == "" {
					xerr = fmt.Errorf("%s.eval: script is empty", key)
				}
				add(key+".eval", e.Eval)
			}
			if xerr != nil {
				errs = append(errs, xerr)
				continue
			}
			b.extracts = append(b.extracts, namedExtract{name: lname, written: name, e: &e})
		}
		err = errors.Join(errs...)
	case "screenshot":
		if !*b.Screenshot {
			err = errors.New("screenshot: must be true")
		}
	case "sleep":
		if *b.Sleep <= 0 {
			err = errors.New("sleep: must be a positive duration, e.g. 500ms")
		}
	case "no_console_errors":
		if !*b.NoConsoleErrors {
			err = errors.New("no_console_errors: must be true")
		}
	case "max_failed_requests":
		if *b.MaxFailedRequests < 0 {
			err = errors.New("max_failed_requests: must not be negative")
		}
	}
	if err != nil {
		return kind, nil, err
	}
	var refs []ref
	for _, ks := range strs {
		if rerr := addRefs(&refs, ks.key, ks.s); rerr != nil {
			return kind, nil, rerr
		}
	}
	for i := range refs {
		refs[i].key = "browser." + refs[i].key
	}
	return kind, refs, nil
}

func (m *TextMatch) compile(key string) error {
	if m.Equals == nil && m.Contains == "" && m.Regex == "" {
		return fmt.Errorf("%s: want one of equals, contains, regex", key)
	}
	if m.Regex != "" {
		re, err := regexp.Compile(m.Regex)
		if err != nil {
			return fmt.Errorf("%s.regex: %w", key, err)
		}
		m.re = re
	}
	return nil
}

func (e *EvalAction) compile() error {
	if strings.TrimSpace(e.JS) == "" {
		return errors.New("eval.js: script is empty")
	}
	if e.Regex != "" {
		re, err := regexp.Compile(e.Regex)
		if err != nil {
			return fmt.Errorf("eval.regex: %w", err)
		}
		e.re = re
	}
	e.equals = ""
	if e.Equals != nil {
		j, err := canonicalJSON(e.Equals)
		if err != nil {
			return fmt.Errorf("eval.equals: %w", err)
		}
		e.equals = j
	}
	return nil
}

// canonicalJSON encodes v as JSON with numbers normalised through float64,
// so that a YAML 3 and a JavaScript 3 compare equal.
func canonicalJSON(v any) (string, error) {
	b, err := json.Marshal(normalize(v))
	if err != nil {
		return "", err
	}
	var back any
	if err := json.Unmarshal(b, &back); err != nil {
		return "", err
	}
	b, err = json.Marshal(back)
	return string(b), err
}

// normalize turns map[any]any (as some YAML decoders produce) into
// map[string]any so that it encodes as JSON.
func normalize(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, v := range x {
			m[fmt.Sprint(k)] = normalize(v)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, v := range x {
			m[k] = normalize(v)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = normalize(v)
		}
		return out
	}
	return v
}

// matchText checks got against the matcher, returning assertion display
// strings.
func (m *TextMatch) match(got string) (ok bool, want string) {
	var parts []string
	ok = true
	if m.Equals != nil {
		parts = append(parts, fmt.Sprintf("equals %q", *m.Equals))
		ok = ok && got == *m.Equals
	}
	if m.Contains != "" {
		parts = append(parts, fmt.Sprintf("contains %q", m.Contains))
		ok = ok && strings.Contains(got, m.Contains)
	}
	if m.re != nil {
		parts = append(parts, fmt.Sprintf("matches /%s/", m.Regex))
		ok = ok && m.re.MatchString(got)
	}
	return ok, strings.Join(parts, " and ")
}
