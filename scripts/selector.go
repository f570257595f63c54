package scripts

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidSelector: a browser action's CSS selector does not parse.
var ErrInvalidSelector = errors.New("invalid CSS selector")

// checkSelector catches the obvious syntax errors of a CSS selector list at
// load: unbalanced brackets and parentheses, unterminated strings, an empty
// selector in a list, and a selector that starts or ends with a combinator.
// It is not a full parser: Chromium's querySelector has the last word, and
// the runner asks it once before waiting on a selector (see selectorJS).
func checkSelector(sel string) error {
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
