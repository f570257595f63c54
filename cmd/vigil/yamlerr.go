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
	text := strings.TrimRight(string(lines[line-1]), "\r\n")
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
	return fmt.Sprintf("line %d: %s (%q)", line, problem, text)
}
