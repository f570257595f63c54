package checks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// A JSON path (expect.json[].path) is gjson syntax. gjson never reports a
// malformed path: it quietly selects nothing, or something else, so a typo
// such as a missing ")" in `services.#(status=="down"` made `exists: false`
// pass whatever the body held. compileJSONPath therefore checks the syntax
// at load and names the position (a byte offset into the path as written)
// of the first problem.
//
// JSONPath habits are handled too: a leading "$." (or "$" alone) is
// dropped, and after a leading "$" the bracket forms `[1]`, `['key']` and
// `["key"]` become gjson's `.1` and `.key` ("$.a.b[1]" → "a.b.1"). Without
// the "$" prefix a bracket after a key is an error that shows the gjson
// form. Wildcards (`[*]`), filters (`[?(...)]`), slices and negative indexes
// have no one-to-one gjson form and are errors that point at gjson's `#`.

// CompileJSONPath checks a JSON path as written in config (gjson syntax, or
// JSONPath after a leading "$") and returns the gjson path to evaluate, or
// an error like `unclosed "(" at 10` (a byte offset into written). Other
// packages that take JSON paths (script extractors) use it so a path means
// the same everywhere.
func CompileJSONPath(written string) (string, error) { return compileJSONPath(written) }

// compileJSONPath turns a path as written into the gjson path to evaluate,
// or returns an error like `unclosed "(" at 10`.
func compileJSONPath(written string) (string, error) {
	lead := len(written) - len(strings.TrimLeft(written, " \t"))
	p := strings.TrimSpace(written)
	if p == "" {
		return "", fmt.Errorf("empty JSON path")
	}
	if p == "$" {
		return "@this", nil
	}
	// pos maps each byte of the gjson path to its offset in written.
	var (
		gp  string
		pos []int
	)
	if strings.HasPrefix(p, "$.") || strings.HasPrefix(p, "$[") {
		var err error
		gp, pos, err = fromJSONPath(p, lead)
		if err != nil {
			return "", err
		}
	} else {
		gp = p
		pos = make([]int, len(p)+1)
		for i := range pos {
			pos[i] = lead + i
		}
	}
	v := pathValidator{pos: pos}
	if err := v.path(gp, 0); err != nil {
		if v.bracketAt >= 0 && !strings.HasPrefix(p, "$") {
			// A JSONPath index without the "$": show the gjson form.
			if alt, _, terr := fromJSONPath("$."+p, 0); terr == nil {
				return "", fmt.Errorf("%w: gjson has no [index] or ['key']; write %q", err, alt)
			}
		}
		return "", err
	}
	return gp, nil
}

// fromJSONPath translates a "$."/"$[" JSONPath into gjson, keeping a map
// from each output byte to its offset in the input (plus lead). gjson
// syntax after the "$." (queries, modifiers) is copied as it is.
func fromJSONPath(p string, lead int) (string, []int, error) {
	var out strings.Builder
	var pos []int
	emit := func(s string, at int) {
		out.WriteString(s)
		for range len(s) {
			pos = append(pos, lead+at)
		}
	}
	if strings.HasPrefix(p, "$..") {
		return "", nil, fmt.Errorf("recursive descent \"..\" at %d has no gjson form (use a query such as items.#(id==1))", lead+1)
	}
	i := 1 // after "$"
	if p[i] == '.' {
		i++
	}
	for i < len(p) {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			emit(p[i:i+2], i)
			i += 2
		case c == '#' && i+1 < len(p) && (p[i+1] == '(' || p[i+1] == '['):
			// A gjson query: copy through its closing bracket unchanged.
			end := matchClose(p, i+1)
			if end < 0 {
				end = len(p) - 1
			}
			for j := i; j <= end; j++ {
				emit(p[j:j+1], j)
			}
			i = end + 1
		case c == '.' && i+1 < len(p) && p[i+1] == '.':
			return "", nil, fmt.Errorf("recursive descent \"..\" at %d has no gjson form (use a query such as items.#(id==1))", lead+i)
		case c == '[' && (i == 1 || p[i-1] != '.' && p[i-1] != '|'):
			end := matchClose(p, i)
			if end < 0 {
				return "", nil, fmt.Errorf("unclosed \"[\" at %d", lead+i)
			}
			inner := strings.TrimSpace(p[i+1 : end])
			var key string
			switch {
			case inner != "" && strings.Trim(inner, "0123456789") == "":
				key = inner
			case len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0]:
				s := inner[1 : len(inner)-1]
				if inner[0] == '"' {
					u, err := strconv.Unquote(inner)
					if err != nil {
						return "", nil, fmt.Errorf("bad string %s at %d", inner, lead+i+1)
					}
					s = u
				} else {
					s = strings.ReplaceAll(s, `\'`, `'`)
				}
				if s == "" {
					return "", nil, fmt.Errorf("empty key [%s] at %d", inner, lead+i)
				}
				key = gjson.Escape(s)
			case inner == "*":
				return "", nil, fmt.Errorf("[*] at %d has no gjson form: use \"#\" (the count), \"#.key\" (key of every element) or a query \"#(key==value)\"", lead+i)
			case strings.HasPrefix(inner, "?"):
				return "", nil, fmt.Errorf("filter [%s] at %d: use a gjson query such as \"#(key==value)\" (first match) or \"#(key==value)#\" (all)", inner, lead+i)
			case strings.HasPrefix(inner, "-"):
				return "", nil, fmt.Errorf("negative index [%s] at %d: gjson counts from the start only (\"@reverse.0\" is the last element)", inner, lead+i)
			default:
				return "", nil, fmt.Errorf("[%s] at %d: want an index [1] or a quoted key ['key']", inner, lead+i)
			}
			if out.Len() > 0 {
				emit(".", i)
			}
			emit(key, i)
			i = end + 1
		default:
			emit(p[i:i+1], i)
			i++
		}
	}
	pos = append(pos, lead+len(p))
	return out.String(), pos, nil
}

// matchClose returns the index of the bracket closing the one at open,
// skipping escaped characters and quoted strings, or -1.
func matchClose(s string, open int) int {
	var stack []byte
	for i := open; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			i++
		case '"', '\'':
			if c == '\'' && len(stack) > 0 && stack[len(stack)-1] != ']' {
				continue // a single quote is a string only in a JSONPath bracket
			}
			j := skipString(s, i, c)
			if j < 0 {
				return -1
			}
			i = j
		case '(', '[', '{':
			stack = append(stack, closer(c))
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return -1
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i
			}
		}
	}
	return -1
}

// skipString returns the index of the quote closing the string opened at
// i, or -1.
func skipString(s string, i int, q byte) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j
		}
	}
	return -1
}

func closer(c byte) byte {
	switch c {
	case '(':
		return ')'
	case '[':
		return ']'
	}
	return '}'
}

// pathValidator checks gjson path syntax. pos maps offsets in the gjson
// path to offsets in the path as written.
type pathValidator struct {
	pos []int
	// bracketAt is the offset of a "[" found after a key, or -1.
	bracketAt int
}

func (v *pathValidator) errorf(at int, format string, a ...any) error {
	if at >= 0 && at < len(v.pos) {
		at = v.pos[at]
	}
	return fmt.Errorf(format+" at %d", append(a, at)...)
}

// path validates s, which starts at offset base of the whole gjson path.
func (v *pathValidator) path(s string, base int) error {
	if base == 0 {
		v.bracketAt = -1
	}
	if s == "" {
		return v.errorf(base, "empty path")
	}
	i := 0
	if strings.HasPrefix(s, "..") { // JSON Lines
		i = 2
		if len(s) == 2 {
			return v.errorf(base+2, "empty path after \"..\"")
		}
	}
	if s[i] == '!' && i == 0 { // a literal: !true, !"text", !{"a":1}
		end := componentEnd(s, 1)
		if !gjson.Valid(s[1:end]) {
			return v.errorf(base, "literal %q is not a JSON value", s[1:end])
		}
		i = end
		if i < len(s) {
			return v.sep(s, base, i)
		}
		return nil
	}
	for {
		if i >= len(s) {
			return v.errorf(base+i, "empty key (the path ends in %q)", s[i-1:i])
		}
		next, err := v.component(s, base, i)
		if err != nil {
			return err
		}
		i = next
		if i == len(s) {
			return nil
		}
		if s[i] != '.' && s[i] != '|' {
			return v.errorf(base+i, "unexpected %q after %q (want \".\" or \"|\")", s[i:i+1], s[:i])
		}
		i++
		if i < len(s) && (s[i] == '.' || s[i] == '|') {
			return v.errorf(base+i, "empty key between %q", s[i-1:i+1])
		}
	}
}

// sep checks that s[i] separates two components and validates the rest.
func (v *pathValidator) sep(s string, base, i int) error {
	if s[i] != '.' && s[i] != '|' {
		return v.errorf(base+i, "unexpected %q (want \".\" or \"|\")", s[i:i+1])
	}
	return v.path(s[i+1:], base+i+1)
}

// component validates the component starting at s[i] and returns the
// index after it.
func (v *pathValidator) component(s string, base, i int) (int, error) {
	switch c := s[i]; {
	case c == '@':
		return v.modifier(s, base, i)
	case c == '[' || c == '{':
		return v.multipath(s, base, i)
	case c == '#' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '['):
		return v.query(s, base, i)
	}
	// A key: "\" escapes the next byte; wildcards * and ? are allowed.
	for j := i; j < len(s); j++ {
		switch c := s[j]; c {
		case '\\':
			if j+1 == len(s) {
				return 0, v.errorf(base+j, "dangling escape \"\\\" (a literal backslash is \\\\)")
			}
			j++
		case '.', '|':
			return j, nil
		case '(', '{':
			if end := matchClose(s, j); end < 0 {
				return 0, v.errorf(base+j, "unclosed %q", s[j:j+1])
			}
			return 0, v.errorf(base+j, "unexpected %q in key %q (a query is \"#(...)\"; a literal one is \\%c)", s[j:j+1], s[i:j], c)
		case '[':
			v.bracketAt = base + j
			if end := matchClose(s, j); end < 0 {
				return 0, v.errorf(base+j, "unclosed \"[\"")
			}
			return 0, v.errorf(base+j, "unexpected \"[\" after key %q", s[i:j])
		case ')', ']', '}':
			return 0, v.errorf(base+j, "unbalanced %q (no opening %q)", s[j:j+1], string(opener(c)))
		case '"':
			if skipString(s, j, '"') < 0 {
				return 0, v.errorf(base+j, "unclosed quote")
			}
			return 0, v.errorf(base+j, "unexpected quote in key %q (a literal one is \\\")", s[i:j])
		}
	}
	return len(s), nil
}

func opener(c byte) byte {
	switch c {
	case ')':
		return '('
	case ']':
		return '['
	}
	return '{'
}

// modifier validates "@name", "@name:arg" at s[i].
func (v *pathValidator) modifier(s string, base, i int) (int, error) {
	j := i + 1
	for j < len(s) && s[j] != '.' && s[j] != '|' && s[j] != ':' {
		j++
	}
	name := s[i+1 : j]
	if !gjson.ModifierExists(name, nil) {
		return 0, v.errorf(base+i, "unknown modifier \"@%s\" (known: @this, @reverse, @keys, @values, @flatten, @join, @valid, @ugly, @pretty, @tostr, @fromstr, @group, @dig; escape a key starting with @ as \\@)", name)
	}
	if j == len(s) || s[j] != ':' {
		return j, nil
	}
	j++ // the argument
	if j == len(s) {
		return 0, v.errorf(base+j-1, "modifier \"@%s\": empty argument after \":\"", name)
	}
	switch s[j] {
	case '{', '[', '"':
		end := j
		if s[j] == '"' {
			end = skipString(s, j, '"')
		} else {
			end = matchClose(s, j)
		}
		if end < 0 {
			return 0, v.errorf(base+j, "modifier \"@%s\": unclosed %q in its argument", name, s[j:j+1])
		}
		if arg := s[j : end+1]; !gjson.Valid(arg) {
			return 0, v.errorf(base+j, "modifier \"@%s\": argument %s is not JSON", name, arg)
		}
		return end + 1, nil
	}
	// A plain argument runs to the next "|".
	for j < len(s) && s[j] != '|' {
		j++
	}
	return j, nil
}

// multipath validates "[a,b]" or "{a,"n":b}" at s[i].
func (v *pathValidator) multipath(s string, base, i int) (int, error) {
	end := matchClose(s, i)
	if end < 0 {
		return 0, v.errorf(base+i, "unclosed %q", s[i:i+1])
	}
	inner, start := s[i+1:end], i+1
	if strings.TrimSpace(inner) == "" {
		return 0, v.errorf(base+i, "empty %s", s[i:end+1])
	}
	for _, part := range splitTop(inner) {
		sub, off := part.s, start+part.off
		if s[i] == '{' {
			if k := topColon(sub); k >= 0 {
				name := strings.TrimSpace(sub[:k])
				if strings.HasPrefix(name, "\"") && !gjson.Valid(name) {
					return 0, v.errorf(base+off, "bad name %s", name)
				}
				sub, off = sub[k+1:], off+k+1
			}
		}
		t := strings.TrimLeft(sub, " ")
		off += len(sub) - len(t)
		sub = strings.TrimRight(t, " ")
		if sub == "" {
			return 0, v.errorf(base+off, "empty path in %s", s[i:end+1])
		}
		if err := v.path(sub, base+off); err != nil {
			return 0, err
		}
	}
	return end + 1, nil
}

type part struct {
	s   string
	off int
}

// indexTop is the index of the first byte at or after i, outside brackets
// and strings (and not escaped), for which stop is true, or -1.
func indexTop(s string, i int, stop func(byte) bool) int {
	depth := 0
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			i++
		case '"':
			if j := skipString(s, i, '"'); j > 0 {
				i = j
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		default:
			if depth == 0 && stop(c) {
				return i
			}
		}
	}
	return -1
}

// splitTop splits s at commas outside brackets and strings.
func splitTop(s string) []part {
	var out []part
	start := 0
	for {
		i := indexTop(s, start, func(c byte) bool { return c == ',' })
		if i < 0 {
			return append(out, part{s[start:], start})
		}
		out = append(out, part{s[start:i], start})
		start = i + 1
	}
}

// topColon is the index of the first ":" outside strings, before any
// bracket or modifier, or -1.
func topColon(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			if j := skipString(s, i, '"'); j > 0 {
				i = j
			}
		case ':':
			return i
		case '@', '(', '[', '{', '.', '|':
			return -1
		}
	}
	return -1
}

// query validates "#(...)", "#(...)#", "#[...]" at s[i].
func (v *pathValidator) query(s string, base, i int) (int, error) {
	open := i + 1
	end := matchClose(s, open)
	if end < 0 {
		if q := s[open]; unclosedString(s[open:]) >= 0 {
			return 0, v.errorf(base+open+unclosedString(s[open:]), "unclosed quote in query %q", s[i:])
		} else {
			return 0, v.errorf(base+open, "unclosed %q", string(q))
		}
	}
	inner := s[open+1 : end]
	if strings.TrimSpace(inner) == "" {
		return 0, v.errorf(base+i, "empty query %q", s[i:end+1])
	}
	// The comparison starts at the first operator byte outside brackets,
	// as gjson reads it.
	op := indexTop(inner, 0, func(c byte) bool { return strings.IndexByte("!=<>%", c) >= 0 })
	lhs := inner
	if op >= 0 {
		lhs = inner[:op]
	}
	lt := strings.TrimLeft(lhs, " ")
	loff := open + 1 + len(lhs) - len(lt)
	if lt = strings.TrimRight(lt, " "); lt != "" {
		if err := v.path(lt, base+loff); err != nil {
			return 0, err
		}
	} else if op < 0 {
		return 0, v.errorf(base+i, "empty query %q", s[i:end+1])
	}
	if op >= 0 {
		rest := inner[op:]
		var o string
		for _, cand := range []string{"==", "!=", "<=", ">=", "!%", "=", "<", ">", "%"} {
			if strings.HasPrefix(rest, cand) {
				o = cand
				break
			}
		}
		if o == "" {
			return 0, v.errorf(base+open+1+op, "unknown operator %q in query (want ==, !=, <, <=, >, >=, %% or !%%)", rest[:1])
		}
		val := strings.TrimSpace(rest[len(o):])
		voff := open + 1 + op + len(o)
		if val == "" {
			return 0, v.errorf(base+voff, "no value after %q in query (write \"\" for the empty string)", o)
		}
		if val[0] == '"' {
			if j := skipString(val, 0, '"'); j != len(val)-1 || !gjson.Valid(val) {
				return 0, v.errorf(base+voff, "bad string value %s in query", val)
			}
		}
	}
	next := end + 1
	if next < len(s) && s[next] == '#' {
		next++
	}
	return next, nil
}

// unclosedString returns the offset of a quote that is never closed in s,
// or -1.
func unclosedString(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			j := skipString(s, i, '"')
			if j < 0 {
				return i
			}
			i = j
		}
	}
	return -1
}

// componentEnd is the index of the first "." or "|" at or after i outside
// brackets and strings, or len(s).
func componentEnd(s string, i int) int {
	if k := indexTop(s, i, func(c byte) bool { return c == '.' || c == '|' }); k >= 0 {
		return k
	}
	return len(s)
}
