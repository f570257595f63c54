package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
	want := typo + `:4:84: checks[0].expect.json[1].path: "services.#(status==\"down\"": unclosed "(" at 10`
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
	got := checksByName(out)
	if c := got["correct"]; c.OK || c.Cause != "json" || len(c.Assertions) != 2 || c.Assertions[1].Got != `{"name":"db","status":"down"}` {
		t.Errorf("correct: %+v", c)
	}
	if c := got["jsonpath"]; !c.OK || len(c.Assertions) != 2 || c.Assertions[1].Got != "2" {
		t.Errorf("jsonpath $.a.b[1]: %+v", c)
	}
}

// validateErrors runs vigil validate on body and returns its output lines
// without the file name and line ("FILE:LINE: ", asserted by the tests of
// keyIndex), and the exit code.
func validateErrors(t *testing.T, body string) ([]string, int) {
	t.Helper()
	p := writeConfig(t, body)
	out, code := runCLI(t, "validate", "-c", p)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		lines = append(lines, errorText(p, l))
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

// An expire_after that ends a verdict before the next run can renew it
// left the pair unknown for ever; it is a config error naming both values.
func TestExpireAfterShorterThanInterval(t *testing.T) {
	wantValidate(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
defaults: {expire_after: 70s}
checks:
  - {name: j3, targets: [a], interval: 2s, expire_after: 1s}
  - {name: inherits, targets: [a], interval: 1m}
  - {name: nightly, targets: [a], cron: "0 2 * * *", timeout: 5s, expire_after: 12h}
  - {name: fine, targets: [a], interval: 2s, expire_after: 4s}
`,
		`checks[0].expire_after: 1s is shorter than interval 2s + jitter 200ms + timeout 1.6s = 3.8s: the verdict would expire before the next run renews it and the pair would stay unknown (set at least 3.8s, or omit it for 3 × interval)`,
		`checks[1].expire_after: 1m10s (inherited from defaults.expire_after) is shorter than interval 1m0s + jitter 6s + timeout 10s = 1m16s: the verdict would expire before the next run renews it and the pair would stay unknown (set at least 1m16s, or omit it for 3 × interval)`,
		`checks[2].expire_after: 12h0m0s is shorter than the longest gap between cron runs 24h0m0s + jitter 0s + timeout 5s = 24h0m5s: the verdict would expire before the next run renews it and the pair would stay unknown (set at least 24h0m5s, or omit it for 3 × the longest gap = 72h0m0s)`)
}

// checksRun returns the check names of vigil check --json output.
func checksRun(out string) []string {
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var j checkJSON
		if json.Unmarshal([]byte(line), &j) == nil && j.Check != "" {
			names = append(names, j.Check)
		}
	}
	return names
}

// --check is repeatable (it used to keep only the last one) and takes
// comma-separated names; --parallel below 1 is a usage error.
func TestCheckFlags(t *testing.T) {
	origin := servicesOrigin(t)
	cfg := writeConfig(t, fmt.Sprintf(`
targets: [{name: a, url: %q}]
checks:
  - {name: asset, targets: [a]}
  - {name: healthz, targets: [a]}
  - {name: other, targets: [a]}
  - {name: off, targets: [a], disabled: true}
`, origin))
	cases := []struct {
		args []string
		code int
		want string // the run's checks, or the error
	}{
		{[]string{"--check", "asset", "--check", "healthz"}, 0, "asset healthz"},
		{[]string{"--check", "healthz,asset"}, 0, "asset healthz"},
		{[]string{"--check", "off", "--check", "asset", "--check", "asset"}, 0, "asset off"},
		{nil, 0, "asset healthz other"},
		{[]string{"--check", "asset", "--check", "nope", "--check", "nix"}, 2, cfg + `: no checks to run: no checks named "nope", "nix" (the file's checks: asset, healthz, other, off)`},
		{[]string{"--parallel", "-3"}, 2, "--parallel: must be at least 1, got -3"},
		{[]string{"--parallel", "0"}, 2, "--parallel: must be at least 1, got 0"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out, code := runCLI(t, append([]string{"check", "--json", "-c", cfg}, c.args...)...)
			got := strings.TrimSpace(out)
			if code == 0 {
				got = strings.Join(checksRun(out), " ")
			}
			if code != c.code || got != c.want {
				t.Errorf("exit %d, %q; want exit %d, %q", code, got, c.code, c.want)
			}
		})
	}
}

// An explicit 0 used to mean "the default" (interval: 0s ran every 30s);
// where 0 makes no sense it is an error naming the key, and rise/fall
// errors name their own key.
func TestExplicitZeroIsAnError(t *testing.T) {
	wantValidate(t, `
agent: {concurrency: 0, browser: {max_concurrent: 0}}
defaults: {interval: 0s, rise: 0}
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - {name: zero, targets: [a], interval: 0s, timeout: 0s, expire_after: 0s}
  - {name: rf, targets: [a], interval: 10s, rise: 0, fall: -1, flap: {window: 0s}}
`,
		`agent.concurrency: 0: must be positive (omit the key for the default, 256)`,
		`agent.browser.max_concurrent: 0: must be positive (omit the key for the default, 2)`,
		`defaults.interval: 0: must be positive (omit the key for the default, 30s)`,
		`defaults.rise: 0: must be positive (omit the key for the default, 2)`,
		`checks[0].interval: 0: must be positive (omit the key for the default, defaults.interval)`,
		`checks[0].timeout: 0: must be positive (omit the key for the default, defaults.timeout, capped at 80% of the interval)`,
		`checks[0].expire_after: 0: must be positive (omit the key for the default, defaults.expire_after or 3 × interval)`,
		`checks[1].rise: 0: must be positive (omit the key for the default, defaults.rise)`,
		`checks[1].fall: must be positive, got -1`,
		`checks[1].flap.window: 0: must be positive (omit the key for the default, 10m)`)

	// The same for agent.triggers, a probe's body_limit / read_limit and a
	// script step's timeout.
	wantValidate(t, `
agent: {triggers: {for: 0s, min_requests: 0, min_gap: 0s, poll: 0s}}
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - {name: h, targets: [a], interval: 30s, http: {body_limit: 0B}}
  - {name: t, url: "tcp://127.0.0.1:9", interval: 30s, tcp: {read_limit: 0B}}
  - {name: s, targets: [a], interval: 30s, script: [{timeout: 0s, http: {path: /, body_limit: 0B}}]}
`,
		`agent.triggers.for: 0: must be positive (omit the key for the default, 60s)`,
		`agent.triggers.min_requests: 0: must be positive (omit the key for the default, 20)`,
		`agent.triggers.min_gap: 0: must be positive (omit the key for the default, 30s)`,
		`agent.triggers.poll: 0: must be positive (omit the key for the default, 5s)`,
		`checks[0].http.body_limit: 0: must be positive (omit the key for the default, 10MiB)`,
		`checks[1].tcp.read_limit: 0: must be positive (omit the key for the default, 64KiB)`,
		`checks[2].script[0].timeout: 0: must be positive (omit the key for the default, 10s, capped by what is left of the check's timeout)`,
		`checks[2].script[0].http.body_limit: 0: must be positive (omit the key for the default, 10MiB)`)

	// Omitted keys still take their defaults; flap.max_changes: 0 and
	// flap.extra_passes: 0 are kept (no damping, no extra passes).
	if lines, code := validateErrors(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
defaults: {flap: {max_changes: 0, extra_passes: 0}}
checks: [{name: ok, targets: [a]}]
`); code != 0 {
		t.Errorf("omitted keys: exit %d: %s", code, lines)
	}
	f, err := loadConfig(writeConfig(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
defaults: {flap: {max_changes: 0, extra_passes: 0}}
checks: [{name: ok, targets: [a]}, {name: own, targets: [a], flap: {extra_passes: 0}},
  {name: off, targets: [a], flap: {max_changes: 0, window: 0s}}]
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if c := f.Checks[0]; c.Interval != 30*time.Second || c.Rise != 2 || c.Flap.MaxChanges != 0 || c.Flap.ExtraPasses != 0 {
		t.Errorf("ok: interval %s rise %d flap %+v", c.Interval, c.Rise, *c.Flap)
	}
	if c := f.Checks[1]; c.Flap.MaxChanges != 4 || c.Flap.ExtraPasses != 0 {
		t.Errorf("own: flap %+v, want max_changes 4, extra_passes 0", *c.Flap)
	}
	if c := f.Checks[2]; c.Flap.MaxChanges != 0 {
		t.Errorf("off: flap %+v, want max_changes 0 (window: 0s is no error with damping off)", *c.Flap)
	}
}

// checksByName reads `vigil check --json` output (one JSON object per
// line) into the runs by check name; lines that are not JSON are skipped.
func checksByName(out string) map[string]checkJSON {
	got := map[string]checkJSON{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var j checkJSON
		if json.Unmarshal([]byte(line), &j) == nil {
			got[j.Check] = j
		}
	}
	return got
}
