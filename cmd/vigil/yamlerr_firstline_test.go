package main

import (
	"strings"
	"testing"
)

// TestYAMLErrorOnFirstLine: a syntax error on the first line (often a
// one-line `agent: {…}` section) names line 1 and shows it, although
// yaml.v3 names no line there, or the line after the end of the file for
// a string left open. Errors yaml.v3 gives without a position (a control
// character, an unknown anchor) are placed too, and a string left open on
// the last line is reported there.
func TestYAMLErrorOnFirstLine(t *testing.T) {
	const rest = "targets: [{name: a, url: http://127.0.0.1:1}]\nchecks: [{name: h, targets: [a], http: {path: /healthz}}]\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"unquoted ${…:-…} in a flow mapping",
			"agent: {listen: 127.0.0.1:0, region: ${REGION:-local}}\n" + rest,
			`1:39: not valid YAML: expected "," or "}" here (a comma missing, or a value holding one of {}[], that needs quotes)
  1 | agent: {listen: 127.0.0.1:0, region: ${REGION:-local}}
    |                                       ^`},
		{"closing brace too many",
			"agent: {a: 1}}\n" + rest,
			`1:14: not valid YAML: unexpected '}': it closes nothing
  1 | agent: {a: 1}}
    |              ^`},
		{"double-quoted string left open",
			"agent: {listen: \"127.0.0.1:0}\n" + rest,
			`1:17: not valid YAML: this quoted string is never closed (a closing " is missing)
  1 | agent: {listen: "127.0.0.1:0}
    |                 ^`},
		{"single-quoted string left open",
			"agent: {listen: '127.0.0.1:0}\n" + rest,
			`1:17: not valid YAML: this quoted string is never closed (a closing ' is missing)
  1 | agent: {listen: '127.0.0.1:0}
    |                 ^`},
		{"string left open on the last line, no final newline",
			rest + "status_page: {title: \"lab}",
			`3:22: not valid YAML: this quoted string is never closed (a closing " is missing)
  3 | status_page: {title: "lab}
    |                      ^`},
		{"control character",
			rest + "status_page: {title: \"a\x01b\"}\n",
			"3:24: not valid YAML: control character U+0001 is not allowed (in a double-quoted string, write it as an escape)\n" +
				"  3 | status_page: {title: \"a\uFFFDb\"}\n" +
				"    |                        ^"},
		{"unknown anchor",
			rest + "defaults: *base\n",
			`3:11: not valid YAML: *base refers to no anchor: define &base before it
  3 | defaults: *base
    |           ^`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, c.yaml)
			out, code := runCLI(t, "validate", "-c", cfg)
			want := cfg + ":" + c.want
			if code != 2 || strings.TrimRight(out, "\n") != want {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
			}
		})
	}
}
