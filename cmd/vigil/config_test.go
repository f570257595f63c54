package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/canary"
)

func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestMain lowers the interval minimum for the package's end-to-end tests,
// which run checks every few hundred milliseconds to finish quickly; tests of
// the rule itself restore the real 1s with withMinInterval. It makes the
// open-file limit `vigil validate` reads unknown, so that no test's expected
// output depends on this machine's limit; withFileLimit restores it.
func TestMain(m *testing.M) {
	minCheckInterval.Store(int64(100 * time.Millisecond))
	validateFileLimit = func() uint64 { return 0 }
	os.Exit(m.Run())
}

// withMinInterval sets the interval minimum for one (sequential) test.
func withMinInterval(t *testing.T, d time.Duration) {
	old := minCheckInterval.Swap(int64(d))
	t.Cleanup(func() { minCheckInterval.Store(old) })
}

// TestInvalidConfigs pairs each testdata/invalid-*.yaml with the exact error
// `vigil validate` prints for it.
func TestInvalidConfigs(t *testing.T) {
	want := map[string]string{
		"invalid-unknown-key.yaml":      "14: checks[2].expect.statuss: unknown key (did you mean status?)",
		"invalid-timeout-interval.yaml": "7: checks[0].timeout: 5s ≥ interval 5s: timeout must be shorter than the interval",
		"invalid-unknown-target.yaml":   `5:25: checks[0].targets[1]: "origin-z": unknown target (did you mean "origin-a"? or define it under targets:)`,
		"invalid-duration-unit.yaml":    `6: checks[0].interval: 5: a duration needs a unit, e.g. "5s" or "5ms"`,
		"invalid-missing-env.yaml":      "2: agent.admin_token: ${VIGIL_TEST_UNSET_TOKEN} is not set in the environment (use ${VIGIL_TEST_UNSET_TOKEN:-default} for an optional value)",
		"invalid-status-range.yaml":     "7:14: " + wantStatusRange,
		"invalid-status-list.yaml":      `7:28: checks[0].expect.status[1]: "20x": not a status code or range`,
		"invalid-listen-clash.yaml":     "6: proxy.listen: 127.0.0.1:19471 is also agent.listen: each listener needs its own address",
		"invalid-regex.yaml":            "9: " + wantRegex,
		"invalid-checksum.yaml":         "7:14: " + wantChecksum,
		// The compile step of vigil run / vigil check, now part of loading.
		"invalid-size-above-body-limit.yaml":        "5:21: checks[0] (h): expect.size.max: 3MiB is above http.body_limit 1KiB",
		"invalid-script-size-above-body-limit.yaml": "5:61: checks[0] (flow): script[0].expect.size.max: 3MiB is above http.body_limit 1KiB",
		"invalid-http-url-scheme.yaml":              `2:15: checks[0].url: "tcp://127.0.0.1:9": want an http:// or https:// URL for an http check`,
		"invalid-tcp-no-port.yaml":                  `2:18: checks[0].url: "tcp://127.0.0.1": a port is required for a tcp check (tcp://host:port)`,
		// Cross-references.
		"invalid-verdict-check.yaml":         `7:27: proxy.pools[0].verdicts.checks[0]: unknown check "nosuch"`,
		"invalid-verdict-tier.yaml":          `7:35: proxy.pools[0].verdicts.tiers[1]: "bogus": want shallow, deep or synthetic`,
		"invalid-maintenance-check.yaml":     `5:74: alerting.maintenance[0].checks[1]: unknown check "nosuch"`,
		"invalid-empty.yaml":                 " nothing to run: no checks:, proxy:, alerting:, slos: or store: section (is this a vigil config file?)",
		"invalid-interval-min.yaml":          "2:59: checks[0].interval: 5ms is below the 1s minimum",
		"invalid-defaults-interval-min.yaml": "1:12: defaults.interval: 500ms is below the 1s minimum",
		"invalid-objective-fraction.yaml":    `4:35: slos[0].objective: 0.999: a percentage needs a % sign, e.g. "99.9%"`,
		"invalid-retention-number.yaml":      `2:29: store.embedded.retention: 7: a duration needs a unit, e.g. "7d"`,
		// Decode errors, validation errors and compile errors in one run.
		"invalid-many.yaml": strings.Join([]string{
			`6: checks[0].interval: 5: a duration needs a unit, e.g. "5s" or "5ms"`,
			`8:14: checks[0].expect.statuss: unknown key (did you mean status?)`,
			`12:14: checks[1].expect.status: "2xx-3": not a status code or range`,
			`16:14: checks[2].expect.checksum: want "sha256:<64 hex>" (or sha1, md5, crc32), got "sha257:…"`,
			"22: checks[3].expect.headers.Cache-Control: bad regex \"max-age=(\\\\d+\": missing closing ): `max-age=(\\d+`",
			`26:21: checks[4] (big): expect.size.max: 3MiB is above http.body_limit 1KiB`,
		}, "\n"),
	}
	withMinInterval(t, time.Second)
	files, _ := filepath.Glob("testdata/invalid-*.yaml")
	if len(files) != len(want) {
		t.Errorf("%d invalid-*.yaml files, %d expectations: pair every file with its error", len(files), len(want))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			exp, ok := want[name]
			if !ok {
				t.Fatalf("no expected error for %s", name)
			}
			_, err := loadConfig(f, noEnv)
			if err == nil {
				t.Fatalf("loaded without error; want %q", exp)
			}
			got := err.Error()
			// Every line names the file, and the line of the key it is
			// about ("FILE:LINE: ", "FILE:LINE:COL: " inside a flow
			// collection; " " for an error about no one key).
			if exp = f + ":" + strings.ReplaceAll(exp, "\n", "\n"+f+":"); got != exp {
				t.Errorf("error:\n got %s\nwant %s", got, exp)
			}
		})
	}
}

func TestUnknownKeyIsSentinel(t *testing.T) {
	_, err := loadConfig("testdata/invalid-unknown-key.yaml", noEnv)
	if !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("want ErrUnknownKey, got %v", err)
	}
	_, err = loadConfig("testdata/invalid-unknown-target.yaml", noEnv)
	if !errors.Is(err, canary.ErrUnknownTarget) {
		t.Fatalf("want ErrUnknownTarget, got %v", err)
	}
	_, err = loadConfig("testdata/invalid-timeout-interval.yaml", noEnv)
	if !errors.Is(err, canary.ErrTimeoutInterval) {
		t.Fatalf("want ErrTimeoutInterval, got %v", err)
	}
}

func TestEveryErrorReported(t *testing.T) {
	raw := `
targets:
  - {name: a, url: http://127.0.0.1:1}
checks:
  - {name: one, targets: [nope], http: {path: /}, interval: 1s, timeout: 2s}
  - {name: two, targets: [a], http: {path: /}, bogus: 1}
`
	_, err := parseConfig("x.yaml", []byte(raw), noEnv)
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) < 1 || !strings.Contains(err.Error(), "checks[1].bogus: unknown key") {
		t.Fatalf("want the unknown key reported, got:\n%s", err)
	}
}

func TestExampleConfigsValidate(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	more, _ := filepath.Glob("../../examples/*/*.yaml")
	files = append(files, more...)
	n := 0
	for _, f := range files {
		if strings.Contains(f, "docker-compose") || strings.Contains(f, "/grafana/") || strings.Contains(f, "/prometheus/") {
			continue
		}
		n++
		t.Run(f, func(t *testing.T) {
			if _, err := loadConfig(f, envOf(map[string]string{"VIGIL_ADMIN_TOKEN": "example-token"})); err != nil {
				t.Fatalf("%v", err)
			}
		})
	}
	if n == 0 {
		t.Fatal("no example configs found")
	}
}

func TestDefaultsAndEnv(t *testing.T) {
	raw := `
agent: {region: eu-west, admin_token: "${TOKEN}"}
defaults: {interval: 30s, timeout: 5s, rise: 2, fall: 3}
targets:
  - {name: origin-a, url: http://127.0.0.1:9201}
checks:
  - {name: healthz, targets: [origin-a], interval: 5s, http: {path: /healthz}}
  - {name: slow, targets: [origin-a], interval: 1m, http: {path: /}}
  - {name: daily, targets: [origin-a], cron: "CRON_TZ=UTC 0 3 * * *", http: {path: /}}
  - {name: port, url: "tcp://127.0.0.1:9201"}
`
	f, err := parseConfig("x.yaml", []byte(raw), envOf(map[string]string{
		"TOKEN": "s3cr3t-token", "VIGIL_AGENT_REGION": "us-east",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if f.Agent.Region != "us-east" {
		t.Errorf("VIGIL_AGENT_REGION override: region = %q", f.Agent.Region)
	}
	if f.Agent.AdminToken != "s3cr3t-token" {
		t.Errorf("interpolation: admin_token = %q", f.Agent.AdminToken)
	}
	hz := f.Checks[0]
	if hz.Timeout != 4*time.Second { // inherited 5s capped at 80% of 5s
		t.Errorf("healthz timeout = %s, want 4s", hz.Timeout)
	}
	if hz.Rise != 2 || hz.Fall != 3 || hz.ExpireAfter != 15*time.Second || hz.Tier != "deep" {
		t.Errorf("healthz defaults: rise %d fall %d expire %s tier %s", hz.Rise, hz.Fall, hz.ExpireAfter, hz.Tier)
	}
	if f.Checks[1].Timeout != 5*time.Second {
		t.Errorf("slow timeout = %s, want 5s", f.Checks[1].Timeout)
	}
	if f.Checks[2].Schedule() == nil || f.Checks[2].Interval != 24*time.Hour {
		t.Errorf("cron check: schedule %v interval %s", f.Checks[2].Schedule(), f.Checks[2].Interval)
	}
	if f.Checks[3].Kind() != "tcp" || f.Checks[3].Tier != "shallow" {
		t.Errorf("url tcp:// check: kind %s tier %s", f.Checks[3].Kind(), f.Checks[3].Tier)
	}
	pairs, err := f.Compile(canary.CompileOptions{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 4 || pairs[3].Target.Name != "127.0.0.1:9201" {
		t.Errorf("pairs: %d, last target %q", len(pairs), pairs[len(pairs)-1].Target.Name)
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	raw := `
store:
  influxdb: {url: "http://127.0.0.1:8086", token: "${INFLUX_TOKEN}"}
agent: {admin_token: "${ADMIN}"}
targets:
  - {name: a, url: "${ORIGIN}"}
checks:
  - {name: c, targets: [a], http: {path: /}, expect: {status: "nope"}}
`
	secrets := map[string]string{"INFLUX_TOKEN": "influx-secret-42", "ADMIN": "admin-secret-43", "ORIGIN": "http://user:origin-secret-44@127.0.0.1:1"}
	_, err := parseConfig("x.yaml", []byte(raw), envOf(secrets))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, s := range []string{"influx-secret-42", "admin-secret-43", "origin-secret-44"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error output contains secret %q:\n%s", s, err)
		}
	}
}

func TestUnitsRequired(t *testing.T) {
	raw := `
targets: [{name: a, url: "http://127.0.0.1:1"}]
checks: [{name: c, targets: [a], http: {path: /, body_limit: 10}}]
proxy:
  pools: [{name: web, origins: [{target: a}], passive: {failure_rate: 25}, max_ejected: "50%"}]
`
	_, err := parseConfig("x.yaml", []byte(raw), noEnv)
	if err == nil {
		t.Fatal("bare numbers for a percentage and a size were accepted")
	}
	for _, want := range []string{
		`proxy.pools[0].passive.failure_rate: 25: a percentage needs a % sign, e.g. "25%"`,
		`checks[0].http.body_limit: 10: a size needs a unit, e.g. "10B" or "10MiB"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%s", want, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"5s": 5 * time.Second, "600ms": 600 * time.Millisecond, "30d": 30 * 24 * time.Hour,
		"1d12h": 36 * time.Hour, "0": 0, "1.5h": 90 * time.Minute,
	} {
		got, err := parseDuration(in)
		if err != nil || got != want {
			t.Errorf("parseDuration(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"5", "abc", "5x", "d"} {
		if _, err := parseDuration(bad); err == nil {
			t.Errorf("parseDuration(%q): want an error", bad)
		}
	}
}

// FuzzConfig feeds arbitrary bytes to the loader: it must return a config or
// an error, never panic.
func FuzzConfig(f *testing.F) {
	for _, p := range []string{"testdata/invalid-unknown-key.yaml", "../../examples/quickstart.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("checks: [{name: x, url: 'http://127.0.0.1:1', expect: {status: '1-2,3'}}]"))
	f.Add([]byte("defaults: {interval: 5}"))
	// Numbers for string keys, merge keys, keys given twice.
	f.Add([]byte("x: &b {name: 1.10, http: {headers: {X-A: 0755, x-a: 2}}}\nchecks: [{<<: *b, targets: [a], rise: 2.5}]\nagent: {admin_token: 0x1F}\nagent: {}"))
	// Syntax errors, shown with their line and a caret.
	f.Add([]byte("agent: {a: [1, 2}\nchecks:\n\t- {name: \"x}\n"))
	f.Add([]byte("checks:\n  - {name: a,\n    url: x y: z}\n  - name: b\n   rise: 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := parseConfig("fuzz.yaml", b, noEnv)
		if le, ok := err.(*LoadError); ok {
			_ = le.Report()
		}
	})
}

// Errors produced by the checks package's Expect validation, as printed.
const (
	wantStatusRange = `checks[0].expect.status: "200-2xx": not a status code or range`
	wantRegex       = "checks[0].expect.headers.Cache-Control: bad regex \"max-age=(\\\\d+\": missing closing ): `max-age=(\\d+`"
	wantChecksum    = `checks[0].expect.checksum: want "sha256:<64 hex>" (or sha1, md5, crc32), got "sha257:…"`
)

// TestCasePreserved: header names, JSON bodies and script variables keep the
// case they have in the file.
func TestCasePreserved(t *testing.T) {
	raw := `
targets: [{name: a, url: "http://127.0.0.1:1"}]
checks:
  - name: c
    targets: [a]
    http: {method: POST, path: /, json: {userName: demo, Nested: {camelCase: 1}}, headers: {X-Api-Key: k}}
    expect: {json: [{path: data.userName, equals: {firstName: Ann}}]}
`
	f, err := parseConfig("x.yaml", []byte(raw), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprint(f.Checks[0].HTTP.JSON)
	if !strings.Contains(body, "userName") || !strings.Contains(body, "camelCase") {
		t.Errorf("JSON body keys lost their case: %s", body)
	}
	if eq := fmt.Sprint(f.Checks[0].Expect.JSON[0].Equals); !strings.Contains(eq, "firstName") {
		t.Errorf("equals value lost its case: %s", eq)
	}
}

// TestEnvOverrideSectionNamesVariable: an override of a section the file
// does not have makes the section, and its errors name the variable, so a
// proxy host's VIGIL_PROXY_LISTEN in a pipeline's environment is not a
// puzzle about a section the file never had.
func TestEnvOverrideSectionNamesVariable(t *testing.T) {
	raw := "checks: [{name: h, url: \"http://127.0.0.1:1/\"}]\n"
	_, err := parseConfig("x.yaml", []byte(raw), envOf(map[string]string{"VIGIL_PROXY_LISTEN": "127.0.0.1:0"}))
	want := "x.yaml: proxy.pools: at least one pool is required (the file has no proxy section: VIGIL_PROXY_LISTEN made one; unset it or add the section)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	// A file with the section: the error is as ever.
	_, err = parseConfig("x.yaml", []byte(raw+"proxy: {}\n"), envOf(map[string]string{"VIGIL_PROXY_LISTEN": "127.0.0.1:0"}))
	if err == nil || strings.Contains(err.Error(), "made one") {
		t.Errorf("file with proxy: {}: got %v, want the plain pools error", err)
	}
}

// TestEnvOverrideErrorsNameVariable: a bad value from VIGIL_* says so; a
// secret from the environment stays redacted in the same message.
func TestEnvOverrideErrorsNameVariable(t *testing.T) {
	raw := "checks: [{name: h, url: \"http://127.0.0.1:1/\"}]\n"
	_, err := parseConfig("x.yaml", []byte(raw), envOf(map[string]string{"VIGIL_AGENT_CONCURRENCY": "abc"}))
	if err == nil || !strings.HasPrefix(err.Error(), "x.yaml: agent.concurrency (from VIGIL_AGENT_CONCURRENCY): ") {
		t.Errorf("want the variable named, got %v", err)
	}
	// The value and what it should be, in words.
	for name, tc := range map[string]struct{ env, val, want string }{
		"int":       {"VIGIL_AGENT_CONCURRENCY", "abc", `agent.concurrency (from VIGIL_AGENT_CONCURRENCY): "abc": want an integer`},
		"int range": {"VIGIL_AGENT_CONCURRENCY", "99999999999999999999", `agent.concurrency (from VIGIL_AGENT_CONCURRENCY): "99999999999999999999": out of range (int)`},
		"bool":      {"VIGIL_STORE_EMBEDDED_ENABLED", "yes", `store.embedded.enabled (from VIGIL_STORE_EMBEDDED_ENABLED): "yes": want true or false`},
		"duration":  {"VIGIL_DEFAULTS_INTERVAL", "5", `defaults.interval (from VIGIL_DEFAULTS_INTERVAL): "5": a duration needs a unit, e.g. "5s"`},
		"size":      {"VIGIL_PROXY_MAX_BODY", "10", `proxy.max_body (from VIGIL_PROXY_MAX_BODY): "10": want a size with a unit, e.g. "10MiB", "512KiB", "100B"`},
	} {
		withProxy := raw + "proxy: {pools: [{name: p, origins: [{url: \"http://127.0.0.1:1\"}]}]}\n"
		_, err := parseConfig("x.yaml", []byte(withProxy), envOf(map[string]string{tc.env: tc.val}))
		if want := "x.yaml: " + tc.want; err == nil || err.Error() != want {
			t.Errorf("%s: got %v\nwant %s", name, err, want)
		}
	}
	// The same words for a string in the file; a number-like string still parses.
	_, err = parseConfig("x.yaml", []byte("agent: {concurrency: \"many\"}\n"+raw), noEnv)
	if want := `x.yaml:1:9: agent.concurrency: "many": want an integer`; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	if f, err := parseConfig("x.yaml", []byte(raw), envOf(map[string]string{"VIGIL_AGENT_CONCURRENCY": "7"})); err != nil || f.Agent.Concurrency != 7 {
		t.Errorf("VIGIL_AGENT_CONCURRENCY=7: %v", err)
	}
	_, err = parseConfig("x.yaml", []byte(raw), envOf(map[string]string{"VIGIL_AGENT_CONCURRENCY": "-3"}))
	if want := "x.yaml: agent.concurrency (from VIGIL_AGENT_CONCURRENCY): must be positive, got -3"; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	// A value from the file is not marked.
	_, err = parseConfig("x.yaml", []byte("agent: {concurrency: -3}\n"+raw), noEnv)
	if want := "x.yaml:1:9: agent.concurrency: must be positive, got -3"; err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	secret := "http://127.0.0.1:1/?key=env-secret-77"
	_, err = parseConfig("x.yaml", []byte(raw+"store: {influxdb: {url: x, token: t}}\n"), envOf(map[string]string{"VIGIL_STORE_INFLUXDB_URL": "tcp://" + secret}))
	if err == nil || !strings.Contains(err.Error(), "store.influxdb.url (from VIGIL_STORE_INFLUXDB_URL): ") || strings.Contains(err.Error(), "env-secret-77") {
		t.Errorf("want the variable named and the value hidden, got %v", err)
	}
}

// TestRemoteVerdictFilesValid: a proxy or alerter file without checks names
// checks that other regions run; those references cannot be verified there.
func TestRemoteVerdictFilesValid(t *testing.T) {
	for name, raw := range map[string]string{
		"proxy":   `proxy: {pools: [{name: web, origins: [{url: "http://127.0.0.1:1"}], verdicts: {checks: [remote], tiers: [deep]}}]}`,
		"alerter": `alerting: {maintenance: [{name: m, cron: "0 3 * * *", duration: 1h, checks: [remote]}]}`,
		"store":   `store: {influxdb: {url: "http://127.0.0.1:8086", bucket: b}}`,
	} {
		if _, err := parseConfig(name+".yaml", []byte(raw), noEnv); err != nil {
			t.Errorf("%s-only file: %v", name, err)
		}
	}
	withMinInterval(t, time.Second)
	for _, raw := range []string{
		"checks: [{name: daily, url: \"http://127.0.0.1:1/\", cron: \"0 3 * * *\"}]",
		"checks: [{name: c, url: \"http://127.0.0.1:1/\", interval: 1s}]",
		"checks: [{name: c, url: \"tls://127.0.0.1\"}]",
		"checks: [{name: c, url: \"tcp://127.0.0.1:9\", http: {url: \"http://127.0.0.1:1/\"}}]",
	} {
		if _, err := parseConfig("x.yaml", []byte(raw), noEnv); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// TestUnknownEnvWarned: a VIGIL_* variable that overrides no key is named
// on stderr by validate (with the key it was probably meant for), and the
// file still validates; variables the file reads with ${…} and the
// documented non-key ones are not reported.
func TestUnknownEnvWarned(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "v.yaml")
	raw := "agent: {admin_token: \"${VIGIL_MY_TOKEN}\"}\nchecks: [{name: h, url: \"http://127.0.0.1:1/\"}]\n"
	if err := os.WriteFile(file, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VIGIL_AGENT_REGOIN", "x")
	t.Setenv("VIGIL_CHECKS_0_INTERVAL", "5s")
	t.Setenv("VIGIL_MY_TOKEN", "some-token-value")
	t.Setenv("VIGIL_ADMIN_TOKEN", "t")
	t.Setenv("VIGIL_INFLUXDB_ORG", "o")
	t.Setenv("VIGIL_AGENT_REGION", "eu")
	out, code := runCLI(t, "validate", "-c", file)
	if code != 0 || !strings.HasPrefix(out, "ok\n") {
		t.Fatalf("exit %d, want 0 and ok: %s", code, out)
	}
	for _, want := range []string{
		"warning: environment variable VIGIL_AGENT_REGOIN overrides no config key and is ignored (did you mean VIGIL_AGENT_REGION?)\n",
		"warning: environment variable VIGIL_CHECKS_0_INTERVAL overrides no config key and is ignored (keys inside lists such as checks[] cannot be set from the environment)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, quiet := range []string{"VIGIL_MY_TOKEN", "VIGIL_ADMIN_TOKEN", "VIGIL_INFLUXDB_ORG", "VIGIL_AGENT_REGION "} {
		if strings.Contains(out, quiet) {
			t.Errorf("%s reported:\n%s", quiet, out)
		}
	}
}

// TestValidateListsEveryError: what `vigil validate` prints for a file with
// decode, validation and compile errors: all of them, exit 2.
func TestValidateListsEveryError(t *testing.T) {
	withMinInterval(t, time.Second)
	out, code := runCLI(t, "validate", "-c", "testdata/invalid-many.yaml")
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	for _, key := range []string{"checks[0].interval:", "checks[0].expect.statuss:", "checks[1].expect.status:", "checks[2].expect.checksum:", "checks[3].expect.headers.Cache-Control:", "checks[4] (big): expect.size.max:"} {
		if !strings.Contains(out, ": "+key) {
			t.Errorf("output lacks %s:\n%s", key, out)
		}
	}
	// A value that did not decode is not reported a second time as missing.
	dir := t.TempDir()
	file := filepath.Join(dir, "v.yaml")
	if err := os.WriteFile(file, []byte("checks:\n  - {name: a, url: [1]}\n  - {name: b, url: \"http://127.0.0.1:1/\", expect: {status: \"2xx-3\"}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = runCLI(t, "validate", "-c", file)
	want := file + ":2:15: checks[0].url: want a string, got a list\n" +
		file + `:3:52: checks[1].expect.status: "2xx-3": not a status code or range`
	if code != 2 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d, output:\n%s\nwant:\n%s", code, out, want)
	}
}

// TestProxyLabelsInheritAgent: proxy.region and proxy.vantage default to
// the agent's, as the README's proxy key table says.
func TestProxyLabelsInheritAgent(t *testing.T) {
	raw := "agent: {region: eu-west, vantage: edge-1}\nproxy: {pools: [{name: p, origins: [{url: \"http://127.0.0.1:1\"}]}]}\n"
	f, err := parseConfig("x.yaml", []byte(raw), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if f.Proxy.Region != "eu-west" || f.Proxy.Vantage != "edge-1" {
		t.Errorf("proxy labels %q/%q, want the agent's eu-west/edge-1", f.Proxy.Region, f.Proxy.Vantage)
	}
	f, err = parseConfig("x.yaml", []byte("agent: {region: eu-west}\nproxy: {region: us-east, pools: [{name: p, origins: [{url: \"http://127.0.0.1:1\"}]}]}\n"), noEnv)
	if err != nil || f.Proxy.Region != "us-east" {
		t.Errorf("proxy.region set: %v, region %q", err, f.Proxy.Region)
	}
}
