package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestCheckSummaryCountsRuns: the summary under `vigil check`'s table says
// what it counts, runs (one per check × target) and of how many checks,
// rather than calling every check × target pair a check.
func TestCheckSummaryCountsRuns(t *testing.T) {
	good := checktest.NewOrigin()
	defer good.Close()
	bad := checktest.NewOrigin(checktest.WithMode(checktest.ModeCorrupt))
	defer bad.Close()
	cfg := writeConfig(t, fmt.Sprintf(`
targets:
  - {name: good, url: %s}
  - {name: bad, url: %s}
checks:
  - name: asset
    targets: [good, bad]
    http: {path: /asset.bin}
    expect: {checksum: "sha256:%s"}
  - {name: healthz, targets: [good], http: {path: /healthz}}
`, good.URL(), bad.URL(), checktest.AssetSHA256()))
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 1, "\n3 runs (2 checks × their targets), 2 passed, 1 failed\n"},
		{[]string{"--check", "asset"}, 1, "\n2 runs (1 check × 2 targets), 1 passed, 1 failed\n"},
		{[]string{"--check", "healthz"}, 0, "\n1 run (1 check × 1 target), 1 passed, 0 failed\n"},
	} {
		out, code := runCLI(t, append([]string{"check", "-c", cfg}, tc.args...)...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("vigil check %v: exit %d, output:\n%s\nwant exit %d and %q", tc.args, code, out, tc.code, tc.want)
		}
	}
}
