package scripts

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrInvalidSelector: a browser action's CSS selector does not parse.
var ErrInvalidSelector = errors.New("invalid CSS selector")

// ErrNotCSSSelector: a browser action's selector is written in another
// selector language: a Playwright selector (`text=Log in`, `css=…`,
// `role=button`, a `>>` chain) or XPath (`//button`, `xpath=…`). It is
// also an ErrInvalidSelector.
var ErrNotCSSSelector = errors.New("not a CSS selector")

// notCSSError is the ErrNotCSSSelector of one selector: what it is, and how
// to write it for vigil.
type notCSSError struct {
	sel, what, hint string
}

func (e *notCSSError) Error() string {
	msg := fmt.Sprintf("%q: %s; vigil takes CSS selectors only", e.sel, e.what)
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

const textHint = "to wait for text use wait_text / assert_text with a CSS selector, or eval"

// notCSS returns the error for a selector written for Playwright or in
// XPath, or nil. Playwright reads `a >> b` as a chain, `engine=body` as a
// selector of that engine, a selector starting with "//" or ".." as XPath
// and one in quotes as text; none of them is valid CSS, and querySelector
// would only reject them at run time with a message that does not say why.
func notCSS(sel string) error {
	if chainAt(sel) >= 0 {
		return &notCSSError{sel, "a Playwright selector chain", `a descendant is "a b", a child "a > b"`}
	}
	t := strings.TrimSpace(sel)
	switch {
	case strings.HasPrefix(t, "//"), strings.HasPrefix(t, ".."), strings.HasPrefix(t, "(//"):
		return &notCSSError{sel, "an XPath selector", ""}
	case strings.HasPrefix(t, `"`), strings.HasPrefix(t, "'"):
		return &notCSSError{sel, "a Playwright text selector", textHint}
	}
	m := playwrightEngine.FindStringSubmatch(t)
	if m == nil {
		return nil
	}
	engine, body := strings.ToLower(m[1]), strings.TrimSpace(t[len(m[0]):])
	switch engine {
	case "text", "internal:text", "internal:has-text":
		return &notCSSError{sel, "a Playwright text selector", textHint}
	case "xpath":
		return &notCSSError{sel, "an XPath selector", ""}
	case "css":
		return &notCSSError{sel, `a Playwright selector with the engine prefix "css="`, fmt.Sprintf("write it without the prefix: %q", body)}
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
// is (see notCSS).
func checkSelector(sel string) error {
	if err := notCSS(sel); err != nil {
		return err
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
