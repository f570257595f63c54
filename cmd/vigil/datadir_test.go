package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestPermDataDir: agent.data_dir is created 0700 with the store and
// artifacts inside it private; a data dir an older version created 0755 is
// tightened to 0700 at start, and the log says so once.
func TestPermDataDir(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprintf("existing=%v", existing), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if existing {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := loadConfig(writeConfig(t, healthzConfig(dir, o.URL())), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			a, err := newApp(cfg, appOptions{roles: roles{canary: true, page: true}, log: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer a.close(context.Background())
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != 0o700 {
				t.Errorf("data dir: mode %#o, want 0700", got)
			}
			if fi, err := os.Stat(filepath.Join(dir, "vigil.db")); err != nil {
				t.Fatal(err)
			} else if got := fi.Mode().Perm(); got != 0o600 {
				t.Errorf("vigil.db: mode %#o, want 0600", got)
			}
			n := strings.Count(logs.String(), "its mode is now 0700")
			if existing && n != 1 {
				t.Errorf("log says %d times that the data dir was tightened, want once:\n%s", n, logs.String())
			}
			if !existing && n != 0 {
				t.Errorf("a new data dir logged a tightening:\n%s", logs.String())
			}
		})
	}
}

// healthzConfig is a one-check config (healthz of target a every second)
// with data_dir dir.
func healthzConfig(dir, url string) string {
	return fmt.Sprintf(`
agent: {region: test, data_dir: %s}
defaults: {interval: 1s, timeout: 500ms}
targets: [{name: a, url: %s}]
checks:
  - {name: healthz, targets: [a], http: {path: /healthz}}
`, dir, url)
}
