package main

import (
	"strings"
	"testing"
)

// TestYAMLBareDocumentAfterEndMarker: content after a document end marker
// ("...") without a "---" is a second document that yaml.v3 refuses with
// a generic error at the line after the marker (often a blank one): the
// error says it is a second document, names its first line and the
// marker's, and shows it (vigil check, which prints errors on one line,
// quotes it).
func TestYAMLBareDocumentAfterEndMarker(t *testing.T) {
	const first = "targets: [{name: a, url: http://127.0.0.1:1}]\nchecks: [{name: h, targets: [a], http: {path: /healthz}}]\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"blank line between", first + "...\n\nproxy: {listen: 127.0.0.1:1}\n",
			"5:1: not valid YAML: a second YAML document (after the \"...\" on line 3): vigil reads one document per file (merge them into one)"},
		{"comment on the marker and after it", first + "... # end\n# more\nproxy: {listen: 127.0.0.1:1}\n",
			"5:1: not valid YAML: a second YAML document (after the \"...\" on line 3): vigil reads one document per file (merge them into one)"},
		{"right after the marker", first + "...\nproxy: {listen: 127.0.0.1:1}\n",
			"4:1: not valid YAML: a second YAML document (after the \"...\" on line 3): vigil reads one document per file (merge them into one)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, c.yaml)
			line, _, _ := strings.Cut(c.want, ":")
			for cmd, want := range map[string]string{
				"validate": cfg + ":" + c.want + "\n  " + line + " | proxy: {listen: 127.0.0.1:1}\n    | ^",
				"check":    cfg + ":" + c.want + ` ("proxy: {listen: 127.0.0.1:1}")`,
			} {
				out, code := runCLI(t, cmd, "-c", cfg)
				if code != 2 || strings.TrimRight(out, "\n") != want {
					t.Errorf("vigil %s: exit %d, output:\n%s\nwant exit 2 and:\n%s", cmd, code, out, want)
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
