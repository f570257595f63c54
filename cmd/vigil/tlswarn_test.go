package main

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
)

const insecureTLSConfig = `
targets: [{name: o, url: "https://127.0.0.1:1"}]
checks:
  - {name: plain, targets: [o], http: {path: /}}
  - {name: old, targets: [o], tls: {min_version: "1.0"}}
  - {name: selfsigned, targets: [o], http: {path: /, tls: {insecure_skip_verify: true, min_version: "1.1"}}}
  - name: flow
    targets: [o]
    script:
      - http: {path: /login, tls: {insecure_skip_verify: true}}
  - {name: smtps, targets: [o], tcp: {tls: {insecure_skip_verify: true}}}
`

// insecureTLSWarnings are the warnings insecureTLSConfig gets, after
// "FILE:": each at the line and column of its key.
var insecureTLSWarnings = []string{
	`5:37: checks[1].tls.min_version: "1.0": TLS 1.0 is accepted, which is deprecated (RFC 8996)`,
	`6:60: checks[2].http.tls.insecure_skip_verify: true: certificates are not verified`,
	`6:88: checks[2].http.tls.min_version: "1.1": TLS 1.1 is accepted, which is deprecated (RFC 8996)`,
	`10:36: checks[3].script[0].http.tls.insecure_skip_verify: true: certificates are not verified`,
	`11:45: checks[4].tcp.tls.insecure_skip_verify: true: certificates are not verified`,
}

// TestValidateWarnsInsecureTLS: insecure_skip_verify and a min_version
// below 1.2 are accepted (exit 0) with a warning naming each key.
func TestValidateWarnsInsecureTLS(t *testing.T) {
	cfg := writeConfig(t, insecureTLSConfig)
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "ok"
	for _, w := range insecureTLSWarnings {
		want += "\nwarning: " + cfg + ":" + w
	}
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d:\n%s\nwant exit 0:\n%s", code, out, want)
	}
	plain := writeConfig(t, `
targets: [{name: o, url: "https://127.0.0.1:1"}]
checks: [{name: a, targets: [o], http: {path: /, tls: {min_version: "1.3"}}}, {name: b, targets: [o], tls: {}}]
`)
	if out, code := runCLI(t, "validate", "-c", plain); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("secure TLS settings: exit %d: %s", code, out)
	}
}

// TestRunLogsInsecureTLS: `vigil run` loads its file after making its
// logger the default, so the same warnings reach its log.
func TestRunLogsInsecureTLS(t *testing.T) {
	cfg := writeConfig(t, insecureTLSConfig)
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	if _, err := loadConfig(cfg, os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	for _, w := range insecureTLSWarnings {
		if !strings.Contains(buf.String(), "level=WARN msg=\""+strings.ReplaceAll(cfg+":"+w, `"`, `\"`)+"\"") {
			t.Errorf("log lacks the warning %q:\n%s", w, buf.String())
		}
	}
}
