package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// vigil validate accepts the icmp examples and names the key of every
// icmp mistake.
func TestValidateICMP(t *testing.T) {
	if out, code := runCLI(t, "validate", "-c", "../../examples/blackbox-modules.yaml"); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("validate examples/blackbox-modules.yaml: exit %d: %s", code, out)
	}
	wantValidate(t, `
targets: [{name: v6, url: "icmp://[::1]"}]
checks:
  - {name: a, url: "icmp://127.0.0.1", icmp: {payload_size: 70000, ttl: 0}}
  - {name: b, url: "icmp://127.0.0.1", icmp: {count: 3}}
  - {name: c, url: "icmp://127.0.0.1:8", icmp: {}}
  - {name: d, targets: [v6], icmp: {dont_fragment: true}}
  - {name: e, url: "icmp://127.0.0.1", icmp: {ttl: 256}, expect: {status: 200}}
`,
		`checks[0].icmp.payload_size: 70000: want bytes from 0 to 65507 (0 = the default, 28)`,
		`checks[1].icmp.count: unknown key (icmp takes dont_fragment, ip_protocol, ip_protocol_fallback, payload_size, ttl)`,
		`checks[2].url: "icmp://127.0.0.1:8": an icmp:// URL has no port (ICMP has none): write icmp://127.0.0.1`,
		`checks[3].targets[0]: "v6" (url "icmp://[::1]"): icmp.dont_fragment: IPv4 only, but the target's host ::1 is an IPv6 address`,
		`checks[4].icmp.ttl: 256: want a hop count from 1 to 255 (0 or unset = the system's)`,
		`checks[4].expect.status: icmp checks do not use it`)
}

// vigil check pings 127.0.0.1 over a real ICMP socket and prints the run.
func TestCheckICMP(t *testing.T) {
	p := writeConfig(t, `
checks:
  - {name: lo, url: "icmp://127.0.0.1", timeout: 2s, icmp: {payload_size: 100}, expect: {ttfb: 1s}}
`)
	out, code := runCLI(t, "check", "-c", p, "--json")
	var got struct {
		Check, Proto, Error string
		OK                  bool    `json:"ok"`
		TTFB                float64 `json:"ttfb_ms"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &got); err != nil {
		t.Fatalf("vigil check: exit %d, %v: %s", code, err, out)
	}
	if strings.Contains(got.Error, "icmp: no permission") {
		if os.Getenv("CI") == "true" {
			t.Fatal(got.Error)
		}
		t.Skip("SKIPPED: " + got.Error)
	}
	if code != 0 || !got.OK || got.Check != "lo" || got.Proto != "ICMP" || got.TTFB <= 0 || got.TTFB > 1000 {
		t.Errorf("vigil check --json: exit %d: %s", code, out)
	}
}
