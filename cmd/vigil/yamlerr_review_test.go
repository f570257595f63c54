package main

import (
	"strings"
	"testing"
)

// TestYAMLUnclosedDoubleQuote: a double-quoted string left open is
// reported at the line it opened on, not where YAML fails lines (and
// sections) later after the next '"' closed it. Quotes inside plain
// scalars, closed strings and comments do not count.
func TestYAMLUnclosedDoubleQuote(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unclosed title, next quote in the proxy section",
			"targets: [{name: web1, url: http://127.0.0.1:1}]\nchecks: [{name: a, targets: [web1]}]\nstatus_page:\n  title: \"lab\n  refresh: 5s\nproxy:\n  listen: 127.0.0.1:0\n  pools:\n    - name: web\n      hosts: [\"*\"]\n      origins: [{target: web1}]\n",
			`4:10: not valid YAML: a double-quoted string opened here runs on to line 10 (is its closing " missing?), where YAML fails: did not find expected alphabetic or numeric character
  4 |   title: "lab
    |          ^`},
		{"unclosed in a flow sequence",
			"targets: [{name: web1, url: http://127.0.0.1:1}]\nchecks:\n  - name: a\n    targets: [web1]\n    expect: {body: {contains: [\"ok, \"fine\"]}}\n    interval: 5s\n",
			`5:38: not valid YAML: expected "," or "]" here (a comma missing, or a value holding one of {}[], that needs quotes)
  5 |     expect: {body: {contains: ["ok, "fine"]}}
    |                                      ^`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, c.yaml)
			out, code := runCLI(t, "validate", "-c", cfg)
			if want := cfg + ":" + c.want; code != 2 || strings.TrimRight(out, "\n") != want {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and:\n%s", code, out, want)
			}
		})
	}
	for _, c := range []struct {
		line string
		open bool
	}{
		{`  title: "lab`, true},
		{`  - "abc`, true},
		{`  x: {a: "b", c: "d`, true},
		{`  title: "lab"`, false},
		{`  title: say "hi`, false},
		{`  title: "a \" b`, true},
		{`  title: "a \\" # "`, false},
		{`  title: lab # "note`, false},
		{`  title: 'it''s "x`, false},
		{`  title: it's "x`, false},
	} {
		if got := endsInDoubleQuote(c.line); got != c.open {
			t.Errorf("endsInDoubleQuote(%q) = %v, want %v", c.line, got, c.open)
		}
	}
}

// TestYAMLTabIndentHint: a line indented with a tab says so, whichever
// words the parser has for it.
func TestYAMLTabIndentHint(t *testing.T) {
	cfg := writeConfig(t, "targets: [{name: web1, url: http://127.0.0.1:1}]\nchecks:\n  - name: home\n    targets: [web1]\n\tinterval: 5s\n")
	out, code := runCLI(t, "validate", "-c", cfg)
	want := cfg + ":5:1: not valid YAML: a tab indents this line: YAML indents with spaces only\n  5 | \tinterval: 5s\n    | ^"
	if code != 2 || strings.TrimRight(out, "\n") != want {
		t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
	}
}
