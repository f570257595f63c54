package main

import (
	"strings"
	"testing"
)

// TestValidateFileArgument: `vigil validate FILE` (as promtool and amtool
// take their files) reads FILE as -c FILE does; -c and an argument naming
// two files is an error naming both.
func TestValidateFileArgument(t *testing.T) {
	good := writeConfig(t, `
targets: [{name: a, url: "http://127.0.0.1:1"}]
checks: [{name: hz, targets: [a], http: {path: /healthz}}]
`)
	bad := writeConfig(t, `
targets: [{name: a, url: "http://127.0.0.1:1"}]
checks: [{name: hz, targets: [a], rise: two, http: {path: /healthz}}]
`)
	if out, code := runCLI(t, "validate", good); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("validate FILE: exit %d\n%s", code, out)
	}
	if out, code := runCLI(t, "validate", bad); code != 2 || !strings.Contains(out, "checks[0].rise") {
		t.Errorf("validate BAD: exit %d\n%s", code, out)
	}
	if out, code := runCLI(t, "validate", "-c", good, good); code != 0 {
		t.Errorf("validate -c FILE FILE: exit %d\n%s", code, out)
	}
	out, code := runCLI(t, "validate", "-c", good, bad)
	if code != 2 || !strings.Contains(out, "two config files: -c "+good+" and "+bad) {
		t.Errorf("validate -c A B: exit %d\n%s", code, out)
	}
}
