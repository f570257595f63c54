package main

import (
	"strings"
	"testing"
)

// TestYAMLErrorOnFirstLine: a syntax error on the first line (often a
// one-line `agent: {…}` section) names line 1 and quotes it, although
// yaml.v3 names no line there, or the line after the end of the file for
// a string left open. Errors yaml.v3 gives without a position (a control
// character, an unknown anchor) are placed too, and a string left open on
// the last line is reported there.
func TestYAMLErrorOnFirstLine(t *testing.T) {
	const rest = "targets: [{name: a, url: http://127.0.0.1:1}]\nchecks: [{name: h, targets: [a], http: {path: /healthz}}]\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"unquoted ${…:-…} in a flow mapping",
			"agent: {listen: 127.0.0.1:0, region: ${REGION:-local}}\n" + rest,
			`line 1: did not find expected ',' or '}' ("agent: {listen: 127.0.0.1:0, region: ${REGION:-local}}")`},
		{"closing brace too many",
			"agent: {a: 1}}\n" + rest,
			`line 1: did not find expected key ("agent: {a: 1}}")`},
		{"double-quoted string left open",
			"agent: {listen: \"127.0.0.1:0}\n" + rest,
			`line 1: found unexpected end of stream ("agent: {listen: \"127.0.0.1:0}")`},
		{"single-quoted string left open",
			"agent: {listen: '127.0.0.1:0}\n" + rest,
			`line 1: found unexpected end of stream ("agent: {listen: '127.0.0.1:0}")`},
		{"string left open on the last line, no final newline",
			rest + "status_page: {title: \"lab}",
			`line 3: found unexpected end of stream ("status_page: {title: \"lab}")`},
		{"control character",
			rest + "status_page: {title: \"a\x01b\"}\n",
			`line 3: control characters are not allowed ("status_page: {title: \"a\x01b\"}")`},
		{"unknown anchor",
			rest + "defaults: *base\n",
			`line 3: unknown anchor 'base' referenced ("defaults: *base")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, c.yaml)
			out, code := runCLI(t, "validate", "-c", cfg)
			want := cfg + ": not valid YAML: " + c.want
			if code != 2 || !strings.Contains(out, want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
			}
		})
	}
}
