package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// influxConfig is a one-check config storing in InfluxDB at url with token
// (none when empty).
func influxConfig(dataDir, url, token string) string {
	tok := ""
	if token != "" {
		tok = fmt.Sprintf(", token: %q", token)
	}
	return fmt.Sprintf(`
agent: {region: test, data_dir: %s}
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - {name: healthz, targets: [a], http: {path: /healthz}}
store:
  influxdb: {url: %q%s, org: o, bucket: b}
`, dataDir, url, tok)
}

// TestInfluxTokenWarning: `vigil validate` warns (exit 0, still ok) when
// store.influxdb sends a token over http to a host that is not loopback,
// naming the key and saying the token travels unencrypted, and never
// printing the token. https, a loopback host or no token is silent.
func TestInfluxTokenWarning(t *testing.T) {
	const token = "s3cret-influx-token"
	for _, tc := range []struct {
		url, token string
		warn       bool
	}{
		{"http://influx.example:8086", token, true},
		{"http://10.0.0.5:8086", token, true},
		{"http://user:pw@influx.example:8086/", token, true},
		{"http://[2001:db8::1]:8086", token, true},
		{"http://localhost.example:8086", token, true},
		{"http://127.1.2.3.example:8086", token, true},
		{"https://influx.example:8086", token, false},
		{"HTTPS://influx.example:8086", token, false},
		{"http://influx.example:8086", "", false},
		{"http://127.0.0.1:8086", token, false},
		{"http://127.9.9.9:8086", token, false},
		{"http://[::1]:8086", token, false},
		{"http://localhost:8086", token, false},
		{"http://LocalHost:8086", token, false},
	} {
		t.Run(tc.url+" token="+fmt.Sprint(tc.token != ""), func(t *testing.T) {
			cfg := writeConfig(t, influxConfig(t.TempDir(), tc.url, tc.token))
			out, code := runCLI(t, "validate", "-c", cfg)
			if code != 0 || !strings.Contains(out, "ok") {
				t.Fatalf("vigil validate: exit %d, want 0 and ok:\n%s", code, out)
			}
			want := "warning: " + cfg + ":7:14: store.influxdb.url: "
			if got := strings.Contains(out, want) && strings.Contains(out, "the token travels unencrypted"); got != tc.warn {
				t.Errorf("vigil validate warns about the token: %v, want %v:\n%s", got, tc.warn, out)
			}
			if strings.Contains(out, token) || strings.Contains(out, "user:pw") {
				t.Errorf("vigil validate printed a secret:\n%s", out)
			}
		})
	}
}

// TestInfluxTokenWarningRunLog: `vigil run` logs the same warning when it
// loads the file. The run is stopped before it sends anything (its data dir
// is a file, which it refuses next), so no request leaves 127.0.0.1.
func TestInfluxTokenWarningRunLog(t *testing.T) {
	bin := buildVigil(t, t.TempDir())
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, influxConfig(notDir, "http://influx.example:8086", "s3cret-influx-token"))
	out, err := exec.Command(bin, "run", "-c", cfg).CombinedOutput()
	if err == nil {
		t.Fatalf("vigil run with a file as data dir exited 0:\n%s", out)
	}
	var warn string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, cfg+":7:14: store.influxdb.url: ") {
			warn = l
		}
	}
	if warn == "" || !strings.Contains(warn, "the token travels unencrypted") {
		t.Errorf("vigil run logged no warning naming store.influxdb.url and the unencrypted token:\n%s", out)
	}
	if strings.Contains(string(out), "s3cret-influx-token") {
		t.Errorf("vigil run logged the token:\n%s", out)
	}
	if !strings.Contains(string(out), "agent.data_dir") {
		t.Errorf("vigil run did not stop at agent.data_dir:\n%s", out)
	}
}
