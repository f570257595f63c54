package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/reporting/tlsclient/tlstest"
)

// permSecrets are the secrets permConfig writes.
var permSecrets = []string{"BasicPw12345", "UrlPw98765", "PdKey12345", "HbSecret4242"}

// permConfig is a file that writes a basic_auth password, a URL password,
// a PagerDuty routing_key and a heartbeat URL (lines 5, 7, 12 and 13), or
// ${NAME} references to them with refs.
func permConfig(refs bool) string {
	s := `targets: [{name: o, url: "http://127.0.0.1:1"}]
checks:
  - name: a
    targets: [o]
    http: {path: /, basic_auth: {username: u, password: "BasicPw12345"}}
  - name: b
    url: "http://u2:UrlPw98765@127.0.0.1:2/"
    http: {path: /}
alerting:
  receivers:
    - name: pd
      pagerduty: {routing_key: "PdKey12345"}
  heartbeat: {url: "https://hc.example/ping/HbSecret4242"}
`
	if refs {
		s = strings.NewReplacer("BasicPw12345", "${PERM_BASIC_PW}", "UrlPw98765", "${PERM_URL_PW}", "PdKey12345", "${PERM_PD_KEY}",
			"https://hc.example/ping/HbSecret4242", "${PERM_HB_URL}").Replace(s)
	}
	return s
}

func writeMode(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // whatever the umask
		t.Fatal(err)
	}
}

// TestValidateWorldReadableSecrets: a config file readable by group or
// others that writes secrets (a basic_auth password, a URL password, a
// routing_key) is a `vigil validate` warning naming the file, its mode,
// the lines and `chmod 600`, never a secret; a 0600 file, and a 0644 one
// whose secrets are ${NAME} references (set in the environment), are not.
func TestValidateWorldReadableSecrets(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits say nothing on Windows")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "vigil.yaml")
	for _, tc := range []struct {
		mode FileMode
		refs bool
		want string // "" no warning
	}{
		{0o644, false, "warning: " + cfg + ": mode 0644: readable by group and others, and it holds secrets written in it (lines 5, 7, 12, 13); chmod 600 " + cfg + ", or write them as ${NAME} references to the environment"},
		{0o604, false, "warning: " + cfg + ": mode 0604: readable by every user of this host, and it holds secrets written in it (lines 5, 7, 12, 13); chmod 600 " + cfg},
		{0o640, false, "warning: " + cfg + ": mode 0640: readable by its group, and it holds secrets written in it (lines 5, 7, 12, 13); chmod 600 " + cfg},
		{0o600, false, ""},
		{0o400, false, ""},
		{0o644, true, ""},
	} {
		t.Run(fmt.Sprintf("%04o refs=%v", tc.mode, tc.refs), func(t *testing.T) {
			if tc.refs {
				t.Setenv("PERM_BASIC_PW", "BasicPw12345")
				t.Setenv("PERM_URL_PW", "UrlPw98765")
				t.Setenv("PERM_PD_KEY", "PdKey12345")
				t.Setenv("PERM_HB_URL", "https://hc.example/ping/HbSecret4242")
			}
			writeMode(t, cfg, permConfig(tc.refs), os.FileMode(tc.mode))
			out, code := runCLI(t, "validate", "-c", cfg)
			if code != 0 || !strings.HasPrefix(out, "ok\n") {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			if got := strings.Contains(out, "mode 0"); got != (tc.want != "") || !strings.Contains(out, tc.want) {
				t.Errorf("output:\n%s\nwant it to hold:\n%s", out, orNone(tc.want, "no mode warning"))
			}
			for _, s := range permSecrets {
				if strings.Contains(out, s) {
					t.Errorf("vigil validate shows the secret %q:\n%s", s, out)
				}
			}
		})
	}
}

// FileMode keeps the table above short.
type FileMode = uint32

func orNone(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}

// TestValidateReadableKeyFiles: a private key file any user of the host
// may read (mode 0644) is a warning at its key_file, wherever the file
// names one: the proxy's TLS listener, a check's client certificate, a
// receiver's; 0640 (a group) and 0600 are not.
func TestValidateReadableKeyFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits say nothing on Windows")
	}
	ca := tlstest.New(t)
	dir := t.TempDir()
	keys := map[string]string{}
	for _, name := range []string{"server", "check", "receiver"} {
		src := ca.ClientKeyFile
		if name == "server" {
			src = ca.ServerKeyFile
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = filepath.Join(dir, name+".key")
		writeMode(t, keys[name], string(b), 0o600)
	}
	cfg := writeConfig(t, fmt.Sprintf(`targets: [{name: o, url: "https://127.0.0.1:1"}]
checks:
  - name: a
    targets: [o]
    http: {path: /, tls: {cert_file: %q, key_file: %q}}
proxy:
  listen: 127.0.0.1:0
  tls_listen: 127.0.0.1:0
  cert_file: %q
  key_file: %q
  pools: [{name: web, origins: [{target: o}]}]
alerting:
  receivers:
    - name: am
      alertmanager: {url: "https://127.0.0.1:9093"}
      tls: {cert_file: %q, key_file: %q}
`, ca.ClientCertFile, keys["check"], ca.ServerCertFile, keys["server"], ca.ClientCertFile, keys["receiver"]))
	// The line of each key_file (its column depends on the paths' length).
	line := map[string]string{"check": ":5:", "server": ":10:", "receiver": ":16:"}
	key := map[string]string{"check": "checks[0].http.tls.key_file", "server": "proxy.key_file", "receiver": "alerting.receivers[0].tls.key_file"}
	for _, mode := range []os.FileMode{0o644, 0o604, 0o640, 0o600} {
		for _, k := range keys {
			if err := os.Chmod(k, mode); err != nil {
				t.Fatal(err)
			}
		}
		out, code := runCLI(t, "validate", "-c", cfg)
		if code != 0 {
			t.Fatalf("mode %04o: exit %d:\n%s", mode, code, out)
		}
		readable := mode&0o004 != 0
		if got := strings.Count(out, "the private key is readable by every user"); readable && got != 3 || !readable && got != 0 {
			t.Errorf("mode %04o: %d key warnings, want 3 for a mode others may read, else 0:\n%s", mode, got, out)
		}
		if !readable {
			continue
		}
		for name, k := range keys {
			rest := fmt.Sprintf(" %s: %q: mode %04o: the private key is readable by every user of this host; chmod 600 %s (or 640 with a group only vigil's user is in)\n",
				key[name], k, mode, k)
			found := false
			for _, l := range strings.SplitAfter(out, "\n") {
				found = found || strings.HasPrefix(l, "warning: "+cfg+line[name]) && strings.HasSuffix(l, rest)
			}
			if !found {
				t.Errorf("mode %04o: no warning at %s%s ending %q:\n%s", mode, cfg, line[name], rest, out)
			}
		}
	}
}

// TestWorldReadableSecretsRunLog: `vigil run` logs the config file's
// warning when it loads the file. The run stops before it sends anything
// (its data dir is a file, which it refuses next).
func TestWorldReadableSecretsRunLog(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits say nothing on Windows")
	}
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short mode")
	}
	bin := buildVigil(t, t.TempDir())
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "vigil.yaml")
	writeMode(t, cfg, permConfig(false)+fmt.Sprintf("agent: {data_dir: %q}\n", notDir), 0o644)
	out, err := exec.Command(bin, "run", "-c", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "agent.data_dir") {
		t.Fatalf("vigil run with a file as data dir did not stop at agent.data_dir (%v):\n%s", err, out)
	}
	want := `level=WARN msg="` + cfg + `: mode 0644: readable by group and others, and it holds secrets written in it (lines 5, 7, 12, 13); chmod 600 ` + cfg
	if !strings.Contains(string(out), want) {
		t.Errorf("vigil run logged no warning %q:\n%s", want, out)
	}
	for _, s := range permSecrets {
		if strings.Contains(string(out), s) {
			t.Errorf("vigil run logged the secret %q:\n%s", s, out)
		}
	}
}
