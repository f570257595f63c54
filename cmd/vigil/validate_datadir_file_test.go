//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestValidateDataDirUnderAFileSaysWhatRunSays: a data_dir below a regular
// file (afile/sub) is refused by validate with the message `vigil run`
// gives for it ("open afile/sub: not a directory"), as the README
// promises, not with the name of another system call.
func TestValidateDataDirUnderAFileSaysWhatRunSays(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "afile"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, dataDir := range []string{
		filepath.Join(dir, "afile", "sub"),
		"afile/sub",
		"afile/sub/deeper",
	} {
		t.Run(dataDir, func(t *testing.T) {
			cfg := writeConfig(t, healthzConfig(dataDir, o.URL()))
			runOut, code := runCLIWithin(t, 10*time.Second, "run", "-c", cfg)
			want := "agent.data_dir: open " + dataDir + ": not a directory"
			if code != 1 || !strings.Contains(runOut, want) {
				t.Fatalf("vigil run: exit %d, output:\n%s\nwant exit 1 and %q", code, runOut, want)
			}
			out, code := runCLI(t, "validate", "-c", cfg)
			if code != 2 || !strings.Contains(out, cfg+":2:23: "+want) {
				t.Errorf("vigil validate: exit %d, output:\n%s\nwant exit 2 and %q", code, out, cfg+":2:23: "+want)
			}
		})
	}
}
