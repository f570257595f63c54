package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadText writes body to a file and loads it as `vigil validate` does.
func loadText(t *testing.T, body string, env map[string]string) (*File, string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vigil.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := loadConfig(path, envOf(env))
	if err != nil {
		return nil, path, err.Error()
	}
	return f, path, ""
}

const zeroBase = "targets: [{name: a, url: \"http://127.0.0.1:9\"}]\nchecks: [{name: h, targets: [a], interval: 10s, http: {}}]\n"

// TestExplicitZeroOutsideCanary: an explicit 0 in the alerting, proxy and
// status_page sections is an error naming the key where 0 has no meaning of
// its own, instead of silently becoming the default.
func TestExplicitZeroOutsideCanary(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"alerting.dead_man.intervals", `alerting: {dead_man: {intervals: 0}}`,
			"alerting.dead_man.intervals: 0: must be positive (omit the key for the default, 3)"},
		{"alerting.retry.attempts", `alerting: {retry: {attempts: 0}}`,
			"alerting.retry.attempts: 0: must be positive (omit the key for the default, 5; 1 sends once without retrying)"},
		{"alerting.quorum", `alerting: {quorum: 0}`, "alerting.quorum: 0: must be positive (omit the key for the default, 1)"},
		{"alerting.evaluation_interval", `alerting: {evaluation_interval: 0s}`, "alerting.evaluation_interval: 0: must be positive (omit the key for the default, 15s)"},
		{"slos window", `slos: [{name: s, check: h, objective: 99%, window: 0s}]`,
			"slos[0].window: 0: must be positive (omit the key for the default, 30d with objective, else 5m)"},
		{"slos objective", `slos: [{name: s, check: h, objective: 0%, ttfb_p95: 500ms}]`,
			"slos[0].objective: 0%: must be above 0% and below 100% (omit the key for no availability SLO)"},
		{"status_page.refresh", `status_page: {refresh: 0s}`, "status_page.refresh: 0: must be positive (omit the key for the default, 5s)"},
		{"proxy tries", `proxy: {pools: [{name: p, retry: {tries: 0}, origins: [{target: a}]}]}`,
			"proxy.pools[0].retry.tries: 0: must be positive (omit the key for the default, 3; 1 sends each request to one origin only)"},
		{"proxy quorum", `proxy: {pools: [{name: p, verdicts: {quorum: 0}, origins: [{target: a}]}]}`,
			"proxy.pools[0].verdicts.quorum: 0: must be positive (omit the key for the default, 1)"},
		{"proxy max_age", `proxy: {pools: [{name: p, verdicts: {max_age: 0s}, origins: [{target: a}]}]}`,
			"proxy.pools[0].verdicts.max_age: 0: must be positive (omit the key for the default, 60s)"},
		{"proxy weight", `proxy: {pools: [{name: p, origins: [{target: a, weight: 0}]}]}`,
			"proxy.pools[0].origins[0].weight: 0: must be positive (omit the key for the default, 1; to send an origin no new requests, drain it with POST /api/v1/origins/{name}/drain)"},
		{"proxy consecutive_5xx", `proxy: {pools: [{name: p, passive: {consecutive_5xx: 0}, origins: [{target: a}]}]}`,
			"proxy.pools[0].passive.consecutive_5xx: 0: must be positive (omit the key for the default, 5; -1 turns the rule off)"},
		{"proxy max_body", `proxy: {max_body: 0B, pools: [{name: p, origins: [{target: a}]}]}`,
			"proxy.max_body: 0: must be positive (omit the key for the default, 10MiB)"},
		{"store retention", `store: {embedded: {retention: 0s}}`,
			"store.embedded.retention: 0: must be positive (omit the key for the default, 7d)"},
		{"store influxdb batch_size", `store: {influxdb: {url: "http://127.0.0.1:9", bucket: b, batch_size: 0}}`,
			"store.influxdb.batch_size: 0: must be positive (omit the key for the default, 500)"},
		{"store influxdb timeout", `store: {influxdb: {url: "http://127.0.0.1:9", bucket: b, timeout: 0s}}`,
			"store.influxdb.timeout: 0: must be positive (omit the key for the default, 10s)"},
		{"store rollup_retention", `store: {embedded: {rollup_retention: 0s}}`,
			"store.embedded.rollup_retention: 0: must be positive (omit the key for the default, 35d, or retention when longer)"},
		{"store influxdb flush_interval", `store: {influxdb: {url: "http://127.0.0.1:9", bucket: b, flush_interval: 0s}}`,
			"store.influxdb.flush_interval: 0: must be positive (omit the key for the default, 1s)"},
		{"store influxdb spool_max", `store: {influxdb: {url: "http://127.0.0.1:9", bucket: b, spool_max: 0B}}`,
			"store.influxdb.spool_max: 0: must be positive (omit the key for the default, 1GiB)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, path, got := loadText(t, zeroBase+c.yaml+"\n", nil)
			if want := c.want; errorText(path, got) != want { // errorText: without "FILE:LINE: "
				t.Errorf("error:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestExplicitZeroMeanings: where 0 has a meaning it is kept (down.for: 0s
// pages at once, max_ejected: 0% never ejects), documented defaults of 0
// stay accepted, and omitted keys still take their defaults.
func TestExplicitZeroMeanings(t *testing.T) {
	f, _, err := loadText(t, zeroBase+`alerting: {down: {for: 0s}, group_wait: 0s, dead_man: {for: 0s}}
status_page: {title: x}
proxy: {send_timeout: 0s, read_timeout: 0s, pools: [{name: p, max_ejected: 0%, slow_start: 0s, origins: [{target: a, max_conns: 0}]}]}
`, nil)
	if err != "" {
		t.Fatal(err)
	}
	if f.Alerting.Down.For != 0 {
		t.Errorf("down.for: 0s became %s; want 0 (fire on the first evaluation)", f.Alerting.Down.For)
	}
	if got := f.Proxy.Pools[0].MaxEjected; got != 0 {
		t.Errorf("max_ejected: 0%% became %s; want 0%% (never eject)", got)
	}
	if f.Proxy.SendTimeout != 60*time.Second {
		t.Errorf("send_timeout: 0s = %s; want the documented default 60s", f.Proxy.SendTimeout)
	}
	if f.StatusPage.Refresh != 5*time.Second || f.Alerting.Retry.Attempts != 5 || f.Proxy.Pools[0].Retry.Tries != 3 || f.Proxy.Pools[0].Origins[0].Weight != 1 {
		t.Errorf("omitted keys: refresh %s, attempts %d, tries %d, weight %d; want 5s, 5, 3, 1",
			f.StatusPage.Refresh, f.Alerting.Retry.Attempts, f.Proxy.Pools[0].Retry.Tries, f.Proxy.Pools[0].Origins[0].Weight)
	}
	// Omitted down.for and max_ejected keep their defaults.
	g, _, err := loadText(t, zeroBase+`alerting: {quorum: 1}
proxy: {pools: [{name: p, origins: [{target: a}]}]}
`, nil)
	if err != "" {
		t.Fatal(err)
	}
	if g.Alerting.Down.For != time.Minute || g.Proxy.Pools[0].MaxEjected != 50 {
		t.Errorf("omitted: down.for %s, max_ejected %s; want 1m, 50%%", g.Alerting.Down.For, g.Proxy.Pools[0].MaxEjected)
	}
}

// TestValidateExitCodeExplicitZero: vigil validate exits 2 and prints the key.
func TestValidateExitCodeExplicitZero(t *testing.T) {
	path := writeConfig(t, zeroBase+"alerting: {retry: {attempts: 0}}\n")
	out, code := runCLI(t, "validate", "-c", path)
	if code != 2 || !strings.Contains(out, "alerting.retry.attempts: 0: must be positive") {
		t.Fatalf("exit %d, output %q; want 2 naming alerting.retry.attempts", code, out)
	}
}

// TestWrongTypesRejected: a value of the wrong type is an error naming the
// key and the value, not silently converted; strings (from the file, ${VAR}
// or VIGIL_* overrides) for numbers and bools still work.
func TestWrongTypesRejected(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"fraction for int", `checks: [{name: h, url: "http://127.0.0.1:9", rise: 2.5}]`, `checks[0].rise: 2.5: want an integer`},
		{"bool for int", `checks: [{name: h, url: "http://127.0.0.1:9", fall: true}]`, `checks[0].fall: true: want an integer`},
		{"int for bool", `checks: [{name: h, url: "http://127.0.0.1:9", disabled: 1}]`, `checks[0].disabled: 1: want true or false`},
		{"fraction weight", "targets: [{name: a, url: \"http://127.0.0.1:9\"}]\nproxy: {pools: [{name: p, origins: [{target: a, weight: 2.9}]}]}", `proxy.pools[0].origins[0].weight: 2.9: want an integer`},
		{"bool for float", "targets: [{name: a, url: \"http://127.0.0.1:9\"}]\nproxy: {pools: [{name: p, hash: {bounded_load: true}, origins: [{target: a}]}]}", `proxy.pools[0].hash.bounded_load: true: want a number`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, path, got := loadText(t, c.yaml+"\n", nil)
			if want := c.want; errorText(path, got) != want { // errorText: without "FILE:LINE: "
				t.Errorf("error:\n got %s\nwant %s", got, want)
			}
		})
	}
	f, _, err := loadText(t, `agent: {concurrency: "${N}"}
checks: [{name: h, url: "http://127.0.0.1:9", rise: "3", fall: 2.0, adaptive: "${A}", http: {headers: {X-Debug: true}}}]
`, map[string]string{"N": "7", "A": "true", "VIGIL_AGENT_BROWSER_MAX_CONCURRENT": "4"})
	if err != "" {
		t.Fatal(err)
	}
	c := f.Checks[0]
	if f.Agent.Concurrency != 7 || c.Rise != 3 || c.Fall != 2 || !*c.Adaptive || f.Agent.Browser.MaxConcurrent != 4 {
		t.Errorf("concurrency %d, rise %d, fall %d, adaptive %v, max_concurrent %d; want 7, 3, 2, true, 4",
			f.Agent.Concurrency, c.Rise, c.Fall, *c.Adaptive, f.Agent.Browser.MaxConcurrent)
	}
	if v := c.HTTP.Headers["X-Debug"]; v != "true" {
		t.Errorf("header X-Debug: true sent as %q; want \"true\"", v)
	}
}

// TestLoadErrorsNameKey covers the messages of keys that used to pass
// validate and fail later, or fail with a message naming neither key nor value.
func TestLoadErrorsNameKey(t *testing.T) {
	const chk = `checks: [{name: h, url: "http://127.0.0.1:9", http: {}}]` + "\n"
	cases := []struct{ name, yaml, want string }{
		{"agent.listen nonsense", chk + `agent: {listen: nonsense}`, `agent.listen: "nonsense": want host:port, e.g. 127.0.0.1:9470`},
		{"agent.listen port", chk + `agent: {listen: "127.0.0.1:99999"}`, `agent.listen: "127.0.0.1:99999": port "99999": want a number from 0 to 65535`},
		{"proxy.listen port", "targets: [{name: a, url: \"http://127.0.0.1:9\"}]\nproxy: {listen: \"127.0.0.1:70000\", pools: [{name: p, origins: [{target: a}]}]}",
			`proxy.listen: "127.0.0.1:70000": port "70000": want a number from 0 to 65535`},
		{"flap extra_passes", chk + `defaults: {flap: {extra_passes: -2}}`, `defaults.flap.extra_passes: -2: must not be negative (0: rise alone recovers)`},
		{"flap window", chk + `defaults: {flap: {window: -1m}}`, `defaults.flap.window: -1m0s: must be positive`},
		{"flap max_changes", `checks: [{name: h, url: "http://127.0.0.1:9", flap: {max_changes: -1}}]`, `checks[0].flap.max_changes: -1: must not be negative (0 turns flap damping off)`},
		{"expect.duration", `checks: [{name: h, url: "http://127.0.0.1:9", interval: 10s, expect: {duration: 20s}}]`,
			`checks[0].expect.duration: 20s ≥ timeout 8s (inherited: defaults.timeout or min(10s, 80% of the interval)): the run times out first, so the assertion can never fail (set expect.duration below timeout, or raise timeout)`},
		{"expect.ttfb", `checks: [{name: h, url: "http://127.0.0.1:9", interval: 10s, timeout: 2s, expect: {ttfb: 2s}}]`,
			`checks[0].expect.ttfb: 2s ≥ timeout 2s: the run times out first, so the assertion can never fail (set expect.ttfb below timeout, or raise timeout)`},
		{"script on tcp", `checks: [{name: h, url: "tcp://127.0.0.1:9", script: [{http: {path: /healthz}}]}]`,
			`checks[0].url: "tcp://127.0.0.1:9": want an http:// or https:// URL: script[0] is an http step without its own http.url`},
		{"script on tcp target", "targets: [{name: a, url: \"tls://127.0.0.1:9\"}]\nchecks: [{name: h, targets: [a], script: [{expr: \"true\"}, {http: {path: /x}}]}]",
			`checks[0].targets[0]: "a" (url "tls://127.0.0.1:9"): want an http:// or https:// URL: script[1] is an http step without its own http.url`},
		{"case duplicate", `checks: [{name: h, url: "http://127.0.0.1:9", interval: 10s, Interval: 20s}]`,
			`checks[0].Interval: duplicates interval (keys match case-insensitively: keep one)`},
		{"url without scheme", "targets: [{name: a, url: \"127.0.0.1:9201\"}]\nchecks: [{name: h, targets: [a]}]\nproxy: {pools: [{name: p, origins: [{target: a}]}]}",
			`targets[0].url: "127.0.0.1:9201": no scheme: write it as http://127.0.0.1:9201 (or https://, tcp://, tls://)`},
		{"bad target name", "targets: [{name: a/b, url: \"http://127.0.0.1:9\"}]\nchecks: [{name: h, targets: [a/b]}]",
			`targets[0].name: "a/b": use letters, digits and _ . : -`},
		{"maintenance duration missing", chk + `alerting: {maintenance: [{name: m, cron: "0 2 * * *"}]}`,
			`alerting.maintenance[0].duration: required (how long each window lasts, e.g. 2h)`},
		{"maintenance duration zero", chk + `alerting: {maintenance: [{name: m, cron: "0 2 * * *", duration: 0s}]}`,
			`alerting.maintenance[0].duration: 0s: must be positive`},
		{"top-level list", "- a\n- b", `the top level must be a mapping of sections (agent, targets, checks, …)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, path, got := loadText(t, c.yaml+"\n", nil)
			if want := c.want; errorText(path, got) != want { // errorText: without "FILE:LINE: "
				t.Errorf("error:\n got %s\nwant %s", got, want)
			}
		})
	}
	// Valid values stay valid: flap 0s where 0 means something, expect
	// below the timeout, a script with an absolute http.url on a tcp target.
	if _, _, err := loadText(t, `checks:
  - {name: a, url: "http://127.0.0.1:9", interval: 10s, expect: {duration: 7s, ttfb: 1s}, flap: {max_changes: 0, extra_passes: 0}}
  - {name: b, url: "tcp://127.0.0.1:9", script: [{http: {url: "http://127.0.0.1:9/x"}}]}
agent: {listen: "127.0.0.1:0"}
`, nil); err != "" {
		t.Fatal(err)
	}
}

// TestMissingDefaultConfigFile: without -c, the error says vigil.yaml was
// the default.
func TestMissingDefaultConfigFile(t *testing.T) {
	t.Chdir(t.TempDir())
	out, code := runCLI(t, "validate")
	if code != 2 || !strings.Contains(out, "config: open vigil.yaml: no such file or directory (vigil.yaml is the default of -c; pass -c FILE)") {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

// TestEmptyOverrideIsNotSet: an empty value (`${X:-}`, an empty VIGIL_*
// override) leaves the key unset: the default applies, it is not an
// explicit 0 (which pages at once for down.for, and is an error for quorum).
func TestEmptyOverrideIsNotSet(t *testing.T) {
	env := map[string]string{"VIGIL_ALERTING_DOWN_FOR": "", "VIGIL_ALERTING_QUORUM": "", "EMPTY": ""}
	f, err := parseConfig("vigil.yaml", []byte(`
targets: [{name: a, url: "http://127.0.0.1:9201"}]
checks: [{name: h, targets: [a], interval: 30s}]
alerting:
  repeat_interval: ${EMPTY:-}
  receivers: [{name: w, webhook: {url: "http://127.0.0.1:9/"}}]
`), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Alerting.Down.For; got != time.Minute {
		t.Errorf("down.for with an empty override: %s, want the default 1m", got)
	}
	if got := f.Alerting.Quorum; got != 1 {
		t.Errorf("quorum with an empty override: %d, want the default 1", got)
	}
	if got := f.Alerting.RepeatInterval; got != 4*time.Hour {
		t.Errorf("repeat_interval: ${EMPTY:-}: %s, want the default 4h", got)
	}
}

// TestAdminTokenTrimmed: a token from a variable that ends in a newline
// matches what a client presents (which is trimmed); one of only spaces is
// no token (writes disabled), not a token nobody can send.
func TestAdminTokenTrimmed(t *testing.T) {
	env := map[string]string{"VIGIL_AGENT_ADMIN_TOKEN": "s3cret\n"}
	f, err := parseConfig("vigil.yaml", []byte(`
targets: [{name: a, url: "http://127.0.0.1:9201"}]
checks: [{name: h, targets: [a], interval: 30s}]
proxy:
  admin_token: "   "
  pools: [{name: p, origins: [{target: a}]}]
`), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if f.Agent.AdminToken != "s3cret" {
		t.Errorf("agent.admin_token %q, want s3cret", f.Agent.AdminToken)
	}
	if f.Proxy.AdminToken != "s3cret" {
		t.Errorf("proxy.admin_token %q, want the agent's (a blank one is unset)", f.Proxy.AdminToken)
	}
}
