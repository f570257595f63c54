package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestQuickstartAssertionsPass runs examples/quickstart.yaml's HTTP, TCP and
// API-script checks against demo origins (the quickstart's addresses
// replaced by the test origins'): each passes with every assertion listed,
// including body.regex and a `headers: absent` matcher. The tls check is in
// the file, disabled (the demo origins serve no TLS), and runs nowhere.
func TestQuickstartAssertionsPass(t *testing.T) {
	raw, err := os.ReadFile("../../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(raw)
	for _, port := range []string{"9201", "9202", "9203"} {
		o := checktest.NewOrigin()
		t.Cleanup(o.Close)
		cfg = strings.ReplaceAll(cfg, "127.0.0.1:"+port, strings.TrimPrefix(o.URL(), "http://"))
	}
	// The quickstart's own listeners would clash with a running demo.
	cfg = strings.NewReplacer("127.0.0.1:9470", "127.0.0.1:0", "127.0.0.1:8080", "127.0.0.1:0").Replace(cfg)
	file := writeConfig(t, cfg)

	if out, code := runCLI(t, "validate", "-c", file); code != 0 {
		t.Fatalf("validate: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		check string
		want  []string // assertion names that must be listed and pass
	}{
		{"healthz", []string{"status", `body contains "ok"`, "body regex ~^ok$"}},
		{"port", nil},
		{"asset", []string{"header Set-Cookie", "header Access-Control-Allow-Origin", "header Cache-Control", "checksum", "size"}},
		{"api", []string{"status"}},
		{"login-flow", nil},
	} {
		t.Run(tc.check, func(t *testing.T) {
			out, code := runCLI(t, "check", "-c", file, "--check", tc.check, "--json")
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var v struct {
					Target     string
					OK         bool
					Assertions []struct {
						Name string
						OK   bool
					}
				}
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Fatalf("%v: %s", err, line)
				}
				got := map[string]bool{}
				for _, a := range v.Assertions {
					got[a.Name] = a.OK
				}
				for _, name := range tc.want {
					if ok, listed := got[name]; !listed || !ok {
						t.Errorf("%s: assertion %q listed %v, passed %v", v.Target, name, listed, ok)
					}
				}
			}
		})
	}
	// The tls check: disabled, so `vigil check` without --check skips it.
	if !strings.Contains(cfg, "name: cert") || !strings.Contains(cfg, "cert_min_days:") {
		t.Error("the quickstart lost its tls check")
	}
}
