package alerting

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestExamplePrometheusScrapesQuorum: examples/prometheus/prometheus.yml
// loads the example rules, generated with ExampleConfig's quorum; it must
// scrape at least that many canaries, or every quorum alert of the pair
// (down, burn rate, TTFB, certificate) can never fire as shipped.
func TestExamplePrometheusScrapesQuorum(t *testing.T) {
	b, err := os.ReadFile("../../examples/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.RuleFiles) != 1 || !strings.HasSuffix(exampleRules, "/"+doc.RuleFiles[0]) {
		t.Fatalf("rule_files %v, want the example rules %s", doc.RuleFiles, exampleRules)
	}
	var targets []string
	for _, sc := range doc.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	if len(targets) < ExampleConfig.Quorum {
		t.Errorf("prometheus.yml scrapes %d canaries %v; the example rules need %d regions (ExampleConfig.Quorum) to fire",
			len(targets), targets, ExampleConfig.Quorum)
	}
}
