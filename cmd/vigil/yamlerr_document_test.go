package main

import (
	"strings"
	"testing"
)

// TestYAMLBareDocumentAfterEndMarker: content after a document end marker
// ("...") without a "---" is a second document that yaml.v3 refuses with
// a generic error at the line after the marker (often a blank one): the
// error says it is a second document, names its first line and the
// marker's, and quotes it.
func TestYAMLBareDocumentAfterEndMarker(t *testing.T) {
	const first = "targets: [{name: a, url: http://127.0.0.1:1}]\nchecks: [{name: h, targets: [a], http: {path: /healthz}}]\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"blank line between", first + "...\n\nproxy: {listen: 127.0.0.1:1}\n",
			`line 5: a second YAML document (after the "..." on line 3): vigil reads one document per file (merge them into one) ("proxy: {listen: 127.0.0.1:1}")`},
		{"comment on the marker and after it", first + "... # end\n# more\nproxy: {listen: 127.0.0.1:1}\n",
			`line 5: a second YAML document (after the "..." on line 3): vigil reads one document per file (merge them into one) ("proxy: {listen: 127.0.0.1:1}")`},
		{"right after the marker", first + "...\nproxy: {listen: 127.0.0.1:1}\n",
			`line 4: a second YAML document (after the "..." on line 3): vigil reads one document per file (merge them into one) ("proxy: {listen: 127.0.0.1:1}")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, c.yaml)
			for _, cmd := range []string{"validate", "check"} {
				out, code := runCLI(t, cmd, "-c", cfg)
				want := cfg + ": not valid YAML: " + c.want
				if code != 2 || !strings.Contains(out, want) {
					t.Errorf("vigil %s: exit %d, output:\n%s\nwant exit 2 and %q", cmd, code, out, want)
				}
			}
		})
	}
	// A marker with nothing after it but comments is fine.
	cfg := writeConfig(t, first+"...\n# the end\n")
	if out, code := runCLI(t, "validate", "-c", cfg); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("trailing marker and comment: exit %d, output:\n%s\nwant exit 0 and ok", code, out)
	}
}
