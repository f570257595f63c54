package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUndecodedValueHidesNoOtherError: a value that does not decode (a
// string where a mapping belongs, a duration without a unit) no longer
// hides the other errors of its check: one `vigil validate` lists the
// path without "/" and the bad regex beside it. Errors that follow from the
// missing value (the timeout compared with an interval that did not
// decode, the check that holds it) are still left out.
func TestUndecodedValueHidesNoOtherError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vigil.yaml")
	if err := os.WriteFile(path, []byte(`targets: [{name: o, url: "http://127.0.0.1:1"}]
checks:
  - name: c1
    targets: [o]
    http: {path: health}
    expect: {body: hello}
  - name: c2
    targets: [o]
    interval: 1m30
    timeout: 45s
    http: {path: /}
    expect: {body: {regex: ["(unclosed"]}}
  - name: c3
    url: [1]
    fall: 0
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, "validate", path)
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, out)
	}
	for _, want := range []string{
		`checks[0].expect.body: want a mapping`,
		`checks[0].http.path: "health": must start with "/"`,
		`checks[1].interval: "1m30": not a duration`,
		`checks[1].expect.body.regex[0]: bad regex`,
		`checks[2].url: want a string, got a list`,
		`checks[2].fall: 0: must be positive`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, not := range []string{"checks[1].timeout", "checks[2]: "} {
		if strings.Contains(out, not) {
			t.Errorf("an error that follows from a value that did not decode (%q):\n%s", not, out)
		}
	}
}
