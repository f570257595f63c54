package scripts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestSaveArtifactReturnsNameUnderArtifactsDir: the reference a failure
// screenshot is stored under is its bare file name, which the status page
// serves at /artifacts/NAME; the file and its sidecar lie in
// <data_dir>/artifacts.
func TestSaveArtifactReturnsNameUnderArtifactsDir(t *testing.T) {
	for _, dataDir := range []string{t.TempDir(), "rel-data"} {
		t.Run(dataDir, func(t *testing.T) {
			if !filepath.IsAbs(dataDir) {
				t.Chdir(t.TempDir())
			}
			r := &run{runner: &Runner{o: Options{Check: "shop flow", DataDir: dataDir}}, target: checks.Target{Name: "eu/1"}}
			name, err := r.saveArtifact([]byte("\x89PNG fake"), "")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(name, "shop_flow-eu_1-") || !strings.HasSuffix(name, ".png") || strings.ContainsAny(name, `/\`) {
				t.Fatalf("reference %q, want a bare file name shop_flow-eu_1-<ts>.png", name)
			}
			if b, err := os.ReadFile(filepath.Join(dataDir, "artifacts", name)); err != nil || string(b) != "\x89PNG fake" {
				t.Fatalf("screenshot not at <data_dir>/artifacts/%s: %v", name, err)
			}
			if err := r.saveSidecar(name, failureInfo{Check: "shop flow"}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dataDir, "artifacts", strings.TrimSuffix(name, ".png")+".json")); err != nil {
				t.Fatalf("sidecar: %v", err)
			}
		})
	}
	r := &run{runner: &Runner{o: Options{Check: "c"}}}
	if name, err := r.saveArtifact([]byte("x"), ""); name != "" || err != nil {
		t.Errorf("without a data dir: %q, %v; want nothing written", name, err)
	}
}
