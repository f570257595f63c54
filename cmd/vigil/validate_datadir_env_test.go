//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestValidateDataDirNamesEnvOverride: when VIGIL_AGENT_DATA_DIR sets the
// data dir, validate's data_dir error names the variable, as every other
// override error does ("agent.data_dir (from VIGIL_AGENT_DATA_DIR): …"),
// rather than sending the user to the file's data_dir (and its line), which
// is fine. An empty variable leaves the default in place and is not named.
func TestValidateDataDirNamesEnvOverride(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	body := func(dataDir string) string {
		return fmt.Sprintf(`
agent: {data_dir: %q}
targets: [{name: web1, url: %s}]
checks: [{name: a, targets: [web1], http: {path: /}}]
`, dataDir, o.URL())
	}

	t.Run("link from the variable", func(t *testing.T) {
		t.Setenv("VIGIL_AGENT_DATA_DIR", link)
		cfg := writeConfig(t, body(real))
		out, code := runCLI(t, "validate", "-c", cfg)
		want := cfg + ": agent.data_dir (from VIGIL_AGENT_DATA_DIR): " + link + " is a symbolic link to real; vigil does not follow it"
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
		}
	})
	t.Run("link from the file", func(t *testing.T) {
		t.Setenv("VIGIL_AGENT_DATA_DIR", "")
		os.Unsetenv("VIGIL_AGENT_DATA_DIR")
		cfg := writeConfig(t, body(link))
		out, code := runCLI(t, "validate", "-c", cfg)
		want := cfg + ":2:9: agent.data_dir: " + link + " is a symbolic link to real"
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
		}
	})
	t.Run("empty variable: the default applies", func(t *testing.T) {
		t.Setenv("VIGIL_AGENT_DATA_DIR", "")
		t.Chdir(dir)
		if err := os.WriteFile(filepath.Join(dir, "vigil-data"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(filepath.Join(dir, "vigil-data"))
		cfg := writeConfig(t, body(real))
		out, code := runCLI(t, "validate", "-c", cfg)
		want := cfg + ": agent.data_dir: open vigil-data: not a directory"
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
		}
	})
	if os.Geteuid() == 0 {
		t.Run("root warning from the variable", func(t *testing.T) {
			owned := filepath.Join(dir, "owned")
			if err := os.Mkdir(owned, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(owned, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			t.Setenv("VIGIL_AGENT_DATA_DIR", owned)
			cfg := writeConfig(t, body(real))
			out, code := runCLI(t, "validate", "-c", cfg)
			want := "warning: " + cfg + ": agent.data_dir (from VIGIL_AGENT_DATA_DIR): refused when vigil runs as root: " + owned + " is owned by "
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("exit %d, output:\n%s\nwant exit 0 and %q", code, out, want)
			}
		})
	}
}
