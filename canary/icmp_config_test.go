package canary

import (
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// icmp checks: an icmp:// URL is a host to ping (and, with no probe key,
// an icmp check, shallow by default); an icmp check pings the host of any
// other target; its keys and expect keys are checked at load.
func TestICMPChecks(t *testing.T) {
	tests := []struct {
		name    string
		targets []TargetConfig
		check   CheckConfig
		want    string // the whole error; "" = valid
	}{
		{name: "icmp url without a probe key is an icmp check",
			check: CheckConfig{Name: "c", URL: "icmp://127.0.0.1"}},
		{name: "icmp of an http target pings its host",
			targets: []TargetConfig{{Name: "web", URL: "https://www.example.com:8443/healthz"}},
			check:   CheckConfig{Name: "c", Targets: []string{"web"}, ICMP: &checks.ICMPSpec{PayloadSize: 56, TTL: 64}}},
		{name: "icmp target in targets",
			targets: []TargetConfig{{Name: "gw", URL: "icmp://[2001:db8::1]"}},
			check:   CheckConfig{Name: "c", Targets: []string{"gw"}, ICMP: &checks.ICMPSpec{IPProtocol: "ip6"}}},
		{name: "icmp url with a port",
			check: CheckConfig{Name: "c", URL: "icmp://127.0.0.1:80"},
			want:  `checks[0].url: "icmp://127.0.0.1:80": an icmp:// URL has no port (ICMP has none): write icmp://127.0.0.1`},
		{name: "icmp bad key",
			check: CheckConfig{Name: "c", URL: "icmp://127.0.0.1", ICMP: &checks.ICMPSpec{TTL: 300}},
			want:  `checks[0].icmp.ttl: 300: want a hop count from 1 to 255 (0 or unset = the system's)`},
		{name: "icmp dont_fragment on an IPv6 target",
			targets: []TargetConfig{{Name: "gw", URL: "icmp://[::1]"}},
			check:   CheckConfig{Name: "c", Targets: []string{"gw"}, ICMP: &checks.ICMPSpec{DontFragment: true}},
			want:    `checks[0].targets[0]: "gw" (url "icmp://[::1]"): icmp.dont_fragment: IPv4 only, but the target's host ::1 is an IPv6 address`},
		{name: "icmp with an http expect key",
			check: CheckConfig{Name: "c", URL: "icmp://127.0.0.1", Expect: &checks.Expect{Status: checks.StatusList{"200"}}},
			want:  `checks[0].expect.status: icmp checks do not use it`},
		{name: "tcp check of an icmp url",
			check: CheckConfig{Name: "c", URL: "icmp://127.0.0.1", TCP: &checks.TCPSpec{}},
			want:  `checks[0].url: "icmp://127.0.0.1": an icmp:// URL is a host to ping, for icmp checks, not for a tcp check`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{Targets: tc.targets, Checks: []CheckConfig{tc.check}}
			err := cfg.ValidateAndSetDefaults()
			if err == nil {
				_, err = cfg.Compile(CompileOptions{Version: "test", DataDir: t.TempDir()})
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("error:\n got %s\nwant %s", got, tc.want)
			}
			if tc.want == "" {
				if k := cfg.Checks[0].Kind(); k != "icmp" {
					t.Errorf("kind %q, want icmp", k)
				}
				if cfg.Checks[0].Tier != "shallow" {
					t.Errorf("tier %q, want shallow", cfg.Checks[0].Tier)
				}
			}
		})
	}
}
