package main

import (
	"fmt"
	"strings"
	"testing"
)

// A value from ${…} that the config upper-cases before judging it (an
// http.method) is not shown in the error, neither as written nor as
// upper-cased.
func TestBadMethodFromEnvRedacted(t *testing.T) {
	const secret = "GE Tsupersecret42"
	t.Setenv("VIGIL_TEST_RV_M", secret)
	cfg := writeConfig(t, `
checks:
  - name: c
    url: http://127.0.0.1:18081/ok
    http: {method: "${VIGIL_TEST_RV_M}"}
`)
	out, code := runCLI(t, "validate", "-c", cfg)
	if code != 2 {
		t.Fatalf("exit code %d, want 2\n%s", code, out)
	}
	if want := fmt.Sprintf(`%s:5:12: checks[0].http.method: "***" is not an HTTP method`, cfg); !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	if strings.Contains(strings.ToLower(out), "supersecret42") {
		t.Errorf("output shows the secret:\n%s", out)
	}
}

// The config's redactor hides a value trimmed, upper-cased and
// lower-cased as well as written.
func TestRedactorCaseForms(t *testing.T) {
	red := &redactor{}
	red.add("X", " Tok-Secret-77 ")
	for _, s := range []string{" Tok-Secret-77 ", "Tok-Secret-77", "TOK-SECRET-77", "tok-secret-77"} {
		if got := red.redact("value " + s + "."); strings.Contains(strings.ToLower(got), "secret-77") {
			t.Errorf("redact(%q) = %q", s, got)
		}
	}
}
