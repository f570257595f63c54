package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestPermArtifactsPrivate: screenshots (of logged-in pages) and their
// sidecars are 0600 in a 0700 artifacts directory.
func TestPermArtifactsPrivate(t *testing.T) {
	dataDir := t.TempDir()
	r := &run{runner: &Runner{o: Options{Check: "login", DataDir: dataDir}}, target: checks.Target{Name: "app"}}
	name, err := r.saveArtifact([]byte("\x89PNG fake"), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.saveSidecar(name, failureInfo{Check: "login"}); err != nil {
		t.Fatal(err)
	}
	dir := ArtifactsDir(dataDir)
	for _, c := range []struct {
		path string
		want os.FileMode
	}{
		{dir, 0o700},
		{filepath.Join(dir, name), 0o600},
		{filepath.Join(dir, strings.TrimSuffix(name, ".png")+".json"), 0o600},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("%s: mode %#o, want %#o", c.path, got, c.want)
		}
	}
}
