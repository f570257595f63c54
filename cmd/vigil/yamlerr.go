package main

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// yamlErr matches yaml.v3's errors: "yaml: line N: message", or
// "yaml: message" without a line. yaml.v3 leaves the line out when the
// error's marks are on the first line (they count from 0, and 0 reads as
// unknown), and for errors that carry no position (a control character, an
// unknown anchor).
var yamlErr = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

// urlPassword matches the password of a URL's userinfo.
var urlPassword = regexp.MustCompile(`(://[^/@\s:]*:)[^@\s/]*@`)

// noDocStart is yaml.v3's error for content after a document end marker
// ("...") that does not start with "---".
const noDocStart = "did not find expected <document start>"

// locateYAMLError places a yaml.v3 syntax error msg about raw at the line
// at fault and, where it can be told, its column, with a plain message (see
// plainProblem): a *lineError whose message starts "not valid YAML: " and
// which quotes (or, from vigil validate, shows) that line. For errors
// inside a block (a key indented one space too far, a list item missing its
// "-") yaml.v3 names the line where the enclosing block starts, which can
// be dozens of lines earlier; for an error in a construct that opened on
// the first line it names no line, or the end of the file. The line at
// fault is the first one at which the file, cut after that line, fails
// with the same message: every shorter cut parses, or fails for another
// reason (an unterminated quote or bracket that a later line closes). It
// is found by bisecting on the cut, from the reported line (from the first
// line when yaml.v3 named none, or the last line or beyond), so a large
// file costs a few parses, not one per line; the column likewise, by
// bisecting on a cut within that line (see errorColumn). yaml.v3 stops at
// the first syntax error, so one is reported per file. A message yaml.v3
// gives in another form is returned as it is.
func locateYAMLError(raw []byte, msg string) error {
	m := yamlErr.FindStringSubmatch(msg)
	if m == nil {
		return errors.New("not valid YAML: " + msg)
	}
	problem := m[2]
	lines := bytes.SplitAfter(raw, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // what follows the last newline
	}
	n := len(lines)
	reported := 0
	if m[1] != "" {
		reported, _ = strconv.Atoi(m[1])
	}
	if n == 0 {
		return errors.New("not valid YAML: " + problem)
	}
	text := func(k int) string { return strings.TrimRight(string(lines[k-1]), "\r\n") }
	// Content after a document end marker ("...") with no "---" before
	// it: yaml.v3 names the line after the marker, often a blank one.
	if problem == noDocStart && reported > 0 {
		if k, end := secondDocument(lines, reported); k > 0 {
			t := text(k)
			return &lineError{line: k, col: len(t) - len(strings.TrimLeft(t, " \t")) + 1, src: t,
				err: fmt.Errorf(`not valid YAML: a second YAML document (after the "..." on line %d): vigil reads one document per file (merge them into one)`, end)}
		}
	}
	start := reported
	if start < 1 || start >= n {
		start = 1
	}
	ends := lineEnds(lines)
	line := firstFailingCut(raw, ends, start, problem)
	if line == 0 {
		if reported < 1 {
			return errors.New("not valid YAML: " + problem)
		}
		line = reported
	}
	line = min(line, n) // yaml.v3 can name the line after the last
	// A double-quoted string left open runs on to the next '"', maybe many
	// lines and sections later, where YAML then fails on what follows it:
	// name the line the string opened on instead, at its opening quote.
	if open := openQuoteLine(lines, line); open > 0 {
		t := text(open)
		col := utf8.RuneCountInString(t[:openDoubleQuote(t)]) + 1
		return &lineError{line: open, col: col, src: t,
			err: fmt.Errorf(`not valid YAML: a double-quoted string opened here runs on to line %d (is its closing " missing?), where YAML fails: %s`, line, plainProblem(problem, "", 0, false))}
	}
	t := text(line)
	col, unclosed := errorColumn(raw, ends, line, problem)
	plain := plainProblem(problem, t, col, unclosed)
	if indent := t[:len(t)-len(strings.TrimLeft(t, " \t"))]; strings.Contains(indent, "\t") && plain != tabIndent {
		plain += ": " + tabIndent
	}
	return &lineError{line: line, col: col, src: t, err: errors.New("not valid YAML: " + plain)}
}

// tabIndent is the message for a line indented with a tab.
const tabIndent = "a tab indents this line: YAML indents with spaces only"

// lineEnds returns, for each k from 0 to len(lines), the length of lines
// 1..k.
func lineEnds(lines [][]byte) []int {
	ends := make([]int, len(lines)+1)
	for i, l := range lines {
		ends[i+1] = ends[i] + len(l)
	}
	return ends
}

// yamlProblem returns the message (without "yaml: line N: ") with which
// yaml.v3 refuses b, "" when b parses.
func yamlProblem(b []byte) string {
	var tree any
	err := yaml.Unmarshal(b, &tree)
	if err == nil {
		return ""
	}
	if pm := yamlErr.FindStringSubmatch(err.Error()); pm != nil {
		return pm[2]
	}
	return err.Error()
}

// errorColumn returns the column (from 1, in characters) of line k (from
// 1) of raw at which yaml.v3 fails with problem, 0 when it cannot be told:
// the shortest cut of raw within that line that fails so, whose last
// character is then the one at fault (the ':' of a mapping value where
// none is allowed, the quote of a string never closed, a tab, a character
// that cannot start a value). A cut inside a flow collection ({…}, […])
// fails at its end for want of the closing bracket: there the cut is
// closed with the brackets the line left open before it is parsed, so that
// the column is that of the first character after which the collection
// cannot go on; when the whole line so closed parses, the collection is
// never closed, and the column is that of its opening bracket (unclosed
// true). The search bisects on the cut: a few parses, each from the
// start of the top-level section that holds the line.
func errorColumn(raw []byte, ends []int, k int, problem string) (col int, unclosed bool) {
	line := strings.TrimRight(string(raw[ends[k-1]:ends[k]]), "\r\n")
	if strings.HasPrefix(problem, "unknown anchor ") {
		// The alias: yaml.v3 fails at its end, and a cut within it names
		// another anchor.
		name := strings.TrimSuffix(strings.TrimPrefix(problem, "unknown anchor '"), "' referenced")
		if i := strings.Index(line, "*"+name); i >= 0 {
			return utf8.RuneCountInString(line[:i]) + 1, false
		}
		return 0, false
	}
	offs := make([]int, 0, len(line)+1) // byte offset of each character, then the end
	for i := range line {
		offs = append(offs, i)
	}
	offs = append(offs, len(line))
	chars := len(offs) - 1
	flow := problem == "did not find expected ',' or '}'" || problem == "did not find expected ',' or ']'"
	from := sectionStart(raw, ends, k, problem)
	var before []byte // the flow collections the lines before leave open
	if flow {
		for _, l := range bytes.SplitAfter(raw[from:ends[k-1]], []byte("\n")) {
			before = flowScan(string(l), before).stack
		}
	}
	buf := make([]byte, 0, ends[k]+16)
	fails := func(i int) bool {
		buf = append(buf[:0], raw[from:ends[k-1]+offs[i]]...)
		if flow {
			buf = append(buf, flowScan(line[:offs[i]], before).closers()...)
		}
		return yamlProblem(buf) == problem
	}
	if fails(0) {
		return 0, false // the line alone does not make it fail
	}
	if !fails(chars) {
		if s := flowScan(line, before); flow && len(s.open) > 0 {
			return utf8.RuneCountInString(line[:s.open[len(s.open)-1]]) + 1, true
		}
		return 0, false
	}
	lo, hi := 1, chars
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	// A cut after a blank that fails where the cut before it did not:
	// the blank completes the token before it (the ": " of a mapping
	// value), which is the one at fault.
	for lo > 1 && (line[offs[lo-1]] == ' ' || line[offs[lo-1]] == '\t') && strings.TrimSpace(line[:offs[lo-1]]) != "" {
		lo--
	}
	return lo, false
}

// sectionStart returns the offset in raw from which the lines up to line
// k (from 1) fail to parse with problem as raw cut after line k does,
// while those before line k alone do not: the nearest list item ("- ")
// before line k indented no deeper than it, else the top-level key whose
// section holds it, else 0 (the start). The column search parses from
// there rather than from the start of a large file. A part of the file
// that parses otherwise on its own (an alias of an anchor written before
// it, a list item inside a flow collection) is not taken.
func sectionStart(raw []byte, ends []int, k int, problem string) int {
	indent := func(l []byte) int { return len(l) - len(bytes.TrimLeft(l, " ")) }
	lk := raw[ends[k-1]:ends[k]]
	var candidates []int
	item := false
	for s := k - 1; s >= 1; s-- {
		l := raw[ends[s-1]:ends[s]]
		t := bytes.TrimLeft(l, " ")
		if !item && bytes.HasPrefix(t, []byte("- ")) && indent(l) <= indent(lk) {
			candidates = append(candidates, s)
			item = true
		}
		if len(l) > 0 && !strings.ContainsRune(" \t\r\n#-]}", rune(l[0])) {
			candidates = append(candidates, s)
			break
		}
	}
	for _, s := range candidates {
		if s > 1 && yamlProblem(raw[ends[s-1]:ends[k]]) == problem && yamlProblem(raw[ends[s-1]:ends[k-1]]) != problem {
			return ends[s-1]
		}
	}
	return 0
}

// plainProblem is yaml.v3's message problem about line text said plainly,
// with what usually causes it, from the character at col (from 1; 0 when
// unknown); unclosed: the flow collection opened at col is never closed.
// A message it does not know is returned as it is.
func plainProblem(problem, text string, col int, unclosed bool) string {
	c := rune(-1)
	if r := []rune(text); col >= 1 && col <= len(r) {
		c = r[col-1]
	}
	switch {
	case strings.HasPrefix(problem, "found a tab character"),
		problem == "found character that cannot start any token" && c == '\t':
		return tabIndent
	case problem == "found character that cannot start any token" && c > ' ':
		return fmt.Sprintf("a value cannot start with %q (quote the value)", c)
	case problem == "mapping values are not allowed in this context":
		return `unexpected ":": a key indented too far (line it up with the keys above), or a value holding ": " (quote it)`
	case problem == "did not find expected '-' indicator":
		return `the indentation does not match the list above (line it up with the keys of the item, or start a new item with "- ")`
	case problem == "did not find expected key" && (c == '}' || c == ']'):
		return fmt.Sprintf("unexpected %q: it closes nothing", c)
	case problem == "did not find expected key" && c == '-':
		return `a list item ("- ") where a key is expected (indent the list under its key)`
	case problem == "did not find expected key":
		return "the indentation does not match the keys above (line it up with them)"
	case problem == "did not find expected ',' or '}'" && unclosed:
		return "this { is never closed (a } is missing)"
	case problem == "did not find expected ',' or '}'" && c > 0:
		return `expected "," or "}" here (a comma missing, or a value holding one of {}[], that needs quotes)`
	case problem == "did not find expected ',' or ']'" && unclosed:
		return "this [ is never closed (a ] is missing)"
	case problem == "did not find expected ',' or ']'" && c > 0:
		return `expected "," or "]" here (a comma missing, or a value holding one of {}[], that needs quotes)`
	case problem == "found unexpected end of stream" && (c == '"' || c == '\''):
		return fmt.Sprintf("this quoted string is never closed (a closing %c is missing)", c)
	case problem == "control characters are not allowed" && c >= 0:
		return fmt.Sprintf("control character U+%04X is not allowed (in a double-quoted string, write it as an escape)", c)
	case problem == "control characters are not allowed":
		return "a control character is not allowed (in a double-quoted string, write it as an escape)"
	case strings.HasPrefix(problem, "unknown anchor '"):
		name := strings.TrimSuffix(strings.TrimPrefix(problem, "unknown anchor '"), "' referenced")
		return fmt.Sprintf("*%s refers to no anchor: define &%s before it", name, name)
	case problem == "found unknown escape character":
		return `unknown escape in a double-quoted string (write \\ for a backslash, or use single quotes)`
	case problem == "block sequence entries are not allowed in this context":
		return `a list item ("- ") is not allowed here (start the list on a line of its own, under its key)`
	}
	return problem
}

// firstFailingCut returns the first line k (from 1), at or after start,
// such that raw cut after line k fails to parse with the error problem; 0
// when raw itself does not (the error came from another reading, such as a
// later document). ends[k] is the length of lines 1..k. The cuts before
// the line at fault parse or fail otherwise and those after it fail with
// problem, so bisecting finds it with about log2(len(lines)) parses.
func firstFailingCut(raw []byte, ends []int, start int, problem string) int {
	fails := func(k int) bool { return yamlProblem(raw[:ends[k]]) == problem }
	lo, hi := start, len(ends)-1
	if lo > hi || !fails(hi) {
		return 0
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// secondDocument returns the line (from 1) at which content starts at or
// after line from, skipping blank lines, comments and document end markers
// ("..."), and the line of the last marker before it; 0, 0 when there is
// no such content or no marker before it.
func secondDocument(lines [][]byte, from int) (at, end int) {
	isEnd := func(t string) bool {
		rest, ok := strings.CutPrefix(t, "...")
		return ok && (rest == "" || strings.HasPrefix(strings.TrimLeft(rest, " \t"), "#") && rest[0] != '#')
	}
	for k := max(from, 1); k <= len(lines); k++ {
		t := strings.TrimRight(string(lines[k-1]), " \t\r\n")
		if trimmed := strings.TrimSpace(t); trimmed == "" || strings.HasPrefix(trimmed, "#") || isEnd(t) {
			continue
		}
		for j := k - 1; j >= 1; j-- {
			if isEnd(strings.TrimRight(string(lines[j-1]), " \t\r\n")) {
				return k, j
			}
		}
		return 0, 0
	}
	return 0, 0
}

// quoteLine is line l of a config file quoted for an error message (see
// shownLine), cut at 80 characters.
func quoteLine(l []byte) string {
	text := shownLine(strings.TrimRight(string(l), "\r\n"))
	if r := []rune(text); len(r) > 80 {
		text = string(r[:77]) + "..."
	}
	return strconv.Quote(text)
}

// shownLine is the line text of a config file as an error may show it. It
// must not show a secret written in the file: when any part of it looks
// like a secret's key (also inside a flow mapping such as `headers:
// {Authorization: …`), only what precedes the first ":" is shown, then
// " …"; the password of a URL shows as xxxxx.
func shownLine(text string) string {
	if i := strings.Index(text, ":"); i > 0 && (secretKey.MatchString(text) ||
		strings.Contains(strings.ToLower(text), "cookie")) {
		text = text[:i+1] + " …"
	}
	return urlPassword.ReplaceAllString(text, "${1}xxxxx@")
}

// excerpt shows line n of a config file, text, under an error for a
// terminal, with a caret under column col (from 1, in characters; no
// caret for 0), as compilers and linters do:
//
//	8 |      timeout: 2s
//	  |      ^
//
// The line is shown as shownLine shows it: when what precedes the column is
// hidden, the caret is under the "…" that hides it. A control character
// shows as U+FFFD, and a line longer than 100 characters is cut around
// the column.
func excerpt(n int, text string, col int) string {
	orig := []rune(text)
	shown := []rune(shownLine(text))
	caret := col
	if col > 0 && (col > len(shown) || string(shown[:col-1]) != string(orig[:min(col-1, len(orig))])) {
		caret = 0
		if i := slices.Index(shown, '…'); i >= 0 {
			caret = i + 1
		}
	}
	for i, r := range shown {
		if r < ' ' && r != '\t' || r == 0x7f {
			shown[i] = utf8.RuneError
		}
	}
	const width = 100
	if len(shown) > width {
		from := 0
		if caret > width-20 {
			from = caret - width/2
		}
		to := min(from+width-6, len(shown))
		cut := string(shown[from:to])
		if from > 0 {
			cut = "..." + cut
			caret += 3 - from
		}
		if to < len(shown) {
			cut += "..."
		}
		shown = []rune(cut)
	}
	gutter := strconv.Itoa(n)
	var b strings.Builder
	fmt.Fprintf(&b, "  %s | %s", gutter, strings.TrimRight(string(shown), " \t"))
	if caret > 0 {
		fmt.Fprintf(&b, "\n  %s | ", strings.Repeat(" ", len(gutter)))
		for _, r := range shown[:min(caret-1, len(shown))] {
			if r == '\t' {
				b.WriteByte('\t')
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('^')
	}
	return b.String()
}

// maxQuoteLines bounds how far back openQuoteLine looks for the line a
// double-quoted string opened on.
const maxQuoteLines = 1000

// openQuoteLine returns the line (from 1) on which a double-quoted string
// opened that YAML read on up to line at (from 1), where the error is: a
// line before at whose text ends inside a double-quoted scalar, with no
// '"' on the lines between and one on line at (the one that closed it).
// 0 when there is none. (A string left open to the end of the file is
// found by locateYAMLError's search itself: every cut after the line it
// opened on fails as the whole file does.)
func openQuoteLine(lines [][]byte, at int) int {
	if at < 2 || at > len(lines) || !bytes.Contains(lines[at-1], []byte(`"`)) {
		return 0
	}
	for k := at - 1; k >= 1 && k >= at-maxQuoteLines; k-- {
		if endsInDoubleQuote(string(lines[k-1])) {
			return k
		}
		if bytes.Contains(lines[k-1], []byte(`"`)) {
			return 0
		}
	}
	return 0
}

// endsInDoubleQuote reports whether the YAML line s ends inside a
// double-quoted scalar that opened on it.
func endsInDoubleQuote(s string) bool { return flowScan(s, nil).dquote >= 0 }

// openDoubleQuote is the byte offset in the YAML line s of the '"' of a
// double-quoted scalar that opened on it and is still open at its end.
func openDoubleQuote(s string) int { return max(flowScan(s, nil).dquote, 0) }

// lineScan is what a YAML line (or the start of one) leaves open.
type lineScan struct {
	stack  []byte // the flow collections open at its end ('[', '{'), outermost first, those of earlier lines too
	open   []int  // byte offsets of those opened on it, outermost first
	dquote int    // byte offset of the '"' of a double-quoted scalar left open; -1 for none
}

// closers is what closes the flow collections left open, innermost first.
func (l lineScan) closers() []byte {
	out := make([]byte, len(l.stack))
	for i, c := range l.stack {
		out[len(out)-1-i] = map[byte]byte{'[': ']', '{': '}'}[c]
	}
	return out
}

// flowScan scans the YAML line s for the flow collections and the
// double-quoted scalar it leaves open. A quote opens a scalar only where a
// node starts (at the line's start, after ": ", "- ", "? ", and in flow
// collections after "[", "{" or ","): inside a plain scalar (say "hi) it
// is a character like any other. Inside a flow collection a bracket is
// always one (a plain scalar ends before it); outside, only where a node
// starts. A '#' after a space outside quotes starts a comment. A closing
// bracket with no opening one on s (it closes a collection opened on an
// earlier line and not in stack) is skipped. stack is what the lines
// before s left open (nil from a line in block context).
func flowScan(s string, stack []byte) lineScan {
	s = strings.TrimRight(s, "\r\n")
	out := lineScan{dquote: -1, stack: slices.Clone(stack)}
	start := true // at a place where a node may start
	spaceAfter := func(i int) bool { return i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t' }
scan:
	for i := 0; i < len(s); i++ {
		c := s[i]
		depth := len(out.stack)
		switch {
		case c == ' ' || c == '\t':
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			break scan
		case start && c == '"':
			q := i
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			if i >= len(s) {
				out.dquote = q
				break scan
			}
			start = false
		case start && c == '\'':
			for i++; i < len(s); i++ {
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						i++
						continue
					}
					break
				}
			}
			if i >= len(s) {
				break scan // an open single-quoted string: YAML names its line
			}
			start = false
		case (start || depth > 0) && (c == '[' || c == '{'):
			out.stack = append(out.stack, c)
			out.open = append(out.open, i)
			start = true
		case depth > 0 && (c == ']' || c == '}'):
			out.stack = out.stack[:depth-1]
			if len(out.open) > 0 { // the innermost was opened on s
				out.open = out.open[:len(out.open)-1]
			}
			start = false
		case depth > 0 && c == ',':
			start = true
		case c == ':' && spaceAfter(i):
			start = true
		case start && (c == '-' || c == '?') && spaceAfter(i):
		default:
			start = false // a plain scalar
		}
	}
	return out
}
