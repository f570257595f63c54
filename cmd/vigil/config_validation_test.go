package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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

// TestUnsetEnvListedWithOtherErrors: an unset ${NAME} is one error among
// the others of the file (unknown keys, bad durations, unknown targets),
// not the only one shown, and the key holding it gets no error of its own
// on top (targets[0].url is not "required", checks[2] not "name at least
// one target"). Values that are set stay redacted.
func TestUnsetEnvListedWithOtherErrors(t *testing.T) {
	t.Setenv("VIGIL_TEST_SET_TOKEN", "s3cret-value-42")
	path := writeConfig(t, `agent: {admin_token: "${VIGIL_TEST_SET_TOKEN}"}
targets:
  - {name: a, url: "${VIGIL_TEST_UNSET_URL}"}
checks:
  - {name: c, targets: [a, nosuch], intervall: 5s}
  - {name: d, targets: [a], interval: 5}
  - {name: e, url: "${VIGIL_TEST_UNSET_URL2}", http: {headers: {Authorization: "Bearer ${VIGIL_TEST_SET_TOKEN}x"}}}
`)
	out, code := runCLI(t, "validate", "-c", path)
	var want []string
	for _, l := range []string{
		"3:15: targets[0].url: ${VIGIL_TEST_UNSET_URL} is not set in the environment (use ${VIGIL_TEST_UNSET_URL:-default} for an optional value)",
		`5:28: checks[0].targets[1]: "nosuch": unknown target (define it under targets:)`,
		"5:37: checks[0].intervall: unknown key (did you mean interval?)",
		`6:29: checks[1].interval: 5: a duration needs a unit, e.g. "5s" or "5ms"`,
		"7:15: checks[2].url: ${VIGIL_TEST_UNSET_URL2} is not set in the environment (use ${VIGIL_TEST_UNSET_URL2:-default} for an optional value)",
	} {
		want = append(want, path+":"+l)
	}
	if code != 2 || strings.TrimSpace(out) != strings.Join(want, "\n") {
		t.Fatalf("exit %d, output:\n%s\nwant exit 2 and:\n%s", code, out, strings.Join(want, "\n"))
	}
	if strings.Contains(out, "s3cret-value-42") {
		t.Fatalf("a secret is printed:\n%s", out)
	}
}

// TestSizeMaxZeroAsserted: an explicit expect.size.max: 0B asserts an empty
// body (an explicit 0 is not the default), for a check and a script step;
// before, it was dropped and a non-empty body passed.
func TestSizeMaxZeroAsserted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			fmt.Fprint(w, "ok")
		}
	}))
	defer srv.Close()
	cases := []struct{ name, check, want string }{
		{"check max 0B on a body", "http: {path: /ok}\n    expect: {size: {max: 0B}}", "FAIL    size   200"},
		{"check min and max 0B on a body", "http: {path: /ok}\n    expect: {size: {min: 0B, max: 0B}}", "body size 2B, want <= 0B"},
		{"step max 0B on a body", "script: [{http: {path: /ok}, expect: {size: {max: 0B}}}]", "body size 2B, want <= 0B"},
		{"check max 0B on an empty body", "http: {path: /empty}\n    expect: {size: {max: 0B}}", "1 run (1 check × 1 target), 1 passed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, fmt.Sprintf("targets: [{name: a, url: %q}]\nchecks:\n  - name: c\n    targets: [a]\n    %s\n", srv.URL, c.check))
			out, code := runCLI(t, "check", "-c", cfg)
			wantCode := 1
			if strings.Contains(c.want, "passed") {
				wantCode = 0
			}
			if code != wantCode || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit %d and %q", code, out, wantCode, c.want)
			}
		})
	}
}

// TestExpectZeroDurationRejected: expect.ttfb: 0s and expect.duration: 0s
// (of a check or a script step) are errors saying why, not ignored.
func TestExpectZeroDurationRejected(t *testing.T) {
	out, code := validateOut(t, `targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - {name: c, targets: [a], http: {path: /}, expect: {ttfb: 0s, duration: 0s}}
  - {name: d, targets: [a], script: [{http: {path: /}, expect: {duration: 0s}}]}
`)
	for _, want := range []string{
		"checks[0].expect.ttfb: 0s: no run takes 0s, so the check could never pass (omit the key for no limit)",
		"checks[0].expect.duration: 0s: no run takes 0s, so the check could never pass (omit the key for no limit)",
		"checks[1].script[0].expect.duration: 0s: no run takes 0s, so the check could never pass (omit the key for no limit)",
	} {
		if code != 2 || !strings.Contains(out, want) {
			t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
		}
	}
}

// TestSLOTargetNotRunByCheck: an SLO naming a target its check does not run
// on could never fire; validate rejects it naming both.
func TestSLOTargetNotRunByCheck(t *testing.T) {
	const base = `targets: [{name: a, url: "http://127.0.0.1:9"}, {name: b, url: "http://127.0.0.1:10"}]
checks:
  - {name: c, targets: [a], http: {path: /}}
  - {name: h, targets: [a, b], http: {path: /}}
`
	out, code := validateOut(t, base+"slos: [{name: s, check: c, target: b, objective: 99%}]\n")
	want := `slos[0].target: "b": check "c" does not run on target b (its targets: a)`
	if code != 2 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
	}
	if out, code := validateOut(t, base+"slos: [{name: s, check: h, target: b, objective: 99%}]\n"); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("a target the check runs on: exit %d, output:\n%s", code, out)
	}
}

// TestPoolCheckOnOtherTargetsWarned: a pool whose verdicts.checks names a
// check that runs on none of its origins is warned about (exit 0): that
// check's verdicts never count for the pool. A check on one of them says
// nothing.
func TestPoolCheckOnOtherTargetsWarned(t *testing.T) {
	const base = `targets: [{name: a, url: "http://127.0.0.1:9"}, {name: b, url: "http://127.0.0.1:10"}]
checks:
  - {name: c, targets: [a], http: {path: /}}
  - {name: h, targets: [b], http: {path: /}}
`
	cfg := writeConfig(t, base+`proxy: {pools: [{name: p, origins: [{target: b}], verdicts: {checks: [h, c]}}]}`+"\n")
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "ok\nwarning: " + cfg + `:5:74: proxy.pools[0].verdicts.checks[1]: check "c" runs on none of the pool's origins (its targets: a; the pool's origins: b): ` +
		"its verdicts never count for the pool, which judges its origins without it (by passive detection alone when no other check it counts runs on them)"
	if code != 0 || strings.TrimSpace(out) != want {
		t.Fatalf("exit %d:\n%s\nwant exit 0:\n%s", code, out, want)
	}
	cfg = writeConfig(t, base+`proxy: {pools: [{name: p, origins: [{target: a}, {target: b}], verdicts: {checks: [h, c]}}]}`+"\n")
	if out, code := runCLI(t, "validate", "-c", cfg); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("checks on the pool's origins: exit %d:\n%s", code, out)
	}
}

// TestBrowserConfigEveryError: agent.browser reports every bad key at once,
// not the first only.
func TestBrowserConfigEveryError(t *testing.T) {
	missing := t.TempDir() + "/none.pem"
	out, code := validateOut(t, `agent:
  browser: {env: ["A=B", ""], ca_file: "`+missing+`"}
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks: [{name: c, targets: [a], http: {}}]
`)
	for _, want := range []string{
		`agent.browser.env[0]: "A=…": want a variable name such as HTTPS_PROXY`,
		`agent.browser.env[1]: "": want a variable name such as HTTPS_PROXY`,
		"agent.browser.ca_file: open " + missing + ": no such file or directory",
	} {
		if code != 2 || !strings.Contains(out, want) {
			t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
		}
	}
}

// TestUnknownKeyHints: an unknown key a typo away from a key of the same
// mapping says which one was meant, and one in an expect.json element
// lists the keys the element takes; a key near none says only that it is
// unknown.
func TestUnknownKeyHints(t *testing.T) {
	out, code := validateOut(t, `targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - name: c
    targets: [a]
    intervall: 5s
    bogusness: 1
    expect:
      json: [{path: x, gtt: 5, greater: 3}]
  - {name: d, targets: [a], script: [{http: {path: /}, expct: {status: 200}}]}
`)
	want := []string{
		"checks[0].intervall: unknown key (did you mean interval?)",
		"checks[0].bogusness: unknown key",
		"checks[0].expect.json[0].gtt: unknown key (did you mean gt? expect.json elements take equals, exists, gt, gte, lt, lte, path, regex)",
		"checks[0].expect.json[0].greater: unknown key (expect.json elements take equals, exists, gt, gte, lt, lte, path, regex)",
		"checks[1].script[0].expct: unknown key (did you mean expect?)",
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		_, msg, _ := strings.Cut(l, ".yaml:")
		got = append(got, msg[strings.Index(msg, " ")+1:])
	}
	if code != 2 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("exit %d, output:\n%s\nwant exit 2 and:\n%s", code, out, strings.Join(want, "\n"))
	}
}

// TestNegativeSizeAndBackoffValues: a negative size says it is negative
// (not that it lacks a unit), and a max_backoff below backoff gives both
// values.
func TestNegativeSizeAndBackoffValues(t *testing.T) {
	out, code := validateOut(t, `targets: [{name: a, url: "http://127.0.0.1:9"}]
checks: [{name: c, targets: [a], http: {body_limit: -1KiB}}]
alerting: {retry: {backoff: 5s, max_backoff: 2s, redeliver_backoff: 10m, redeliver_max_backoff: 1m}}
proxy: {listen: "127.0.0.1:0", max_body: -1MiB, pools: [{name: p, origins: [{target: a}]}]}
`)
	for _, want := range []string{
		`checks[0].http.body_limit: "-1KiB": a size must not be negative`,
		`proxy.max_body: "-1MiB": a size must not be negative`,
		"alerting.retry.max_backoff: 2s: must not be below backoff 5s",
		"alerting.retry.redeliver_max_backoff: 1m0s: must not be below backoff 10m0s (retry.redeliver_backoff)",
	} {
		if code != 2 || !strings.Contains(out, want) {
			t.Fatalf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
		}
	}
}
