package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeStoreBlockTokenMayBeEmpty: the README's "Storing verdicts"
// block says store.influxdb.token may be empty (InfluxDB 1.8 without
// auth). Copied as it is, with INFLUX_TOKEN set to "" or not set, it
// validates (exit 0, ok), and with a token too.
func TestReadmeStoreBlockTokenMayBeEmpty(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const marker = "# vigil.db and outbox/ live here"
	i := strings.Index(string(readme), marker)
	if i < 0 {
		t.Fatalf("README.md has no block with %q", marker)
	}
	start := strings.LastIndex(string(readme[:i]), "```yaml\n")
	end := strings.Index(string(readme[i:]), "```\n")
	if start < 0 || end < 0 {
		t.Fatalf("README.md: no ```yaml block around %q", marker)
	}
	block := string(readme[start+len("```yaml\n") : i+end])
	if !strings.Contains(block, "or empty") {
		t.Fatalf("the README block no longer says the token may be empty; this test checks that promise:\n%s", block)
	}
	cfg := writeConfig(t, block+fmt.Sprintf(`targets: [{name: a, url: %s}]
checks: [{name: h, targets: [a], http: {path: /healthz}}]
`, "http://127.0.0.1:1"))
	t.Chdir(t.TempDir()) // data_dir: ./vigil-data
	for _, tc := range []struct {
		name  string
		set   bool
		token string
	}{{"INFLUX_TOKEN empty", true, ""}, {"INFLUX_TOKEN unset", false, ""}, {"INFLUX_TOKEN set", true, "t0ken"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("INFLUX_TOKEN", tc.token) // restored after the test
			if !tc.set {
				os.Unsetenv("INFLUX_TOKEN")
			}
			out, code := runCLI(t, "validate", "-c", cfg)
			if code != 0 || !strings.Contains(out, "ok\n") {
				t.Errorf("README store block, %s: exit %d, output:\n%s\nwant exit 0 and ok", tc.name, code, out)
			}
		})
	}
}
