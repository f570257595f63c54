package scripts

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrInvalidSelector: a browser action's selector does not parse.
var ErrInvalidSelector = errors.New("invalid CSS selector")

// ErrNotCSSSelector: a browser action's selector is written in a selector
// language vigil does not take: a Playwright selector other than text=
// and css= (`role=button`, `data-testid=x`, a `>>` chain) or XPath
// (`//button`, `xpath=…`). It is also an ErrInvalidSelector.
var ErrNotCSSSelector = errors.New("not a CSS selector")

// notCSSError is the ErrNotCSSSelector of one selector: what it is, and how
// to write it for vigil.
type notCSSError struct {
	sel, what, hint string
}

func (e *notCSSError) Error() string {
	msg := fmt.Sprintf("%q: %s; vigil takes CSS selectors and text=…", e.sel, e.what)
	if e.hint != "" {
		msg += " (" + e.hint + ")"
	}
	return msg
}

func (e *notCSSError) Unwrap() []error { return []error{ErrNotCSSSelector, ErrInvalidSelector} }

// playwrightEngine matches the `engine=` prefix of a Playwright selector
// (the name characters of Playwright's selector parser). CSS never has an
// "=" outside an attribute selector, so no CSS selector matches.
var playwrightEngine = regexp.MustCompile(`^([A-Za-z0-9_+*:-]+)=`)

// notCSS returns the error for a selector written for Playwright in an
// engine vigil does not take, or in XPath, or nil. Playwright reads
// `a >> b` as a chain, `engine=body` as a selector of that engine, a
// selector starting with "//" or ".." as XPath and one in quotes as text;
// none of them is valid CSS, and querySelector would only reject them at
// run time with a message that does not say why. text= and css= are not
// its business (see parseSelector).
func notCSS(sel string) error {
	if chainAt(sel) >= 0 {
		return &notCSSError{sel, "a Playwright selector chain", `a descendant is "a b", a child "a > b"; text= takes no chain`}
	}
	t := strings.TrimSpace(sel)
	switch {
	case strings.HasPrefix(t, "//"), strings.HasPrefix(t, ".."), strings.HasPrefix(t, "(//"):
		return &notCSSError{sel, "an XPath selector", ""}
	case strings.HasPrefix(t, `"`), strings.HasPrefix(t, "'"):
		return &notCSSError{sel, "a Playwright text selector without its engine", "write it text=" + t}
	}
	m := playwrightEngine.FindStringSubmatch(t)
	if m == nil {
		return nil
	}
	engine, body := strings.ToLower(m[1]), strings.TrimSpace(t[len(m[0]):])
	switch engine {
	case "text", "css":
		return nil
	case "internal:text", "internal:has-text":
		return &notCSSError{sel, "a Playwright text selector", "write it text=" + body}
	case "xpath":
		return &notCSSError{sel, "an XPath selector", ""}
	case "id", "data-testid", "data-test-id", "data-test":
		if len(body) >= 2 && (body[0] == '"' || body[0] == '\'') && body[len(body)-1] == body[0] {
			body = body[1 : len(body)-1]
		}
		return &notCSSError{sel, fmt.Sprintf("a Playwright %s= selector", engine), fmt.Sprintf("in CSS: [%s=%q]", engine, body)}
	case "role", "internal:role":
		return &notCSSError{sel, "a Playwright role selector", `in CSS, match the element or its role attribute, e.g. button or [role="button"]`}
	}
	return &notCSSError{sel, fmt.Sprintf("a Playwright %s= selector", engine), ""}
}

// selector is a browser action's selector, parsed: a CSS selector, or a
// text selector (Playwright's text engine).
//
//   - `text=Log in` matches the smallest element whose text contains
//     "Log in", case-insensitively, with runs of whitespace as one space;
//   - `text="Log in"` (or 'Log in') matches the smallest element whose
//     whole text, trimmed and with runs of whitespace as one space, is
//     "Log in", case-sensitively;
//   - `css=#go` is the CSS selector #go;
//   - anything else is CSS.
//
// An element's text is its text content without script, style and
// template elements and without children that are not rendered
// (display: none); a button-like input (submit, button, reset) has its
// value as text. The smallest element is one none of whose child elements
// match too. Of the elements that match, the first visible one in
// document order is taken, else the first (see findJS).
type selector struct {
	written string // as the step wrote it (variables expanded): for messages
	css     string // the CSS selector; "" for a text selector
	text    string // the text of a text selector
	exact   bool   // text="…": the whole text, case-sensitive
}

func (s selector) String() string { return s.written }

// js is the selector as findJS takes it, a JavaScript object literal.
func (s selector) js() string {
	v := map[string]any{"css": s.css}
	if s.css == "" {
		v = map[string]any{"text": s.text, "exact": s.exact}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// textSelectorError is the ErrInvalidSelector of a malformed text=
// selector.
type textSelectorError struct{ sel, why string }

func (e *textSelectorError) Error() string {
	return fmt.Sprintf("invalid text selector %q: %s", e.sel, e.why)
}

func (e *textSelectorError) Unwrap() error { return ErrInvalidSelector }

// regexText matches the body of a Playwright regular-expression text
// selector (text=/Log\s+in/i).
var regexText = regexp.MustCompile(`^/.*/[dgimsuvy]*$`)

// parseSelector parses a selector (after variables are expanded). A CSS
// selector goes through checkSelector; a selector of another language is
// an ErrNotCSSSelector, a malformed text selector an ErrInvalidSelector.
func parseSelector(sel string) (selector, error) {
	if err := notCSS(sel); err != nil {
		return selector{}, err
	}
	t := strings.TrimSpace(sel)
	m := playwrightEngine.FindStringSubmatch(t)
	if m == nil {
		if err := checkSelector(sel); err != nil {
			return selector{}, err
		}
		return selector{written: sel, css: sel}, nil
	}
	body := strings.TrimSpace(t[len(m[0]):])
	if strings.ToLower(m[1]) == "css" {
		if strings.TrimSpace(body) == "" {
			return selector{}, fmt.Errorf("%w %q: no CSS after css=", ErrInvalidSelector, sel)
		}
		if err := checkSelector(body); err != nil {
			return selector{}, err
		}
		return selector{written: sel, css: body}, nil
	}
	// text=
	bad := func(format string, a ...any) (selector, error) {
		return selector{}, &textSelectorError{sel, fmt.Sprintf(format, a...)}
	}
	switch {
	case body == "":
		return bad("no text after text=")
	case body[0] == '"' || body[0] == '\'':
		q := body[0]
		var b strings.Builder
		i := 1
		for ; i < len(body) && body[i] != q; i++ {
			if body[i] == '\\' && i+1 < len(body) {
				i++
			}
			b.WriteByte(body[i])
		}
		switch {
		case i >= len(body):
			return bad("unterminated quote")
		case i != len(body)-1:
			return bad("text after the closing quote at offset %d", len(sel)-len(body)+i)
		case strings.TrimSpace(b.String()) == "":
			return bad("no text in the quotes")
		}
		return selector{written: sel, text: b.String(), exact: true}, nil
	case regexText.MatchString(body):
		return bad("a regular expression text selector, which vigil does not take (use text=… with plain text, or wait_text / assert_text with regex)")
	}
	return selector{written: sel, text: body}, nil
}

// chainAt returns the offset of the first ">>" of sel outside strings,
// brackets, parentheses and escapes, or -1. Inside a quoted attribute value
// (`[title="a >> b"]`) it is text, not a chain.
func chainAt(sel string) int {
	depth := 0
	for i := 0; i < len(sel); i++ {
		switch c := sel[i]; c {
		case '\\':
			i++
		case '"', '\'':
			j := i + 1
			for ; j < len(sel) && sel[j] != c; j++ {
				if sel[j] == '\\' {
					j++
				}
			}
			i = j
		case '[', '(':
			depth++
		case ']', ')':
			if depth > 0 {
				depth--
			}
		case '>':
			if depth == 0 && i+1 < len(sel) && sel[i+1] == '>' {
				return i
			}
		}
	}
	return -1
}

// checkSelector catches the obvious syntax errors of a CSS selector list at
// load: unbalanced brackets and parentheses, unterminated strings, an empty
// selector in a list, and a selector that starts or ends with a combinator.
// It is not a full parser: Chromium's querySelector has the last word, and
// the runner asks it once before waiting on a selector (see selectorJS).
// A Playwright or XPath selector is an ErrNotCSSSelector that says what it
// is (see notCSS); text= and css= are for parseSelector, which calls this
// for the CSS.
func checkSelector(sel string) error {
	if err := notCSS(sel); err != nil {
		return err
	}
	if m := playwrightEngine.FindStringSubmatch(strings.TrimSpace(sel)); m != nil {
		return &notCSSError{sel, fmt.Sprintf("a Playwright %s= selector", strings.ToLower(m[1])), "css= and text= are taken only at the start"}
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidSelector, sel, fmt.Sprintf(format, a...))
	}
	type open struct {
		c   byte
		off int
	}
	var stack []open
	// The current list item: its first and last significant (non-space)
	// characters at depth 0, and whether they were escaped.
	var first, last byte
	firstEsc, lastEsc, empty := false, false, true
	itemStart := 0
	endItem := func() error {
		switch {
		case empty:
			if strings.TrimSpace(sel) == "" {
				return bad("selector is empty")
			}
			return bad("empty selector in the list at offset %d", itemStart)
		case !firstEsc && strings.IndexByte(">+~", first) >= 0:
			return bad("starts with the combinator %q", string(first))
		case !lastEsc && strings.IndexByte(">+~", last) >= 0:
			return bad("ends with the combinator %q", string(last))
		}
		return nil
	}
	sig := func(c byte, esc bool) {
		if empty {
			first, firstEsc, empty = c, esc, false
		}
		last, lastEsc = c, esc
	}
	for i := 0; i < len(sel); i++ {
		c := sel[i]
		switch c {
		case '\\':
			if i+1 < len(sel) {
				i++
			}
			sig(sel[i], true)
		case '"', '\'':
			j := i + 1
			for ; j < len(sel) && sel[j] != c; j++ {
				if sel[j] == '\\' {
					j++
				}
			}
			if j >= len(sel) {
				return bad("unterminated string starting at offset %d", i)
			}
			sig(c, false)
			i = j
		case '[', '(':
			stack = append(stack, open{c, i})
			sig(c, false)
		case ']', ')':
			want := byte('[')
			if c == ')' {
				want = '('
			}
			if len(stack) == 0 || stack[len(stack)-1].c != want {
				return bad("unexpected %q at offset %d", string(c), i)
			}
			stack = stack[:len(stack)-1]
			sig(c, false)
		case ',':
			if len(stack) > 0 {
				sig(c, false)
				continue
			}
			if err := endItem(); err != nil {
				return err
			}
			empty, itemStart = true, i+1
		case ' ', '\t', '\n', '\r', '\f':
		default:
			sig(c, false)
		}
	}
	if len(stack) > 0 {
		return bad("unclosed %q at offset %d", string(stack[0].c), stack[0].off)
	}
	return endItem()
}

// selectorJS returns "" when querySelector accepts the selector, or the
// message of its SyntaxError.
const selectorJS = `((sel) => { try { document.querySelector(sel); return ""; } catch (e) { return (e && e.name === "SyntaxError") ? String(e.message || e) : ""; } })(%s)`

// findJS is the one resolver of selectors in the page: every action's
// JavaScript finds its element with find(sel, control), sel being
// selector.js. It searches the document it runs in (the page's, or an
// iframe's for a step with frame). A CSS selector is querySelector's
// first match (a SyntaxError propagates), else the first match inside an
// open shadow root (each root on its own: a selector does not cross a
// shadow boundary, `my-el #inner` finds nothing). A text selector takes the
// smallest elements whose text matches (see selector) and, of them, the
// first visible one, else the first: a hidden copy of a button's text
// does not win over the button. With control true, a <label> found stands
// for its form control (Playwright's retargeting for fill, type, select):
// `text=Email` fills the field the label "Email" is for.
const findJS = `(sel, control) => {
  let el = null;
  if (sel.css) {
    el = document.querySelector(sel.css);
    if (!el) {
      // Into open shadow roots, as Playwright's CSS engine goes: the
      // first match of each root, roots in document order, nested ones
      // after their host's.
      const deep = (root) => {
        for (const h of root.querySelectorAll('*')) {
          if (!h.shadowRoot) continue;
          const e = h.shadowRoot.querySelector(sel.css) || deep(h.shadowRoot);
          if (e) return e;
        }
        return null;
      };
      el = deep(document);
    }
  } else {
    const norm = (t) => t.replace(/\s+/g, ' ').trim();
    const want = sel.exact ? norm(sel.text) : norm(sel.text).toLowerCase();
    const skip = new Set(['HEAD', 'SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'script', 'style']);
    const shown = (e) => getComputedStyle(e).display !== 'none';
    const texts = new Map(), hits = new Map();
    const text = (e) => {
      let t = texts.get(e);
      if (t !== undefined) return t;
      t = '';
      if (e.tagName === 'INPUT') {
        if (/^(submit|button|reset)$/i.test(e.type)) t = e.value;
      } else {
        for (let n = e.firstChild; n; n = n.nextSibling) {
          if (n.nodeType === 3) t += n.nodeValue;
          else if (n.nodeType === 1 && !skip.has(n.tagName) && shown(n)) t += text(n);
        }
      }
      texts.set(e, t);
      return t;
    };
    const hit = (e) => {
      let h = hits.get(e);
      if (h !== undefined) return h;
      const t = norm(text(e));
      h = sel.exact ? t === want : t.toLowerCase().includes(want);
      hits.set(e, h);
      return h;
    };
    const visible = (e) => {
      const r = e.getBoundingClientRect(), st = getComputedStyle(e);
      return r.width > 0 && r.height > 0 && st.visibility !== 'hidden' && st.visibility !== 'collapse';
    };
    let first = null;
    const all = document.body ? [document.body, ...document.body.querySelectorAll('*')] : [];
    for (const e of all) {
      if (skip.has(e.tagName) || !hit(e)) continue;
      let smaller = false;
      for (const c of e.children) {
        if (!skip.has(c.tagName) && shown(c) && hit(c)) { smaller = true; break; }
      }
      if (smaller) continue;
      if (visible(e)) { el = e; break; }
      if (!first) first = e;
    }
    if (!el) el = first;
  }
  if (control && el && el.tagName === 'LABEL' && el.control) el = el.control;
  return el;
}`

// pageJS formats a template of the page's JavaScript, which finds its
// elements with find (see findJS).
func pageJS(tmpl string, args ...any) string {
	return "(() => { const find = " + findJS + "; return " + fmt.Sprintf(tmpl, args...) + "; })()"
}
