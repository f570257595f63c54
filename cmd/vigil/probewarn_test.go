package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestValidateProbeWarnings: /probe without a token on a listener beyond
// loopback, and an allow list of 0.0.0.0/0 or ::/0, are warnings placed at
// their keys, by vigil validate and in the start log; on loopback with a
// narrow list, none.
func TestValidateProbeWarnings(t *testing.T) {
	body := `agent:
  listen: %s
  probe: {enabled: true, allow: [%s], require_token: false}
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks: [{name: c, targets: [a]}]
`
	cfg := writeConfig(t, fmt.Sprintf(body, "0.0.0.0:9470", `"0.0.0.0/0", "10.0.0.0/8", "::/0"`))
	want := []string{
		cfg + `:3:34: agent.probe.allow[0]: 0.0.0.0/0 lets a probe reach every IPv4 address, vigil's own loopback and a cloud's metadata address (169.254.169.254) included`,
		cfg + `:3:61: agent.probe.allow[2]: ::/0 lets a probe reach every IPv6 address`,
		cfg + `:3:70: agent.probe.require_token: false serves /probe without a token on agent.listen 0.0.0.0:9470, which is reachable beyond this machine`,
	}
	out, code := runCLI(t, "validate", "-c", cfg)
	lines := probeLines(out)
	if code != 0 || !strings.HasPrefix(out, "ok\n") || len(lines) != len(want) {
		t.Fatalf("exit %d:\n%s\nwant ok and %d agent.probe warnings", code, out, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], "warning: "+w) {
			t.Errorf("warning %d:\n%s\nwant it to start:\nwarning: %s", i+1, lines[i], w)
		}
	}
	// The start log: the same warnings, through the same loader.
	var logged []string
	if _, err := loadConfigWarn(cfg, os.LookupEnv, nil, func(msg string) { logged = append(logged, msg) }); err != nil {
		t.Fatal(err)
	}
	logged = probeLines(strings.Join(logged, "\n"))
	if len(logged) != len(want) || !strings.HasPrefix(logged[2], want[2]) {
		t.Errorf("start log:\n%s\nwant the %d warnings", strings.Join(logged, "\n"), len(want))
	}

	// A loopback listener, or a token, or a narrow list: nothing to say.
	for _, tc := range []struct{ listen, allow string }{
		{"127.0.0.1:9470", `"10.0.0.0/8"`},
		{"localhost:9470", `"10.0.0.0/8", "*.example.com"`},
		{"'[::1]:9470'", `"192.168.0.0/16"`},
	} {
		cfg := writeConfig(t, fmt.Sprintf(body, tc.listen, tc.allow))
		if out, code := runCLI(t, "validate", "-c", cfg); code != 0 || len(probeLines(out)) != 0 {
			t.Errorf("listen %s, allow %s: exit %d:\n%s\nwant no agent.probe warning", tc.listen, tc.allow, code, out)
		}
	}
	// Every interface (an empty host) is beyond loopback too.
	cfg = writeConfig(t, fmt.Sprintf(body, `":9470"`, `"10.0.0.0/8"`))
	if out, _ := runCLI(t, "validate", "-c", cfg); !strings.Contains(out, "agent.probe.require_token: false serves /probe without a token on agent.listen :9470 (every interface)") {
		t.Errorf("listen :9470:\n%s", out)
	}
}

// probeLines are the lines of out that warn about agent.probe.
func probeLines(out string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "agent.probe.") {
			ls = append(ls, l)
		}
	}
	return ls
}
