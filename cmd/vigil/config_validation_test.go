package main

import (
	"strings"
	"testing"
)

// validateOut runs `vigil validate` on body and returns its output and exit
// code.
func validateOut(t *testing.T, body string) (string, int) {
	t.Helper()
	return runCLI(t, "validate", "-c", writeConfig(t, body))
}

// TestScriptCheckExpectRejected: an expect on a script check (not on a
// step) asserts nothing, so the check would pass whatever its steps got;
// validate rejects it, naming the key and where it belongs.
func TestScriptCheckExpectRejected(t *testing.T) {
	const base = "targets: [{name: a, url: \"http://127.0.0.1:9\"}]\nchecks:\n  - name: c\n    targets: [a]\n"
	out, code := validateOut(t, base+"    expect: {status: 500}\n    script: [{http: {path: /healthz}}]\n")
	want := "checks[0].expect: script checks do not use it; put it on a step (script[0].expect)"
	if code != 2 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
	}
	out, code = validateOut(t, base+"    script: [{http: {path: /healthz}, expect: {status: 500}}]\n")
	if code != 0 {
		t.Fatalf("expect on the step: exit %d, output:\n%s", code, out)
	}
}
