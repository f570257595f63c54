package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// warnFile writes a config with a warning about a check (TLS not
// verified) and one about alerting (no receivers), and returns its path.
func warnFile(t *testing.T, url string) string {
	return writeConfig(t, fmt.Sprintf(`targets: [{name: web, url: %q}]
checks:
  - name: hz
    targets: [web]
    http: {path: /healthz, tls: {insecure_skip_verify: true}}
slos:
  - {name: avail, check: hz, objective: 99.9%%}
alerting:
  down: {for: 2m}
  receivers: []
`, url))
}

var (
	tlsWarning      = regexp.MustCompile(`(?m)^warning: \S+vigil\.yaml:5:34: checks\[0\]\.http\.tls\.insecure_skip_verify: true: certificates are not verified`)
	receiverWarning = regexp.MustCompile(`(?m)^warning: \S+vigil\.yaml:10: alerting\.receivers: none: `)
	logWarning      = regexp.MustCompile(`(?m)WARN|level=`)
)

// TestOneShotWarningFormat: vigil check, vigil grafana and vigil alerter
// --prometheus-rules print the file's warnings as vigil validate does,
// "warning: FILE:LINE: key: …", each once, never as log lines; vigil check
// prints only those about what a check run uses (not that alerting has no
// receivers: it sends no alert).
func TestOneShotWarningFormat(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	cfg := warnFile(t, o.URL())

	out, code := runCLI(t, "validate", cfg)
	if code != 0 || !tlsWarning.MatchString(out) || !receiverWarning.MatchString(out) {
		t.Fatalf("vigil validate: exit %d, want both warnings:\n%s", code, out)
	}

	out, code = runCLI(t, "check", "-c", cfg)
	if code != 0 || len(tlsWarning.FindAllString(out, -1)) != 1 || receiverWarning.MatchString(out) || logWarning.MatchString(out) {
		t.Errorf("vigil check: exit %d, want the TLS warning once as validate prints it, and not the one about receivers:\n%s", code, out)
	}

	out, code = runCLI(t, "grafana", "-c", cfg, "--out", t.TempDir(), "--bucket", "vigil")
	if code != 0 || len(receiverWarning.FindAllString(out, -1)) != 1 || logWarning.MatchString(out) {
		t.Errorf("vigil grafana: exit %d, want the receivers warning once as validate prints it:\n%s", code, out)
	}

	// --prometheus-rules in a process of its own: its warnings go to the
	// process's stderr.
	bin := buildVigil(t, t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "alerter", "-c", cfg, "--prometheus-rules")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("vigil alerter --prometheus-rules: %v\n%s", err, stderr.String())
	}
	if e := stderr.String(); len(receiverWarning.FindAllString(e, -1)) != 1 || logWarning.MatchString(e) || !strings.Contains(stdout.String(), "groups:") {
		t.Errorf("vigil alerter --prometheus-rules: stderr:\n%s\nwant the receivers warning once as validate prints it (and the rules on stdout)", e)
	}
}

// TestCheckRunWarningsFormat: what vigil check logs while it runs (its
// browser) is printed as its config warnings are, "warning: …", not as a
// log line with a time and a level, and nothing below Warn.
func TestCheckRunWarningsFormat(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(newWarnHandler(&b)).With("exec_path", "/usr/bin/chromium")
	log.Info("browser started", "pid", 42)
	log.Warn("browser exited", "pid", 42, "err", "signal: killed")
	log.WithGroup("pool").Error("no browser", "slots", 2)
	want := "warning: browser exited exec_path=/usr/bin/chromium pid=42 err=\"signal: killed\"\n" +
		"error: no browser exec_path=/usr/bin/chromium pool.slots=2\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
