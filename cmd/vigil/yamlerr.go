package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

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

// locateYAMLError rewrites a yaml.v3 syntax error so it names the line at
// fault and quotes it. For errors inside a block (a key indented one space
// too far, a list item missing its "-") yaml.v3 names the line where the
// enclosing block starts, which can be dozens of lines earlier; for an
// error in a construct that opened on the first line it names no line, or
// the end of the file. The line at fault is the first one at which the
// file, cut after that line, fails with the same message: every shorter
// cut parses, or fails for another reason (an unterminated quote or
// bracket that a later line closes). It is found by bisecting on the cut,
// from the reported line (from the first line when yaml.v3 named none, or
// the last line or beyond), so a large file costs a few parses, not one
// per line.
func locateYAMLError(raw []byte, msg string) string {
	m := yamlErr.FindStringSubmatch(msg)
	if m == nil {
		return msg
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
		return msg
	}
	// Content after a document end marker ("...") with no "---" before
	// it: yaml.v3 names the line after the marker, often a blank one.
	if problem == noDocStart && reported > 0 {
		if k, end := secondDocument(lines, reported); k > 0 {
			return fmt.Sprintf(`line %d: a second YAML document (after the "..." on line %d): vigil reads one document per file (merge them into one) (%s)`, k, end, quoteLine(lines[k-1]))
		}
	}
	start := reported
	if start < 1 || start >= n {
		start = 1
	}
	line := firstFailingCut(raw, lines, start, problem)
	if line == 0 {
		if reported < 1 {
			return msg
		}
		line = reported
	}
	line = min(line, n) // yaml.v3 can name the line after the last
	// A double-quoted string left open runs on to the next '"', maybe many
	// lines and sections later, where YAML then fails on what follows it:
	// name the line the string opened on instead.
	if open := openQuoteLine(lines, line); open > 0 {
		problem = fmt.Sprintf(`a double-quoted string opened here runs on to line %d (is its closing " missing?), where YAML fails: %s`, line, problem)
		line = open
	}
	text := strings.TrimRight(string(lines[line-1]), "\r\n")
	hint := ""
	if indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]; strings.Contains(indent, "\t") {
		hint = ": tabs cannot indent YAML; use spaces"
	}
	return fmt.Sprintf("line %d: %s (%s)%s", line, problem, quoteLine(lines[line-1]), hint)
}

// firstFailingCut returns the first line k (from 1), at or after start,
// such that raw cut after line k fails to parse with the error problem; 0
// when raw itself does not (the error came from another reading, such as a
// later document). The cuts before the line at fault parse or fail
// otherwise and those after it fail with problem, so bisecting finds it
// with about log2(len(lines)) parses.
func firstFailingCut(raw []byte, lines [][]byte, start int, problem string) int {
	ends := make([]int, len(lines)+1) // ends[k]: the length of lines 1..k
	for i, l := range lines {
		ends[i+1] = ends[i] + len(l)
	}
	fails := func(k int) bool {
		var tree any
		err := yaml.Unmarshal(raw[:ends[k]], &tree)
		if err == nil {
			return false
		}
		pm := yamlErr.FindStringSubmatch(err.Error())
		return pm != nil && pm[2] == problem
	}
	lo, hi := start, len(lines)
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

// quoteLine is line l of a config file quoted for an error message. It
// must not show a secret written in the file: when any part of it looks
// like a secret's key (also inside a flow mapping such as `headers:
// {Authorization: …`), only what precedes the first ":" is shown.
func quoteLine(l []byte) string {
	text := strings.TrimRight(string(l), "\r\n")
	if i := strings.Index(text, ":"); i > 0 && (secretKey.MatchString(text) ||
		strings.Contains(strings.ToLower(text), "cookie")) {
		text = text[:i+1] + " …"
	}
	text = urlPassword.ReplaceAllString(text, "${1}xxxxx@")
	if r := []rune(text); len(r) > 80 {
		text = string(r[:77]) + "..."
	}
	return strconv.Quote(text)
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
// double-quoted scalar that opened on it. A quote opens a scalar only where
// a node starts (at the line's start, after ": ", "- ", "? ", and in flow
// collections after "[", "{" or ","): inside a plain scalar (say "hi) it
// is a character like any other. A '#' after a space outside quotes starts
// a comment.
func endsInDoubleQuote(s string) bool {
	s = strings.TrimRight(s, "\r\n")
	start := true // at a place where a node may start
	depth := 0    // flow collections open on this line
	spaceAfter := func(i int) bool { return i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t' }
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return false
		case start && c == '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			if i >= len(s) {
				return true
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
				return false // an open single-quoted string: YAML names its line
			}
			start = false
		case start && (c == '[' || c == '{'):
			depth++
		case depth > 0 && (c == ']' || c == '}'):
			depth--
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
	return false
}
