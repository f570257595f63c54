package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// credSecrets are the secrets the credential warnings' configs and
// command lines hold: no output may show one.
var credSecrets = []string{"AmPassword1", "PdKey12345", "SlackSecret9", "HookPass7", "HookTok3n", "CanaryPw9", "CanaryTok9"}

func noCredSecret(t *testing.T, what, out string) {
	t.Helper()
	for _, s := range credSecrets {
		if strings.Contains(out, s) {
			t.Errorf("%s shows the secret %q:\n%s", what, s, out)
		}
	}
}

// credReceivers is an alerting section whose every receiver would send a
// credential over plain http to a host that is not loopback, and one
// (an Alertmanager on 127.0.0.1) that would not.
const credReceivers = `alerting:
  receivers:
    - {name: am, alertmanager: {url: "http://amuser:AmPassword1@am.example.com:9093/"}}
    - {name: pd, pagerduty: {routing_key: PdKey12345, url: "http://pd.example.com/v2/enqueue"}}
    - {name: sl, slack: {url: "http://hooks.slack.example/services/T0/B0/SlackSecret9"}}
    - {name: wh, webhook: {url: "http://hookuser:HookPass7@hooks.example.com/x"}}
    - {name: wq, webhook: {url: "http://hooks.example.com/x?token=HookTok3n"}}
    - {name: local, alertmanager: {url: "http://amuser:AmPassword1@127.0.0.1:9093/"}}
`

// credWarnings are the warnings credReceivers gives, after "FILE:".
var credWarnings = []string{
	`5:33: alerting.receivers[0].alertmanager.url: http, not https: its user and password (the URL's user info, sent as basic auth) travel unencrypted to am.example.com; use https, or a loopback address for a receiver on this host`,
	`6:55: alerting.receivers[1].pagerduty.url: http, not https: its routing_key travels unencrypted to pd.example.com; use https, or a loopback address for a receiver on this host`,
	`7:26: alerting.receivers[2].slack.url: http, not https: its URL path (a Slack webhook's path is its secret) travels unencrypted to hooks.slack.example; use https, or a loopback address for a receiver on this host`,
	`8:28: alerting.receivers[3].webhook.url: http, not https: its user and password (the URL's user info, sent as basic auth) travel unencrypted to hooks.example.com; use https, or a loopback address for a receiver on this host`,
	`9:28: alerting.receivers[4].webhook.url: http, not https: its query string (a token in it) travels unencrypted to hooks.example.com; use https, or a loopback address for a receiver on this host`,
}

// TestValidateReceiverCredentialWarnings: `vigil validate` warns, at the
// line of the url, about each receiver that would send a credential over
// plain http to another host (Alertmanager user info, a PagerDuty
// routing_key, a Slack webhook URL, a webhook's user info or query
// token), never showing it; not about the loopback one.
func TestValidateReceiverCredentialWarnings(t *testing.T) {
	cfg := writeConfig(t, "targets: [{name: o, url: \"http://127.0.0.1:1\"}]\nchecks: [{name: a, targets: [o], http: {path: /}}]\n"+credReceivers)
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "ok"
	for _, w := range credWarnings {
		want += "\nwarning: " + cfg + ":" + w
	}
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d:\n%s\nwant exit 0 and:\n%s", code, out, want)
	}
	noCredSecret(t, "vigil validate", out)
}

// TestCredentialWarningsAtStart: `vigil run` logs the receivers'
// warnings when it loads the file, and `vigil proxy` warns about a
// --verdicts-from URL whose password and token are on the command line
// (every user reads it in ps) and go over plain http, naming
// VIGIL_VERDICTS_FROM; the same URL from VIGIL_VERDICTS_FROM gets the
// http warning only. Both runs stop before they send anything (a file as
// the data dir; a file without a proxy section), so no request leaves
// this host.
func TestCredentialWarningsAtStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := buildVigil(t, t.TempDir())
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf("agent: {data_dir: %q}\ntargets: [{name: o, url: \"http://127.0.0.1:1\"}]\n", notDir)+credReceivers)
	out, err := exec.Command(bin, "run", "-c", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "agent.data_dir") {
		t.Fatalf("vigil run with a file as data dir did not stop at agent.data_dir (%v):\n%s", err, out)
	}
	for _, w := range credWarnings {
		if !strings.Contains(string(out), "level=WARN msg=\""+cfg+":"+strings.ReplaceAll(w, `"`, `\"`)) {
			t.Errorf("vigil run logged no warning %q:\n%s", w, out)
		}
	}
	noCredSecret(t, "vigil run", string(out))

	noProxy := writeConfig(t, "targets: [{name: o, url: \"http://127.0.0.1:1\"}]\nchecks: [{name: a, targets: [o], http: {path: /}}]\n")
	const canary = "http://vigil:CanaryPw9@canary.example:9470/?token=CanaryTok9"
	const argvWarn = `--verdicts-from: \"http://canary.example:9470/?token=…\": its password and query string are on the command line, which every user of this host can read (ps, /proc/PID/cmdline); pass the URL in the environment variable VIGIL_VERDICTS_FROM instead`
	const httpWarn = `--verdicts-from: \"http://canary.example:9470/?token=…\": http, not https: its password and query string travel unencrypted to canary.example; use https (--verdicts-from-ca FILE for a private CA), or a loopback address for a canary on this host`
	run := func(env string, args ...string) string {
		t.Helper()
		c := exec.Command(bin, append([]string{"proxy", "-c", noProxy}, args...)...)
		c.Env = append(os.Environ(), "VIGIL_VERDICTS_FROM="+env)
		out, err := c.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "no proxy section") {
			t.Fatalf("vigil proxy on a file without a proxy section: %v, want exit 2:\n%s", err, out)
		}
		noCredSecret(t, "vigil proxy", string(out))
		return string(out)
	}
	out2 := run("", "--verdicts-from", canary)
	if !strings.Contains(out2, argvWarn) || !strings.Contains(out2, httpWarn) {
		t.Errorf("vigil proxy --verdicts-from %s: want the command-line and the http warnings:\n%s", canary, out2)
	}
	out2 = run(canary)
	if strings.Contains(out2, "command line") || !strings.Contains(out2, httpWarn) {
		t.Errorf("VIGIL_VERDICTS_FROM=%s: want the http warning only:\n%s", canary, out2)
	}
	out2 = run("", "--verdicts-from", "https://vigil:CanaryPw9@canary.example:9470/", "--verdicts-from", "http://vigil:CanaryPw9@127.0.0.1:9470/")
	if strings.Count(out2, "is on the command line") != 2 || strings.Contains(out2, "http, not https") {
		t.Errorf("https and loopback --verdicts-from with passwords: want two command-line warnings and no http one:\n%s", out2)
	}
	out2 = run("", "--verdicts-from", "http://canary.example:9470/")
	if strings.Contains(out2, "verdicts-from") {
		t.Errorf("--verdicts-from without a credential: want no warning:\n%s", out2)
	}
}

// TestVerdictsFromEnv: `vigil proxy` reads the canaries of
// VIGIL_VERDICTS_FROM (spaces between them), with the password of the
// URL's user info sent as basic auth; `vigil validate` does not take the
// variable for a misspelled override; a value that is not an http(s) URL
// exits 2 naming the variable, not showing its password.
func TestVerdictsFromEnv(t *testing.T) {
	got := make(chan string, 100)
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		select {
		case got <- r.URL.Path + " " + u + ":" + p:
		default:
		}
		now := time.Now()
		_ = json.NewEncoder(w).Encode([]reporting.Verdict{{Check: "healthz", Target: "a", Region: "eu-west", Vantage: "v1",
			State: reporting.StateHealthy, OK: true, At: now, Expires: now.Add(time.Minute)}})
	}))
	defer canary.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- "other " + r.URL.Path:
		default:
		}
		_, _ = io.WriteString(w, "[]")
	}))
	defer other.Close()
	path := writeConfig(t, fmt.Sprintf(`
agent: {listen: 127.0.0.1:0, data_dir: %q}
targets: [{name: a, url: "http://127.0.0.1:1"}]
proxy:
  listen: 127.0.0.1:0
  verdict_poll: 50ms
  pools: [{name: web, origins: [{target: a}], verdicts: {checks: [healthz]}}]
`, t.TempDir()))
	withPw := strings.Replace(canary.URL, "http://", "http://vigil:CanaryPw9@", 1)
	t.Setenv("VIGIL_VERDICTS_FROM", " "+withPw+"\n"+other.URL+" ")

	if out, code := runCLI(t, "validate", "-c", path); code != 0 || strings.Contains(out, "VIGIL_VERDICTS_FROM") {
		t.Errorf("vigil validate with VIGIL_VERDICTS_FROM set: exit %d:\n%s", code, out)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newRootCmd()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"proxy", "-c", path, "--listen", addr, "--log-level", "error"})
	exited := make(chan error, 1)
	go func() { exited <- cmd.ExecuteContext(ctx) }()
	seen := map[string]bool{}
	deadline := time.After(10 * time.Second)
	for !seen["/api/v1/verdicts vigil:CanaryPw9"] || !seen["other /api/v1/verdicts"] {
		select {
		case s := <-got:
			seen[s] = true
		case err := <-exited:
			t.Fatalf("vigil proxy exited: %v", err)
		case <-deadline:
			t.Fatalf("within 10s the canaries saw %v, want a read of each, the first with its basic auth", seen)
		}
	}
	cancel()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Error("vigil proxy did not stop within 10s")
	}

	t.Setenv("VIGIL_VERDICTS_FROM", "canary.example:CanaryPw9@x")
	out, code := runCLI(t, "proxy", "-c", path)
	if code != 2 || !strings.Contains(out, "VIGIL_VERDICTS_FROM: ") || !strings.Contains(out, "want http(s) URLs of canaries") {
		t.Errorf("VIGIL_VERDICTS_FROM not a URL: exit %d, output %q", code, out)
	}
	noCredSecret(t, "vigil proxy", out)
}
