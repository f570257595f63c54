package main

import (
	"strings"
	"testing"
)

// TestYAMLSyntaxErrorNamesTheLineAtFault: a YAML syntax error starts, as
// an error about a key does, with the file, the line at fault (not the
// line where the enclosing block starts, yaml.v3's own report) and the
// column, says plainly what is wrong, and vigil validate shows the line
// with a caret under the column. A line holding a secret shows only what
// precedes its first ":" (the caret under the "…" that hides the rest),
// and a URL's password as xxxxx.
func TestYAMLSyntaxErrorNamesTheLineAtFault(t *testing.T) {
	head := "agent:\n  region: r1\nchecks:\n  - name: a\n    http:\n      url: http://127.0.0.1:1/\n"
	cases := []struct {
		name, yaml, want string
	}{
		{"key indented too far in a list item", head + "    interval: 10s\n     timeout: 2s\n  - name: b\n",
			`8:13: not valid YAML: unexpected ":": a key indented too far (line it up with the keys above), or a value holding ": " (quote it)
  8 |      timeout: 2s
    |             ^`},
		{"key indented too little in a list item", head + "    interval: 10s\n   timeout: 2s\n",
			`8:4: not valid YAML: the indentation does not match the list above (line it up with the keys of the item, or start a new item with "- ")
  8 |    timeout: 2s
    |    ^`},
		{"key outdented inside a nested map", "agent:\n  region: r1\n  labels:\n    a: b\n    c: d\n   e: f\n",
			`6:4: not valid YAML: the indentation does not match the keys above (line it up with them)
  6 |    e: f
    |    ^`},
		{"unterminated quote", head + "    interval: \"10s\n",
			`7:15: not valid YAML: this quoted string is never closed (a closing " is missing)
  7 |     interval: "10s
    |               ^`},
		{"unclosed flow mapping", head + "      headers: {a: b\n    interval: 10s\n",
			`7:16: not valid YAML: this { is never closed (a } is missing)
  7 |       headers: {a: b
    |                ^`},
		{"unclosed flow sequence", head + "      headers: {a: [b, c}\n",
			`7:25: not valid YAML: expected "," or "]" here (a comma missing, or a value holding one of {}[], that needs quotes)
  7 |       headers: {a: [b, c}
    |                         ^`},
		{"tab indentation", head + "\tinterval: 10s\n",
			"7:1: not valid YAML: a tab indents this line: YAML indents with spaces only\n  7 | \tinterval: 10s\n    | ^"},
		{"tab after spaces, caret aligned with tabs", head + "    \t interval: 10s\n",
			"7:5: not valid YAML: a tab indents this line: YAML indents with spaces only\n  7 |     \t interval: 10s\n    |     ^"},
		{"value holding a mapping value", head + "    interval: a: b\n",
			`7:16: not valid YAML: unexpected ":": a key indented too far (line it up with the keys above), or a value holding ": " (quote it)
  7 |     interval: a: b
    |                ^`},
		{"character that cannot start a value", head + "    interval: @5s\n",
			`7:15: not valid YAML: a value cannot start with '@' (quote the value)
  7 |     interval: @5s
    |               ^`},
		{"secret on the line", "agent:\n  region: r1\n  admin_token: \"hunter2-s3cret\n",
			`3:16: not valid YAML: this quoted string is never closed (a closing " is missing)
  3 |   admin_token: …
    |                ^`},
		{"secret inside a flow mapping on the line", head + "      headers: {Authorization: \"Bearer hunter2-s3cret\"\n",
			`7:16: not valid YAML: this { is never closed (a } is missing)
  7 |       headers: …
    |                ^`},
		{"password in a URL on the line", "targets:\n  - {name: a, url: \"https://vigil:hunter2-s3cret@127.0.0.1:1/\n",
			`2:20: not valid YAML: this quoted string is never closed (a closing " is missing)
  2 |   - {name: a, url: "https://vigil:xxxxx@127.0.0.1:1/
    |                    ^`},
		{"multi-line flow value before the fault", head + "      headers: {a: b,\n        c: d}\n    interval: 10s\n   timeout: 2s\n",
			`10:4: not valid YAML: the indentation does not match the list above (line it up with the keys of the item, or start a new item with "- ")
  10 |    timeout: 2s
     |    ^`},
		{"flow mapping over two lines, comma missing on the second", head + "      headers: {a: b,\n        c: d e: f}\n",
			`8:15: not valid YAML: expected "," or "}" here (a comma missing, or a value holding one of {}[], that needs quotes)
  8 |         c: d e: f}
    |               ^`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, c.yaml)
			out, code := runCLI(t, "validate", "-c", cfg)
			if want := cfg + ":" + c.want; code != 2 || strings.TrimRight(out, "\n") != want {
				t.Errorf("exit %d, output:\n%s\nwant exit 2 and:\n%s", code, out, want)
			}
			if strings.Contains(out, "hunter2") {
				t.Errorf("a secret is shown:\n%s", out)
			}
		})
	}
}

// TestYAMLSyntaxErrorOneLine: where an error must hold on one line (vigil
// check and run, a rejected reload on /healthz), a syntax error quotes its
// line instead of showing it under the message.
func TestYAMLSyntaxErrorOneLine(t *testing.T) {
	cfg := writeConfig(t, "agent:\n  region: r1\n  labels: {a: b\n")
	_, err := loadConfig(cfg, noEnv)
	want := cfg + `:3:11: not valid YAML: this { is never closed (a } is missing) ("  labels: {a: b")`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}
