package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestMinimalExample: examples/minimal.yaml, pointed at a live origin,
// passes `vigil check` as its comment says, and fails it (exit 1) when the
// origin answers 503.
func TestMinimalExample(t *testing.T) {
	raw, err := os.ReadFile("../../examples/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := checktest.NewOrigin()
	defer o.Close()
	if !strings.Contains(string(raw), "http://127.0.0.1:9201/") {
		t.Fatal("examples/minimal.yaml no longer points at http://127.0.0.1:9201/: update this test")
	}
	path := filepath.Join(t.TempDir(), "minimal.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), "http://127.0.0.1:9201/", o.URL()+"/", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := runCLI(t, "check", "-c", path); code != 0 || !strings.Contains(out, "1 passed, 0 failed") {
		t.Errorf("vigil check of the minimal example: exit %d\n%s", code, out)
	}
	if err := o.SetMode(checktest.Mode503); err != nil {
		t.Fatal(err)
	}
	if out, code := runCLI(t, "check", "-c", path); code != 1 || !strings.Contains(out, "status") {
		t.Errorf("vigil check of the minimal example against a 503: exit %d, want 1 with cause status\n%s", code, out)
	}
}
