//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestValidateRootDataDirOwnerIsAWarning: `vigil validate` run as root
// accepts (exit 0, ok) a data dir that only vigil running as root refuses
// (owned by the service user; below a checkout or working directory
// another uid owns, the default ./vigil-data included), and prints run's
// message as a warning saying root refuses it: what validate finds there
// depends on who runs it and from where, not on the file. A symbolic link
// is still an error (exit 2).
func TestValidateRootDataDirOwnerIsAWarning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root: the ownership rules only apply to vigil running as root, and only root can give a directory to another user")
	}
	o := checktest.NewOrigin()
	defer o.Close()
	const nobody = 65534
	chownedDir := func(t *testing.T, path string) {
		t.Helper()
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	noDataDir := fmt.Sprintf(`
targets: [{name: a, url: %s}]
checks: [{name: healthz, targets: [a], http: {path: /healthz}}]
`, o.URL())

	t.Run("data dir owned by the service user", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "vigil")
		chownedDir(t, dir)
		cfg := writeConfig(t, healthzConfig(dir, o.URL()))
		runOut, code := runCLIWithin(t, 10*time.Second, "run", "-c", cfg)
		_, runMsg, found := strings.Cut(runOut, "agent.data_dir: ")
		if code != 1 || !found || !strings.Contains(runMsg, dir+" is owned by ") {
			t.Fatalf("vigil run as root: exit %d, output:\n%s\nwant exit 1 refusing %s", code, runOut, dir)
		}
		runMsg = strings.TrimSpace(runMsg)
		out, code := runCLI(t, "validate", "-c", cfg)
		want := "warning: " + cfg + ":2:23: agent.data_dir: refused when vigil runs as root: " + runMsg
		if code != 0 || !strings.Contains(out, "ok\n") || !strings.Contains(out, want) {
			t.Errorf("vigil validate: exit %d, output:\n%s\nwant exit 0, ok and %q", code, out, want)
		}
	})

	t.Run("default ./vigil-data in a directory another user owns", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "alice")
		chownedDir(t, home)
		cfg := writeConfig(t, noDataDir)
		t.Chdir(home)
		out, code := runCLI(t, "validate", "-c", cfg)
		want := "warning: " + cfg + ": agent.data_dir: refused when vigil runs as root: vigil-data is inside " + home + ", which another user owns (owner "
		if code != 0 || !strings.Contains(out, "ok\n") || !strings.Contains(out, want) {
			t.Errorf("vigil validate: exit %d, output:\n%s\nwant exit 0, ok and %q", code, out, want)
		}
	})

	t.Run("symbolic link in a directory another user owns", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "checkout")
		chownedDir(t, parent)
		if err := os.Mkdir(filepath.Join(parent, "real"), 0o700); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(parent, "data")
		if err := os.Symlink("real", link); err != nil {
			t.Fatal(err)
		}
		cfg := writeConfig(t, healthzConfig(link, o.URL()))
		out, code := runCLI(t, "validate", "-c", cfg)
		want := cfg + ":2:23: agent.data_dir: " + link + " is a symbolic link to real; vigil does not follow it"
		if code != 2 || strings.Contains(out, "ok\n") || !strings.Contains(out, want) {
			t.Errorf("vigil validate: exit %d, output:\n%s\nwant exit 2 and %q", code, out, want)
		}
	})
}
