package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A YAML syntax error names the line at fault and quotes it, not the line
// where the enclosing block starts (yaml.v3's own report).
func TestYAMLSyntaxErrorNamesTheLineAtFault(t *testing.T) {
	head := "agent:\n  region: r1\nchecks:\n  - name: a\n    http:\n      url: http://127.0.0.1:1/\n"
	cases := []struct {
		name, yaml, want string
	}{
		{"key indented too far in a list item", head + "    interval: 10s\n     timeout: 2s\n  - name: b\n",
			`line 8: mapping values are not allowed in this context ("     timeout: 2s")`},
		{"key indented too little in a list item", head + "    interval: 10s\n   timeout: 2s\n",
			`line 8: did not find expected '-' indicator ("   timeout: 2s")`},
		{"key outdented inside a nested map", "agent:\n  region: r1\n  labels:\n    a: b\n    c: d\n   e: f\n",
			`line 6: did not find expected key ("   e: f")`},
		{"unterminated quote", head + "    interval: \"10s\n",
			`line 7: found unexpected end of stream ("    interval: \"10s")`},
		{"unclosed flow mapping", head + "      headers: {a: b\n    interval: 10s\n",
			`line 7: did not find expected ',' or '}' ("      headers: {a: b")`},
		{"tab indentation", head + "\tinterval: 10s\n",
			`line 7: found a tab character that violates indentation ("\tinterval: 10s")`},
		{"secret on the quoted line", "agent:\n  region: r1\n  admin_token: \"hunter2-s3cret\n",
			`line 3: found unexpected end of stream ("  admin_token: …")`},
		{"secret inside a flow mapping on the quoted line", head + "      headers: {Authorization: \"Bearer hunter2-s3cret\"\n",
			`line 7: did not find expected ',' or '}' ("      headers: …")`},
		{"password in a URL on the quoted line", "targets:\n  - {name: a, url: \"https://vigil:hunter2-s3cret@127.0.0.1:1/\n",
			`line 2: found unexpected end of stream ("  - {name: a, url: \"https://vigil:xxxxx@127.0.0.1:1/")`},
		{"multi-line flow value before the fault", head + "      headers: {a: b,\n        c: d}\n    interval: 10s\n   timeout: 2s\n",
			`line 10: did not find expected '-' indicator ("   timeout: 2s")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "vigil.yaml")
			if err := os.WriteFile(path, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadConfigWarn(path, func(string) (string, bool) { return "", false }, nil, func(string) {})
			if err == nil {
				t.Fatal("loaded a config with a syntax error")
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not valid YAML: "+c.want) {
				t.Errorf("error:\n%v\nwant it to name %s and contain\nnot valid YAML: %s", err, path, c.want)
			}
		})
	}
}
