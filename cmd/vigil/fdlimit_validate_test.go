package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/proxy"
)

// withFileLimit makes `vigil validate` read this process's real open-file
// limit (TestMain makes it unknown) for one (sequential) test.
func withFileLimit(t *testing.T) {
	old := validateFileLimit
	validateFileLimit = proxy.OpenFileLimit
	t.Cleanup(func() { validateFileLimit = old })
}

// TestValidateOpenFileLimit: `vigil validate` warns, at the line of
// proxy.max_client_conns, when the open-file limit it runs with (what a
// vigil started from the same shell gets) is below the 2 ×
// max_client_conns + 64 files the proxy needs, saying whose limit it read,
// both numbers and how to raise it; it still prints ok and exits 0. With a
// max_client_conns that fits, it prints ok alone. Before, only `vigil
// proxy` warned, once started.
func TestValidateOpenFileLimit(t *testing.T) {
	withFileLimit(t)
	limit := proxy.OpenFileLimit()
	if limit < 200 || limit > 1<<24 {
		t.Skipf("open-file limit %d (0: unknown or unlimited)", limit)
	}
	cfg := func(conns uint64) string {
		return writeConfig(t, fmt.Sprintf("proxy:\n  max_client_conns: %d\n  pools:\n    - name: web\n      origins: [{url: \"http://127.0.0.1:1\"}]\n", conns))
	}
	over := limit // needs 2 × limit + 64
	file := cfg(over)
	out, code := runCLI(t, "validate", "-c", file)
	need := 2*over + 64
	for _, want := range []string{
		"ok\n",
		fmt.Sprintf("warning: %s:2: proxy.max_client_conns: %d: ", file, over),
		fmt.Sprintf("need about %d open files", need),
		fmt.Sprintf("the open-file limit a vigil started from this shell gets is %d (as vigil validate reads it here; a service gets its own: LimitNOFILE= in its systemd unit)", limit),
		fmt.Sprintf("Raise the limit to at least %d", need),
		fmt.Sprintf("lower max_client_conns to %d", (limit-64)/2),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("max_client_conns %d under an open-file limit of %d: output lacks %q:\n%s", over, limit, want, out)
		}
	}
	if code != 0 || strings.Count(out, "warning: ") != 1 {
		t.Errorf("exit %d, %d warnings; want exit 0 and one warning:\n%s", code, strings.Count(out, "warning: "), out)
	}
	fits := (limit - 64) / 2
	if out, code := runCLI(t, "validate", "-c", cfg(fits)); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("max_client_conns %d under an open-file limit of %d: exit %d:\n%s\nwant exit 0 and ok alone", fits, limit, code, out)
	}
}
