package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestValidateWarningsInFileOrder: every warning about a key starts, as an
// error does, with the file and the line the key is written on (and its
// column inside a flow collection), and vigil validate prints them in file
// order, whichever check found them (the loader's TLS, InfluxDB and
// alerting checks, validate's own exec_path check). A key a VIGIL_*
// override set is named with its variable, before the file's warnings.
// Errors come first, then warnings: a file with errors gets only the
// warnings about the environment, after them.
func TestValidateWarningsInFileOrder(t *testing.T) {
	const body = `agent:
  browser:
    exec_path: /nonexistent/chromium
targets:
  - {name: o, url: "https://127.0.0.1:1"}
alerting:
  resolve_timeout: 30s
checks:
  - name: a
    targets: [o]
    http:
      tls:
        insecure_skip_verify: true
store:
  influxdb:
    url: http://influx.example:8086
    token: s3cret-influx-token
    org: o
    bucket: b
`
	cfg := writeConfig(t, body)
	out, code := runCLI(t, "validate", "-c", cfg)
	want := []string{
		"ok",
		"warning: " + cfg + ":3: agent.browser.exec_path: /nonexistent/chromium: no such file on this machine (checked where vigil validate runs; the agent needs it where the agent runs)",
		"warning: " + cfg + ":6: alerting.receivers: none: alerts fire on the status page and GET /api/v1/alerts only and notify nobody",
		"warning: " + cfg + ":7: alerting.resolve_timeout: 30s is below 3 × evaluation_interval (15s): raised to 45s, so that an alert re-sent every evaluation does not expire in Alertmanager between two",
		"warning: " + cfg + ":13: checks[0].http.tls.insecure_skip_verify: true: certificates are not verified",
		"warning: " + cfg + `:16: store.influxdb.url: "http://influx.example:8086": http, not https: the token travels unencrypted to influx.example`,
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(want) {
		t.Fatalf("exit %d:\n%s\nwant exit 0 and %d lines starting:\n%s", code, out, len(want), strings.Join(want, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n%s\nwant it to start:\n%s", i+1, lines[i], w)
		}
	}

	// The URL from the environment: no line of the file, first.
	t.Setenv("VIGIL_STORE_INFLUXDB_URL", "http://influx2.example:8086")
	out, code = runCLI(t, "validate", "-c", cfg)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	first := "warning: " + cfg + `: store.influxdb.url (from VIGIL_STORE_INFLUXDB_URL): "http://influx2.example:8086": http, not https`
	if code != 0 || len(lines) != len(want) || !strings.HasPrefix(lines[1], first) || !strings.HasPrefix(lines[2], want[1]) {
		t.Errorf("URL from VIGIL_STORE_INFLUXDB_URL: exit %d:\n%s\nwant its warning first:\n%s", code, out, first)
	}

	// A file with errors: the errors, then the environment's warnings.
	t.Setenv("VIGIL_AGENT_REGOIN", "x")
	bad := writeConfig(t, strings.Replace(body, "resolve_timeout: 30s", "resolve_timeout: soon", 1))
	out, code = runCLI(t, "validate", "-c", bad)
	wantBad := bad + `:7: alerting.resolve_timeout: "soon": not a duration (use ms, s, m, h or d)` + "\n" +
		"warning: environment variable VIGIL_AGENT_REGOIN overrides no config key and is ignored (did you mean VIGIL_AGENT_REGION?)"
	if code != 2 || strings.TrimSpace(out) != wantBad {
		t.Errorf("file with an error: exit %d:\n%s\nwant exit 2 and:\n%s", code, out, wantBad)
	}
}

// TestValidateReceiverWarnings: an alerting section that notifies nobody,
// and a webhook whose headers (a bearer token) go over plain http to
// another host, are warnings at their lines; https, a loopback receiver
// and a webhook without headers are not.
func TestValidateReceiverWarnings(t *testing.T) {
	cfg := writeConfig(t, `targets: [{name: o, url: "http://127.0.0.1:1"}]
checks: [{name: a, targets: [o], http: {path: /}}]
alerting:
  receivers:
    - {name: plain, webhook: {url: "http://hooks.example.com/x", headers: {Authorization: "Bearer s3cret-hook"}}}
    - {name: tls, webhook: {url: "https://hooks.example.com/x", headers: {Authorization: "Bearer s3cret-hook"}}}
    - {name: local, webhook: {url: "http://127.0.0.1:9/x", headers: {Authorization: "Bearer s3cret-hook"}}}
    - {name: bare, webhook: {url: "http://hooks.example.com/y"}}
`)
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "ok\nwarning: " + cfg + ":5:31: alerting.receivers[0].webhook.url: http, not https: its headers (Authorization) travel unencrypted to hooks.example.com; use https, or a loopback address for a receiver on this host"
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d:\n%s\nwant exit 0 and:\n%s", code, out, want)
	}
	if strings.Contains(out, "s3cret-hook") {
		t.Errorf("the warning shows the secret:\n%s", out)
	}

	// No receivers: a warning at the alerting section; a file without one
	// (the alerter's defaults) and a disabled alerter: none.
	cfg = writeConfig(t, `targets: [{name: o, url: "http://127.0.0.1:1"}]
checks: [{name: a, targets: [o], http: {path: /}}]
alerting:
  quorum: 1
  receivers: []
`)
	out, code = runCLI(t, "validate", "-c", cfg)
	want = "ok\nwarning: " + cfg + ":5: alerting.receivers: none: alerts fire on the status page and GET /api/v1/alerts only and notify nobody; add a webhook, slack, pagerduty or alertmanager receiver"
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d:\n%s\nwant exit 0 and:\n%s", code, out, want)
	}
	for _, body := range []string{
		"targets: [{name: o, url: \"http://127.0.0.1:1\"}]\nchecks: [{name: a, targets: [o], http: {path: /}}]\n",
		"targets: [{name: o, url: \"http://127.0.0.1:1\"}]\nchecks: [{name: a, targets: [o], http: {path: /}}]\nalerting: {disabled: true}\n",
	} {
		cfg = writeConfig(t, body)
		if out, code := runCLI(t, "validate", "-c", cfg); code != 0 || strings.TrimSpace(out) != "ok" {
			t.Errorf("%s: exit %d:\n%s\nwant only ok", body, code, out)
		}
	}
}

// TestValidateProxyAndDNSTLSWarnings: insecure TLS to an https proxy
// (http.proxy_tls) or to a DNS-over-TLS server (dns.tls) is warned about
// as the origin's http.tls is.
func TestValidateProxyAndDNSTLSWarnings(t *testing.T) {
	cfg := writeConfig(t, `targets: [{name: o, url: "https://127.0.0.1:1"}]
checks:
  - name: a
    targets: [o]
    http:
      proxy_url: https://proxy.example:3129
      proxy_tls: {insecure_skip_verify: true}
  - name: d
    url: dns://127.0.0.1
    dns:
      query_name: example.com
      transport: tcp-tls
      tls: {insecure_skip_verify: true}
`)
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "ok\nwarning: " + cfg + ":7:19: checks[0].http.proxy_tls.insecure_skip_verify: true: certificates are not verified" +
		"\nwarning: " + cfg + ":13:13: checks[1].dns.tls.insecure_skip_verify: true: certificates are not verified"
	if code != 0 || !strings.HasPrefix(strings.TrimSpace(out), "ok\n") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	wl := strings.Split(want, "\n")
	if len(lines) != len(wl) {
		t.Fatalf("got:\n%s\nwant lines starting:\n%s", out, want)
	}
	for i := range wl {
		if !strings.HasPrefix(lines[i], wl[i]) {
			t.Errorf("line %d:\n%s\nwant it to start:\n%s", i+1, lines[i], wl[i])
		}
	}
}

// TestValidateScriptEnvUnset: a script's ${env:NAME} that is not set where
// vigil validate runs is a warning at its key (every run would fail with
// "environment variable NAME is not set"); set, none.
func TestValidateScriptEnvUnset(t *testing.T) {
	cfg := writeConfig(t, `targets: [{name: o, url: "http://127.0.0.1:1"}]
checks:
  - name: login
    targets: [o]
    script:
      - http: {method: POST, path: /login, json: {user: demo, password: "${env:VIGIL_TEST_UNSET_PW}"}}
`)
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "ok\nwarning: " + cfg + `:6:63: checks[0].script[0].http.json.password: ${env:VIGIL_TEST_UNSET_PW}: environment variable not set where vigil validate runs: every run of the check fails with "environment variable VIGIL_TEST_UNSET_PW is not set" until the agent's environment sets it`
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d:\n%s\nwant:\n%s", code, out, want)
	}
	t.Setenv("VIGIL_TEST_UNSET_PW", "s3cret")
	if out, code := runCLI(t, "validate", "-c", cfg); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("set: exit %d:\n%s", code, out)
	}
}

// TestValidateShortAdminToken: an admin token under 16 characters is a
// warning that never shows it; a long one, or none, is not.
func TestValidateShortAdminToken(t *testing.T) {
	body := "agent: {admin_token: %s}\ntargets: [{name: a, url: \"http://127.0.0.1:9\"}]\nchecks: [{name: c, targets: [a]}]\n"
	cfg := writeConfig(t, fmt.Sprintf(body, "abc"))
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "ok\nwarning: " + cfg + ":1:9: agent.admin_token: shorter than 16 characters: easy to guess; use 16 or more random characters"
	if code != 0 || !strings.HasPrefix(out, want) || strings.Contains(out, "abc") {
		t.Errorf("exit %d:\n%s\nwant it to start:\n%s", code, out, want)
	}
	for _, tok := range []string{"0123456789abcdef0123", `""`} {
		cfg := writeConfig(t, fmt.Sprintf(body, tok))
		if out, code := runCLI(t, "validate", "-c", cfg); code != 0 || out != "ok\n" {
			t.Errorf("admin_token %s: exit %d %q, want ok alone", tok, code, out)
		}
	}
}
