package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateInfluxAlertTLS: store.influxdb.tls and
// alerting.receivers[].tls are read from the file; insecure_skip_verify is
// a warning (exit 0) naming its key and line, which vigil run logs at
// start, and a bad ca_file an error naming the key and the file.
func TestValidateInfluxAlertTLS(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	insecure := writeConfig(t, `
store:
  influxdb:
    url: https://influx.internal:8086
    bucket: vigil/autogen
    tls: {insecure_skip_verify: true}
alerting:
  receivers:
    - {name: wh, webhook: {url: "https://hooks.internal/x"}, tls: {insecure_skip_verify: true}}
`)
	out, code := runCLI(t, "validate", "-c", insecure)
	want := []string{
		"warning: " + insecure + ":6:",
		"store.influxdb.tls.insecure_skip_verify: true: certificates are not verified",
		"warning: " + insecure + ":9:",
		"alerting.receivers[0].tls.insecure_skip_verify: true: certificates are not verified",
	}
	for _, w := range want {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("validate: exit %d:\n%s\nwant exit 0 and %q", code, out, w)
		}
	}

	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	if _, err := loadConfig(insecure, os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"store.influxdb.tls.insecure_skip_verify: true", "alerting.receivers[0].tls.insecure_skip_verify: true"} {
		if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), w) {
			t.Errorf("start-up log lacks %q:\n%s", w, buf.String())
		}
	}

	bad := writeConfig(t, `
store:
  influxdb:
    url: https://influx.internal:8086
    bucket: vigil/autogen
    tls: {ca_file: `+notPEM+`, server_name: influx.internal}
alerting:
  receivers:
    - {name: wh, webhook: {url: "https://hooks.internal/x"}, tls: {ca_file: `+filepath.Join(dir, "missing.pem")+`}}
    - {name: am, alertmanager: {url: "https://am.internal:9093"}, tls: {cert_file: `+notPEM+`}}
`)
	out, code = runCLI(t, "validate", "-c", bad)
	for _, w := range []string{
		"store.influxdb.tls.ca_file: " + notPEM + ": no PEM certificate found",
		"alerting.receivers[0].tls.ca_file: open " + filepath.Join(dir, "missing.pem") + ": no such file or directory",
		"alerting.receivers[1].tls.key_file: required with cert_file",
	} {
		if code != 2 || !strings.Contains(out, w) {
			t.Errorf("validate: exit %d:\n%s\nwant exit 2 and %q", code, out, w)
		}
	}
}
