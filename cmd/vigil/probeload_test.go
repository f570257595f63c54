package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestValidateProbeLoadWarnings: vigil validate warns (exit 0) about a
// check that opens a new connection to a remote target more often than
// every 5s (an http check without reuse_connections, a tls check), giving
// the runs a minute per target, and about a timeout above 80% of the
// interval; reused connections, targets on loopback and sane schedules
// get no warning.
func TestValidateProbeLoadWarnings(t *testing.T) {
	for _, c := range []struct {
		name, check string
		want        string // "" for no warning
	}{
		{"http every 1s", `interval: 1s, timeout: 800ms, http: {path: /}`,
			`checks[0].interval: runs every 1s: an http check without http.reuse_connections opens a new connection to each target at every run, 60 a minute per target`},
		{"tls every 2s", `interval: 2s, tls: {}`, `checks[0].interval: runs every 2s: a tls check makes a new connection and TLS handshake to each target at every run, 30 a minute per target`},
		{"http every 1s reusing connections", `interval: 1s, http: {path: /, reuse_connections: true}`, ""},
		{"http every 5s", `interval: 5s, http: {path: /}`, ""},
		{"timeout 90% of the interval", `interval: 10s, timeout: 9s, http: {path: /}`,
			`checks[0].timeout: 9s is 90% of the interval 10s: a run started up to 1s after its slot (jitter) that hangs to its timeout is still running at the next slot`},
		{"timeout 80% of the interval", `interval: 10s, timeout: 8s, http: {path: /}`, ""},
		{"inherited timeout", `interval: 2s, http: {path: /, reuse_connections: true}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, origin := range []string{"https://origin.example.com", "https://127.0.0.1:9201"} {
				path := writeConfig(t, fmt.Sprintf(`
targets: [{name: o1, url: "%s"}]
checks:
  - {name: c, targets: [o1], %s}
`, origin, c.check))
				out, code := runCLI(t, "validate", path)
				if code != 0 || !strings.HasPrefix(out, "ok\n") {
					t.Fatalf("%s: exit %d, want 0 and ok:\n%s", origin, code, out)
				}
				want := c.want
				if strings.Contains(origin, "127.0.0.1") && strings.Contains(want, ".interval:") {
					want = "" // the load stays on this machine
				}
				has := strings.Contains(out, "warning: "+path)
				switch {
				case want == "" && has:
					t.Errorf("%s: want no warning, got:\n%s", origin, out)
				case want != "" && !strings.Contains(out, want):
					t.Errorf("%s: want a warning with %q, got:\n%s", origin, want, out)
				}
			}
		})
	}
}
