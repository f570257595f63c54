package checks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
)

// The assertions of one expect that no answer can pass together are config
// errors, found at load: a check written so would fail every run whatever
// the service does.

// conflicts reports body assertions no body passes together, as ErrConflict
// errors under the key "body": a string both in contains and not_contains,
// or a not_contains string that is part of a contains one; a regex also
// listed in not_regex (unless it holds $ or \z: regex also tries the body
// without its final line break, not_regex does not); a not_regex that
// matches a contains string and holds no ^, $, \A, \z, \b or \B, so that
// it matches every body holding that string.
func (b BodyExpect) conflicts() []error {
	var errs []error
	for _, nc := range b.NotContains {
		if nc == "" {
			continue // reported as an empty string
		}
		for _, c := range b.Contains {
			switch {
			case c == nc:
				errs = append(errs, errorf(ErrConflict, "body: %q is in both contains and not_contains: no answer can pass", c))
			case strings.Contains(c, nc):
				errs = append(errs, errorf(ErrConflict, "body: not_contains %q is part of contains %q: no answer can pass", nc, c))
			}
		}
	}
	for _, nr := range b.NotRegex {
		if nr == "" {
			continue
		}
		re, err := regexp.Compile(nr)
		if err != nil {
			continue // reported by the compile
		}
		ops := regexOps(nr)
		for _, r := range b.Regex {
			if r == nr && !ops[syntax.OpEndText] {
				errs = append(errs, errorf(ErrConflict, "body: %q is in both regex and not_regex: no answer can pass", r))
			}
		}
		if ops[syntax.OpBeginLine] || ops[syntax.OpEndLine] || ops[syntax.OpBeginText] || ops[syntax.OpEndText] ||
			ops[syntax.OpWordBoundary] || ops[syntax.OpNoWordBoundary] {
			continue // whether it matches depends on what is around the string
		}
		for _, c := range b.Contains {
			if c != "" && re.MatchString(c) {
				errs = append(errs, errorf(ErrConflict, "body: not_regex ~%s matches contains %q: no answer can pass", nr, c))
			}
		}
	}
	return errs
}

// headerConflicts reports, as ErrConflict errors keyed by the not_headers
// entry, a header that headers requires and not_headers refuses whatever
// its value: not_headers present against any headers matcher but absent,
// the same exact value or regex in both, and a not_headers regex that
// matches the exact value headers requires.
func headerConflicts(headers, notHeaders []headerExpect) []error {
	var errs []error
	for _, n := range notHeaders {
		for _, h := range headers {
			if h.name != n.name || h.m.Kind == MatchAbsent {
				continue
			}
			conflict := n.m.Kind == MatchPresent ||
				n.m.Kind == h.m.Kind && n.m.Value == h.m.Value ||
				n.m.Kind == MatchRegex && h.m.Kind == MatchExact && n.m.Match([]string{h.m.Value})
			if conflict {
				errs = append(errs, errorf(ErrConflict, "not_headers.%s: %q refuses every answer that passes headers.%s: %q: no answer can pass",
					n.name, n.m.String(), h.name, h.m.String()))
			}
		}
	}
	return errs
}

// regexOps is the set of operators in the parsed regex src (nil when it
// does not parse).
func regexOps(src string) map[syntax.Op]bool {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil
	}
	ops := map[syntax.Op]bool{}
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		ops[r.Op] = true
		for _, s := range r.Sub {
			walk(s)
		}
	}
	walk(re)
	return ops
}

// jsonConflicts reports, as ErrConflict errors keyed by the later entry
// ("json[1].equals"), entries of expect.json on the same path that no
// value passes together: two different equals; exists: false with any
// other assertion on the path; bounds no number meets (gt: 5 in one, lt: 3
// in another); an equals that a bound or a regex on the path refuses (a
// bound refuses every value but a number; a regex is judged only against
// a fixed text: a string's contents, true, false or null). An entry is
// also judged alone, for its equals against its own bounds and regex (its
// bounds against each other, and exists: false, are judged by compile).
// At most one error is reported per entry.
func jsonConflicts(js []jsonExpect) []error {
	var errs []error
	for i := range js {
		if err := jsonPairConflict(js[i], i, js[i], i); err != nil {
			errs = append(errs, fmt.Errorf("json[%d].%w", i, err))
			continue
		}
		for k := 0; k < i; k++ {
			if js[k].path != js[i].path {
				continue
			}
			if err := jsonPairConflict(js[k], k, js[i], i); err != nil {
				errs = append(errs, fmt.Errorf("json[%d].%w", i, err))
				break
			}
		}
	}
	return errs
}

// jsonPairConflict is the conflict between entry a (index ai) and entry b
// (index bi ≥ ai, whose key the error names) on the same path, or nil.
// With ai == bi the entry is judged alone.
func jsonPairConflict(a jsonExpect, ai int, b jsonExpect, bi int) error {
	path := strconv.Quote(b.name)
	if ai == bi {
		return equalsConflict(b.equals, "", b, "", path, false)
	}
	other := fmt.Sprintf(" (json[%d])", ai)
	aNot, bNot := a.exists != nil && !*a.exists, b.exists != nil && !*b.exists
	switch {
	case aNot && !bNot:
		return errorf(ErrConflict, "%s: %s must be missing%s and present here: no answer can pass", b.firstKey(), path, other)
	case bNot && !aNot:
		return errorf(ErrConflict, "exists: %s must be missing here and present%s: no answer can pass", path, other)
	}
	if a.equals != nil && b.equals != nil && !bytes.Equal(a.equals, b.equals) {
		return errorf(ErrConflict, "equals: %s cannot equal both %s%s and %s: no answer can pass", path, a.equals, other, b.equals)
	}
	empty := func(lo, hi numBound) bool { return lo.n > hi.n || lo.n == hi.n && (lo.op == ">" || hi.op == "<") }
	for _, lo := range a.bounds {
		for _, hi := range b.bounds {
			if strings.HasPrefix(lo.op, ">") && strings.HasPrefix(hi.op, "<") && empty(lo, hi) {
				return errorf(ErrConflict, "%s: no number is %s%s and %s", keyOf(hi), lo, other, hi)
			}
		}
	}
	for _, lo := range b.bounds {
		for _, hi := range a.bounds {
			if strings.HasPrefix(lo.op, ">") && strings.HasPrefix(hi.op, "<") && empty(lo, hi) {
				return errorf(ErrConflict, "%s: no number is %s and %s%s", keyOf(lo), lo, hi, other)
			}
		}
	}
	if err := equalsConflict(a.equals, other, b, "", path, false); err != nil {
		return err
	}
	return equalsConflict(b.equals, "", a, other, path, true)
}

// equalsConflict judges an equals value eq (nil: none) against the bounds
// and regex of entry x; eqFrom and xFrom name the entries they come from
// when not the one the error is keyed by, and keyEquals keys the error by
// equals rather than by x's key.
func equalsConflict(eq []byte, eqFrom string, x jsonExpect, xFrom, path string, keyEquals bool) error {
	if eq == nil {
		return nil
	}
	key := func(k string) string {
		if keyEquals {
			return "equals"
		}
		return k
	}
	for _, bd := range x.bounds {
		n, isNum := jsonNumber(eq)
		if !isNum {
			return errorf(ErrConflict, "%s: %s equals %s%s, not a number, and %s%s needs one: no answer can pass", key(keyOf(bd)), path, eq, eqFrom, keyOf(bd), xFrom)
		}
		if !bd.holds(n) {
			return errorf(ErrConflict, "%s: %s equals %s%s, which is not %s%s: no answer can pass", key(keyOf(bd)), path, eq, eqFrom, bd, xFrom)
		}
	}
	if x.re != nil {
		if text, ok := jsonRegexText(eq); ok && !x.re.MatchString(text) {
			return errorf(ErrConflict, "%s: %s equals %s%s, which does not match ~%s%s: no answer can pass", key("regex"), path, eq, eqFrom, x.re, xFrom)
		}
	}
	return nil
}

// firstKey is the first key set of an entry, to key an error by.
func (j jsonExpect) firstKey() string {
	switch {
	case j.equals != nil:
		return "equals"
	case j.re != nil:
		return "regex"
	case len(j.bounds) > 0:
		return keyOf(j.bounds[0])
	}
	return "exists"
}

// jsonNumber reads canonical JSON that is a number.
func jsonNumber(v []byte) (float64, bool) {
	if len(v) == 0 || !(v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
		return 0, false
	}
	n, err := strconv.ParseFloat(string(v), 64)
	return n, err == nil
}

// jsonRegexText is the text json[].regex is matched against for a value
// that equals canonical JSON v, when that text is fixed: a string's
// contents, true, false or null (a number or an object may be written
// another way in the body).
func jsonRegexText(v []byte) (string, bool) {
	switch string(v) {
	case "true", "false", "null":
		return string(v), true
	}
	if len(v) > 0 && v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s, true
		}
	}
	return "", false
}
