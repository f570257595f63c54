package canary

import (
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// dns and grpc checks: a dns:// URL is a DNS server (and, with no probe
// key, a dns check), which needs query_name; a grpc check's URL scheme
// must agree with grpc.tls; the expect keys of each kind are checked.
func TestDNSAndGRPCChecks(t *testing.T) {
	tests := []struct {
		name    string
		targets []TargetConfig
		check   CheckConfig
		kind    string
		want    string // the whole error; "" = valid
	}{
		{name: "dns url without a probe key is a dns check",
			check: CheckConfig{Name: "c", URL: "dns://127.0.0.1", DNS: nil, Expect: &checks.Expect{RCode: []string{"NXDOMAIN"}}},
			want:  `checks[0].url: "dns://127.0.0.1": dns.query_name: required when the target is a dns:// server (a dns check of an http, https, tcp or tls target asks for that target's host)`},
		{name: "dns with query_name", kind: "dns",
			check: CheckConfig{Name: "c", URL: "dns://127.0.0.1:5353", DNS: &checks.DNSSpec{QueryName: "www.example.com"}}},
		{name: "dns of an http target asks for its host", kind: "dns",
			targets: []TargetConfig{{Name: "web", URL: "https://www.example.com"}},
			check:   CheckConfig{Name: "c", Targets: []string{"web"}, DNS: &checks.DNSSpec{Server: "10.0.0.53"}}},
		{name: "dns bad key",
			check: CheckConfig{Name: "c", URL: "dns://127.0.0.1", DNS: &checks.DNSSpec{QueryName: "a.example", Transport: "quic"}},
			want:  `checks[0].dns.transport: "quic": want "udp", "tcp" or "tcp-tls"`},
		{name: "dns with an http expect key",
			check: CheckConfig{Name: "c", URL: "dns://127.0.0.1", DNS: &checks.DNSSpec{QueryName: "a.example"}, Expect: &checks.Expect{Status: checks.StatusList{"200"}}},
			want:  `checks[0].expect.status: dns checks do not use it`},
		{name: "http with a dns expect key",
			check: CheckConfig{Name: "c", URL: "http://127.0.0.1", Expect: &checks.Expect{RCode: []string{"NOERROR"}}},
			want:  `checks[0].expect.rcode: http checks do not use it`},
		{name: "grpc over TLS", kind: "grpc",
			check: CheckConfig{Name: "c", URL: "https://127.0.0.1:50051", GRPC: &checks.GRPCSpec{Service: "a.B"}}},
		{name: "grpc h2c", kind: "grpc",
			check: CheckConfig{Name: "c", URL: "http://127.0.0.1:50051", GRPC: &checks.GRPCSpec{TLS: checks.GRPCTLSOff()}}},
		{name: "grpc TLS on an http url",
			check: CheckConfig{Name: "c", URL: "http://127.0.0.1:50051", GRPC: &checks.GRPCSpec{}},
			want:  `checks[0].url: "http://127.0.0.1:50051": grpc.tls: an http:// URL is plain text: set grpc.tls: false for h2c, or use an https:// URL`},
		{name: "grpc tcp url without a port",
			check: CheckConfig{Name: "c", URL: "tcp://127.0.0.1", GRPC: &checks.GRPCSpec{}},
			want:  `checks[0].url: "tcp://127.0.0.1": a port is required for a grpc check of a tcp:// URL (tcp://host:port)`},
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
			if tc.kind != "" && cfg.Checks[0].Kind() != tc.kind {
				t.Errorf("kind %q, want %q", cfg.Checks[0].Kind(), tc.kind)
			}
			if tc.want == "" && cfg.Checks[0].Tier != "shallow" {
				t.Errorf("tier %q, want shallow", cfg.Checks[0].Tier)
			}
		})
	}
}
