package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// servicesOrigin serves a JSON document listing one service down.
func servicesOrigin(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"services":[{"name":"db","status":"down"},{"name":"web","status":"up"}],"a":{"b":[1,2,3]}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A JSON path with a missing ")" used to validate and, with exists: false,
// turn a failing check into a pass. validate and check now reject the file
// (exit 2) and name the key, the path and the offset.
func TestJSONPathTypoIsAConfigError(t *testing.T) {
	origin := servicesOrigin(t)
	typo := writeConfig(t, fmt.Sprintf(`
targets: [{name: a, url: %q}]
checks:
  - {name: typo, targets: [a], http: {path: /h.json}, expect: {json: [{path: ok}, {path: 'services.#(status=="down"', exists: false}]}}
`, origin))
	want := typo + `: checks[0].expect.json[1].path: "services.#(status==\"down\"": unclosed "(" at 10`
	for _, cmd := range []string{"validate", "check"} {
		out, code := runCLI(t, cmd, "-c", typo)
		if code != 2 || strings.TrimSpace(out) != want {
			t.Errorf("%s: exit %d, output:\n%s\nwant exit 2 and:\n%s", cmd, code, out, want)
		}
	}

	// The correct path still fails the check, and the JSONPath form
	// $.a.b[1] selects the second element instead of "(missing)".
	good := writeConfig(t, fmt.Sprintf(`
targets: [{name: a, url: %q}]
checks:
  - {name: correct, targets: [a], http: {path: /h.json}, expect: {json: [{path: 'services.#(status=="down")', exists: false}]}}
  - {name: jsonpath, targets: [a], http: {path: /h.json}, expect: {json: [{path: '$.a.b[1]', equals: 2}]}}
`, origin))
	out, code := runCLI(t, "check", "--json", "-c", good)
	if code != 1 {
		t.Errorf("check: exit %d, want 1 (correct fails):\n%s", code, out)
	}
	got := map[string]checkJSON{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var j checkJSON
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			continue
		}
		got[j.Check] = j
	}
	if c := got["correct"]; c.OK || c.Cause != "json" || len(c.Assertions) != 2 || c.Assertions[1].Got != `{"name":"db","status":"down"}` {
		t.Errorf("correct: %+v", c)
	}
	if c := got["jsonpath"]; !c.OK || len(c.Assertions) != 2 || c.Assertions[1].Got != "2" {
		t.Errorf("jsonpath $.a.b[1]: %+v", c)
	}
}

// validateErrors runs vigil validate on body and returns its output lines
// without the file name, and the exit code.
func validateErrors(t *testing.T, body string) ([]string, int) {
	t.Helper()
	p := writeConfig(t, body)
	out, code := runCLI(t, "validate", "-c", p)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		lines = append(lines, strings.TrimPrefix(l, p+": "))
	}
	return lines, code
}

// wantValidate asserts that validate exits 2 with exactly the lines want.
func wantValidate(t *testing.T, body string, want ...string) {
	t.Helper()
	got, code := validateErrors(t, body)
	if code != 2 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("validate: exit %d\n got: %s\nwant: %s", code, strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

// cert_min_days on a plain http:// URL used to validate and then fail
// every run with "no TLS certificate".
func TestCertMinDaysOnPlainHTTP(t *testing.T) {
	wantValidate(t, `
targets: [{name: plain, url: "http://127.0.0.1:9202"}, {name: tls, url: "https://127.0.0.1:9203"}]
checks:
  - {name: hz, targets: [tls, plain], expect: {cert_min_days: 10}}
  - {name: direct, url: "http://127.0.0.1:9204/x", expect: {cert_min_days: 10}}
  - {name: ok, targets: [tls], expect: {cert_min_days: 10}}
`,
		`checks[0].expect.cert_min_days: check "hz", target "plain" (url "http://127.0.0.1:9202"): plain http:// has no TLS certificate to check (use an https:// URL or drop the key)`,
		`checks[1].expect.cert_min_days: check "direct": url "http://127.0.0.1:9204/x": plain http:// has no TLS certificate to check (use an https:// URL or drop the key)`)
}
