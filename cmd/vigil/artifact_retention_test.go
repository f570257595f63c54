package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Failure artifacts are kept as long as the embedded store keeps verdicts:
// with store.embedded.retention: 48h a browser run's sweep deletes a
// 3-day-old screenshot (and its note) and keeps a 1-day-old one; with the
// default retention (7 days) both stay. Both `vigil check` and the agent
// sweep. The browser is a program that does not exist, so the runs fail
// with browser_unavailable after sweeping and no Chromium is needed.
func TestArtifactRetentionFollowsStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()

	stamp := func(age time.Duration) string {
		return time.Now().Add(-age).UTC().Format("20060102T150405.000000000Z")
	}
	for _, tc := range []struct {
		name, store string
		oldKept     bool
	}{
		{"retention 48h", "store: {embedded: {retention: 48h}}", false},
		{"default retention", "", true},
	} {
		for _, how := range []string{"check", "agent"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				dir := t.TempDir()
				data := filepath.Join(dir, "data")
				arts := filepath.Join(data, "artifacts")
				if err := os.MkdirAll(arts, 0o700); err != nil {
					t.Fatal(err)
				}
				old := "shot~o~" + stamp(72*time.Hour)
				young := "shot~o~" + stamp(24*time.Hour)
				for _, n := range []string{old + ".png", old + ".json", young + ".png", young + ".json"} {
					if err := os.WriteFile(filepath.Join(arts, n), []byte("x"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				path := writeConfig(t, fmt.Sprintf(`
agent: {data_dir: %q, browser: {exec_path: %q}}
%s
targets: [{name: o, url: %q}]
checks:
  - name: shot
    targets: [o]
    interval: 1s
    timeout: 900ms
    script:
      - browser: {navigate: /}
`, data, filepath.Join(dir, "no-such-chromium"), tc.store, dead))

				switch how {
				case "check":
					out, code := runCLI(t, "check", "-c", path)
					if code != 1 || !strings.Contains(out, "browser_unavailable") {
						t.Fatalf("vigil check: exit %d, want 1 with browser_unavailable:\n%s", code, out)
					}
				case "agent":
					a, stop := startApp(t, path, roles{canary: true, page: true})
					base := "http://" + a.Addr()
					waitFor(t, 15*time.Second, "a verdict of check shot", func() bool {
						_, ok := find(verdictsOf(t, base), "shot", "o")
						return ok
					})
					stop()
				}
				for _, n := range []string{old + ".png", old + ".json"} {
					_, err := os.Stat(filepath.Join(arts, n))
					if kept := err == nil; kept != tc.oldKept {
						t.Errorf("3-day-old %s: kept %v, want %v (stat: %v)", n, kept, tc.oldKept, err)
					}
				}
				for _, n := range []string{young + ".png", young + ".json"} {
					if _, err := os.Stat(filepath.Join(arts, n)); err != nil {
						t.Errorf("1-day-old %s deleted: %v", n, err)
					}
				}
			})
		}
	}
}
