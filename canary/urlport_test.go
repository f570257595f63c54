package canary

import (
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// Target and check URLs with a port outside 1-65535 are config errors
// naming the key and the port (each run would otherwise fail as an
// outage), and a tls check refuses an http:// URL (it would handshake with
// a plain-text server, or dial port 80).
func TestURLPortAndTLSScheme(t *testing.T) {
	tests := []struct {
		name    string
		targets []TargetConfig
		check   CheckConfig
		want    string // the whole error; "" = valid
	}{
		{
			name:    "target port above 65535",
			targets: []TargetConfig{{Name: "t", URL: "http://127.0.0.1:99999"}},
			check:   CheckConfig{Name: "c", Targets: []string{"t"}},
			want:    `targets[0].url: "http://127.0.0.1:99999": port "99999": want a number from 1 to 65535`,
		},
		{
			name:    "tcp target port above 65535",
			targets: []TargetConfig{{Name: "t", URL: "tcp://127.0.0.1:70000"}},
			check:   CheckConfig{Name: "c", Targets: []string{"t"}, TCP: &checks.TCPSpec{}},
			want:    `targets[0].url: "tcp://127.0.0.1:70000": port "70000": want a number from 1 to 65535`,
		},
		{
			name:  "check url port above 65535",
			check: CheckConfig{Name: "c", URL: "http://127.0.0.1:99999/x"},
			want:  `checks[0].url: "http://127.0.0.1:99999/x": port "99999": want a number from 1 to 65535`,
		},
		{
			name:  "check url port 0",
			check: CheckConfig{Name: "c", URL: "tls://127.0.0.1:0", TLS: &checks.TLSSpec{}},
			want:  `checks[0].url: "tls://127.0.0.1:0": port "0": want a number from 1 to 65535`,
		},
		{
			name:  "http.url port above 65535",
			check: CheckConfig{Name: "c", URL: "http://127.0.0.1:8080", HTTP: &checks.HTTPSpec{URL: "http://127.0.0.1:65536/"}},
			want:  `checks[0].http.url: "http://127.0.0.1:65536/": port "65536": want a number from 1 to 65535`,
		},
		{
			name:  "ports 1 and 65535",
			check: CheckConfig{Name: "c", URL: "http://127.0.0.1:1", HTTP: &checks.HTTPSpec{URL: "http://127.0.0.1:65535/"}},
		},
		{
			name:    "tls check on an http target",
			targets: []TargetConfig{{Name: "web", URL: "http://127.0.0.1:18081"}},
			check:   CheckConfig{Name: "c", Targets: []string{"web"}, TLS: &checks.TLSSpec{}},
			want:    `checks[0].targets[0]: "web" (url "http://127.0.0.1:18081"): want a tls:// or https:// URL for a tls check (http:// is plain text)`,
		},
		{
			name:  "tls check on an http url without a port",
			check: CheckConfig{Name: "c", URL: "http://127.0.0.1", TLS: &checks.TLSSpec{}},
			want:  `checks[0].url: "http://127.0.0.1": want a tls:// or https:// URL for a tls check (http:// is plain text)`,
		},
		{
			name:    "tls check on tls and https targets",
			targets: []TargetConfig{{Name: "a", URL: "tls://127.0.0.1:8443"}, {Name: "b", URL: "https://127.0.0.1"}},
			check:   CheckConfig{Name: "c", Targets: []string{"a", "b"}, TLS: &checks.TLSSpec{}},
		},
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
		})
	}
}
