package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlLineErr matches yaml.v3's syntax errors: "yaml: line N: message".
var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// urlPassword matches the password of a URL's userinfo.
var urlPassword = regexp.MustCompile(`(://[^/@\s:]*:)[^@\s/]*@`)

// maxLocateLines bounds the work locateYAMLError does (it parses the file up
// to once per line after the reported one).
const maxLocateLines = 4000

// locateYAMLError rewrites a yaml.v3 syntax error so it names the line at
// fault and quotes it. For errors inside a block (a key indented one space
// too far, a list item missing its "-") yaml.v3 names the line where the
// enclosing block starts, which can be dozens of lines earlier. The line at
// fault is the first one at which the file, cut after that line, fails with
// the same message: every shorter cut parses, or fails for another reason
// (an unterminated quote or bracket that a later line closes).
func locateYAMLError(raw []byte, msg string) string {
	m := yamlLineErr.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	reported, _ := strconv.Atoi(m[1])
	problem := m[2]
	lines := bytes.SplitAfter(raw, []byte("\n"))
	if reported < 1 || reported > len(lines) || len(lines) > maxLocateLines {
		return msg
	}
	line := reported
	end := 0
	for i := 0; i < reported-1; i++ {
		end += len(lines[i])
	}
	for k := reported; k <= len(lines); k++ {
		end += len(lines[k-1])
		var tree any
		err := yaml.Unmarshal(raw[:end], &tree)
		if err == nil {
			continue
		}
		if pm := yamlLineErr.FindStringSubmatch(err.Error()); pm != nil && pm[2] == problem {
			line = k
			break
		}
	}
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
	// The quoted line must not show a secret written in the file: when any
	// part of it looks like a secret's key (also inside a flow mapping such
	// as `headers: {Authorization: …`), only what precedes the first ":"
	// is shown.
	if i := strings.Index(text, ":"); i > 0 && (secretKey.MatchString(text) ||
		strings.Contains(strings.ToLower(text), "cookie")) {
		text = text[:i+1] + " …"
	}
	text = urlPassword.ReplaceAllString(text, "${1}xxxxx@")
	if r := []rune(text); len(r) > 80 {
		text = string(r[:77]) + "..."
	}
	return fmt.Sprintf("line %d: %s (%q)%s", line, problem, text, hint)
}

// maxQuoteLines bounds how far back openQuoteLine looks for the line a
// double-quoted string opened on.
const maxQuoteLines = 1000

// openQuoteLine returns the line (from 1) on which a double-quoted string
// opened that YAML read on up to line at (from 1), where the error is: a
// line before at whose text ends inside a double-quoted scalar, with no
// '"' on the lines between and one on line at (the one that closed it).
// 0 when there is none.
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
