package grafana

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"

	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
)

// promOnlyLabels are labels of a generated Prometheus alert its Grafana
// counterpart does not carry, per rule, and why.
var promOnlyLabels = map[string]map[string]string{
	// VigilLiveTrafficFailing is two rules over the proxies' metrics, told
	// apart by condition; vigil-live-errors reads the signals the
	// built-in alerter reads and is one alert per pool × origin, as the
	// alerter's live_errors alerts.
	vigilalerting.RuleLiveErrors: {"condition": "errors or ejected: the Prometheus rule's two expressions"},
}

// TestRuleLabelsAgreeWithPrometheusRules generates the Grafana rules and
// the Prometheus rules (alerting.PrometheusRules, `vigil alerter
// --prometheus-rules`) of one config and checks each Grafana rule carries
// the labels of its Prometheus counterpart, the alert with the same rule,
// severity, slo and interval labels: the same names and values but source
// (grafana, prometheus) and promOnlyLabels, and the same status_url and runbook_url
// annotations. The alertname cannot agree (Grafana sets it to the rule's
// title), so the rule label is what pairs them.
func TestRuleLabelsAgreeWithPrometheusRules(t *testing.T) {
	cfg := vigilalerting.ExampleConfig
	cfg.RunbookURL = "https://runbooks.example/vigil/{rule}#{check}"
	if err := cfg.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	prom, err := vigilalerting.PrometheusRules(cfg, vigilalerting.ExampleSLOs, vigilalerting.ExampleChecks...)
	if err != nil {
		t.Fatal(err)
	}
	var pdoc struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(prom, &pdoc); err != nil {
		t.Fatal(err)
	}
	// key names an alert by what tells the alerts of one rule apart.
	key := func(l map[string]string) string {
		return fmt.Sprintf("rule=%s severity=%s slo=%s interval=%s", l["rule"], l["severity"], l["slo"], l["interval"])
	}
	without := func(l map[string]string, name string) map[string]string {
		l = maps.Clone(l)
		delete(l, name)
		return l
	}
	promLabels := map[string]map[string]string{}
	promLinks := map[string][2]string{} // status_url, runbook_url
	for _, g := range pdoc.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || !slices.Contains(vigilalerting.AllRules, r.Labels["rule"]) {
				continue // recording rules and vigil's self-monitoring alerts
			}
			if r.Labels["source"] != "prometheus" {
				t.Errorf("%s: source %q", r.Alert, r.Labels["source"])
			}
			l := without(r.Labels, "source")
			for name := range promOnlyLabels[r.Labels["rule"]] {
				l = without(l, name)
			}
			promLabels[key(r.Labels)] = l
			promLinks[key(r.Labels)] = [2]string{r.Annotations["status_url"], r.Annotations["runbook_url"]}
		}
	}

	raw, err := Options{Alerting: &cfg, SLOs: vigilalerting.ExampleSLOs, Checks: vigilalerting.ExampleChecks}.AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rulesOf(t, raw) {
		labels := map[string]string{}
		for k, v := range r["labels"].(map[string]any) {
			labels[k] = fmt.Sprint(v)
		}
		if labels["source"] != "grafana" {
			t.Errorf("%s: source %q, want grafana", r["uid"], labels["source"])
		}
		want, ok := promLabels[key(labels)]
		if !ok {
			t.Errorf("%s: labels %v: no Prometheus alert with %s (they have %v)", r["uid"], labels, key(labels), slices.Sorted(maps.Keys(promLabels)))
			continue
		}
		seen[key(labels)] = true
		if got := without(labels, "source"); !maps.Equal(got, want) {
			t.Errorf("%s: labels %v, Prometheus %v", r["uid"], got, want)
		}
		ann, _ := r["annotations"].(map[string]any)
		links := [2]string{fmt.Sprint(ann["status_url"]), fmt.Sprint(ann["runbook_url"])}
		if w := promLinks[key(labels)]; links != w || w[0] == "" || w[1] == "" {
			t.Errorf("%s: status_url, runbook_url %q, Prometheus %q", r["uid"], links, w)
		}
	}
	for k := range promLabels {
		if !seen[k] {
			t.Errorf("Prometheus alert %s has no Grafana rule", k)
		}
	}
}
