package scripts

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"go.yaml.in/yaml/v3"
)

// exampleScripts returns every check script of an example config file.
func exampleScripts(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "scripts", file))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Checks []struct {
			Name   string `yaml:"name"`
			Script any    `yaml:"script"`
		} `yaml:"checks"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range cfg.Checks {
		if c.Script == nil {
			continue
		}
		b, err := yaml.Marshal(c.Script)
		if err != nil {
			t.Fatal(err)
		}
		out[c.Name] = string(b)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no scripts", file)
	}
	return out
}

// TestExamplesRunAgainstDemoOrigin runs the example scripts against the
// demo origin of package checktest.
func TestExamplesRunAgainstDemoOrigin(t *testing.T) {
	o, err := checktest.StartOrigin(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	t.Setenv("DEMO_PASSWORD", "demo")
	for _, file := range []string{"api-transaction.yaml", "browser-flow.yaml"} {
		for name, src := range exampleScripts(t, file) {
			t.Run(file+"/"+name, func(t *testing.T) {
				o.ResetCounts()
				sc := mustScript(t, src)
				var b *Browser
				if sc.HasBrowser() {
					b = needChromium(t)
				}
				r, err := New(sc, Options{Check: name, Timeout: 20 * time.Second, Browser: b, DataDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				res := r.Run(context.Background(), checks.Target{Name: "demo", URL: o.URL()})
				if !res.OK {
					t.Fatalf("%s: %s\n%+v", res.Cause, res.Err, res.Steps)
				}
				if o.Count("DELETE", "/api/cart") == 0 {
					t.Error("cleanup step did not reach the origin")
				}
			})
		}
	}
}
