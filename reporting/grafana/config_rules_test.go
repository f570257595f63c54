package grafana

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	vigilalerting "github.com/vigil-synthetics/vigil/reporting/alerting"
	"github.com/vigil-synthetics/vigil/reporting/units"
	"go.yaml.in/yaml/v3"
)

// rulesOf decodes every rule of an alerting provisioning file.
func rulesOf(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	var doc struct {
		Groups []struct {
			Rules []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Groups) != 1 {
		t.Fatalf("%d groups", len(doc.Groups))
	}
	return doc.Groups[0].Rules
}

// TestRulesFollowAlertingConfig: with Options.Alerting and SLOs, the
// rules are those vigil's alerter judges for that config: one TTFB rule
// and one rule per burn-rate pair for each SLO, over its check only, with
// its objective, the config's quorum, min_runs, min_samples, severities,
// for and keep_firing_for (an explicit 0s holds nothing), no ticket pairs
// with no_ticket; and each SLO's burn-rate rules have the windows,
// severities and labels of the generated Prometheus rules' alerts.
func TestRulesFollowAlertingConfig(t *testing.T) {
	for _, tt := range []struct {
		name     string
		cfg      vigilalerting.Config
		keys     []string
		ttfbKeep map[string]string // SLO → keepFiringFor of its TTFB rule
		burnKeep []string          // per pair
	}{
		{"defaults", vigilalerting.Config{Quorum: 3, BurnRate: vigilalerting.BurnRateRule{MinRuns: 50}},
			[]string{"quorum", "burn_rate.min_runs"},
			map[string]string{"asset-ttfb": "5m", "home-ttfb": "1h"}, []string{"5m", "30m", "2h", "6h"}},
		{"explicit 0s keep, no tickets", vigilalerting.Config{Quorum: 2, TTFB: vigilalerting.TTFBRule{MinSamples: 7, Severity: "warning"},
			Down:     vigilalerting.DownRule{For: 3 * time.Minute, KeepFiringFor: 90 * time.Second},
			BurnRate: vigilalerting.BurnRateRule{NoTicket: true}},
			[]string{"quorum", "ttfb.min_samples", "ttfb.severity", "ttfb.keep_firing_for", "burn_rate.keep_firing_for", "burn_rate.no_ticket", "down.for", "down.keep_firing_for"},
			map[string]string{"asset-ttfb": "", "home-ttfb": ""}, []string{"", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.SetKeys(tt.keys)
			if err := cfg.ValidateAndSetDefaults(); err != nil {
				t.Fatal(err)
			}
			slos := []vigilalerting.SLO{
				{Name: "asset-availability", Check: "asset", Objective: units.Percent(99.5)},
				{Name: "asset-ttfb", Check: "asset", TTFBP95: 250 * time.Millisecond},
				{Name: "home-ttfb", Check: "home", Target: "edge-a", TTFBP95: 400 * time.Millisecond, Window: 2 * time.Hour},
			}
			for i := range slos {
				if err := slos[i].ValidateAndSetDefaults(); err != nil {
					t.Fatal(err)
				}
			}
			checks := []vigilalerting.CheckInterval{{Check: "asset", Interval: 15 * time.Second, Tier: "deep"}, {Check: "home", Interval: 30 * time.Second, Tier: "shallow"}}
			raw, err := Options{Alerting: &cfg, SLOs: slos, Checks: checks}.AlertRules()
			if err != nil {
				t.Fatal(err)
			}
			byUID := map[string]map[string]any{}
			var uids []string
			for _, r := range rulesOf(t, raw) {
				uid := r["uid"].(string)
				byUID[uid] = r
				uids = append(uids, uid)
			}
			want := []string{"vigil-origin-down", "vigil-certificate", "vigil-burn-1h-asset-availability", "vigil-burn-6h-asset-availability"}
			if !cfg.BurnRate.NoTicket {
				want = append(want, "vigil-burn-1d-asset-availability", "vigil-burn-3d-asset-availability")
			}
			want = append(want, "vigil-ttfb-asset-ttfb", "vigil-ttfb-home-ttfb", "vigil-dead-man-15s", "vigil-dead-man-30s",
				"vigil-quorum-lost-15s", "vigil-quorum-lost-30s", "vigil-live-errors")
			if fmt.Sprint(slices.Sorted(slices.Values(uids))) != fmt.Sprint(slices.Sorted(slices.Values(want))) {
				t.Fatalf("rules %v, want %v", uids, want)
			}
			q := fmt.Sprint(cfg.Quorum)
			down := byUID["vigil-origin-down"]
			if th := threshold(t, down); fmt.Sprint(th+0.5) != q || down["for"] != pendingFor(cfg.Down.For) || keepOf(down) != map[bool]string{true: "1m30s", false: ""}[cfg.Down.KeepFiringFor > 0] {
				t.Errorf("origin down: threshold %v, for %v, keepFiringFor %v; want quorum %s, down.for %s, down.keep_firing_for %s", th, down["for"], down["keepFiringFor"], q, cfg.Down.For, cfg.Down.KeepFiringFor)
			}
			for slo, keep := range tt.ttfbKeep {
				r := byUID["vigil-ttfb-"+slo]
				flux := r["data"].([]any)[0].(map[string]any)["model"].(map[string]any)["query"].(string)
				labels := r["labels"].(map[string]any)
				if labels["slo"] != slo || labels["severity"] != cfg.TTFB.Severity || keepOf(r) != keep {
					t.Errorf("%s: labels %v, keepFiringFor %v; want slo %s, severity %s, keepFiringFor %q", slo, labels, r["keepFiringFor"], slo, cfg.TTFB.Severity, keep)
				}
				if !strings.Contains(flux, fmt.Sprintf("r.runs >= %d.0", cfg.TTFB.MinSamples)) {
					t.Errorf("%s: the query does not count regions from %d runs:\n%s", slo, cfg.TTFB.MinSamples, flux)
				}
			}
			home := byUID["vigil-ttfb-home-ttfb"]
			flux := home["data"].([]any)[0].(map[string]any)["model"].(map[string]any)["query"].(string)
			if !strings.Contains(flux, `|> filter(fn: (r) => r.check == "home" and r.target == "edge-a")`) || !strings.Contains(flux, "r.p95 > 400.0") ||
				home["data"].([]any)[0].(map[string]any)["relativeTimeRange"].(map[string]any)["from"] != 7200 {
				t.Errorf("home-ttfb: query not over check home, target edge-a, 400 ms, 2h:\n%s", flux)
			}

			// The burn-rate rules against the Prometheus rules of the same config.
			prom, err := vigilalerting.PrometheusRules(cfg, slos, checks...)
			if err != nil {
				t.Fatal(err)
			}
			promBurn := regexp.MustCompile(`(?s)- alert: VigilErrorBudgetBurn\n.*?labels:\n((?:\s+\w+: '[^']*'\n)+)\s+annotations:\n.*?windows: '([^']*)'`)
			promSet := map[string]string{} // severity → windows and labels
			for _, m := range promBurn.FindAllStringSubmatch(string(prom), -1) {
				labels := map[string]string{}
				for _, l := range regexp.MustCompile(`(\w+): '([^']*)'`).FindAllStringSubmatch(m[1], -1) {
					if l[1] != "source" {
						labels[l[1]] = l[2]
					}
				}
				promSet[labels["severity"]] = m[2] + " " + fmt.Sprint(labels)
			}
			grafSet := map[string]string{}
			var windows = map[string][]string{}
			for i, w := range vigilalerting.BurnWindows {
				if w.Severity == vigilalerting.SeverityTicket && cfg.BurnRate.NoTicket {
					continue
				}
				r := byUID["vigil-burn-"+promDur(w.Long)+"-asset-availability"]
				labels := map[string]string{}
				for k, v := range r["labels"].(map[string]any) {
					if k != "source" {
						labels[k] = v.(string)
					}
				}
				ann := r["annotations"].(map[string]any)
				windows[w.Severity] = append(windows[w.Severity], ann["windows"].(string))
				grafSet[w.Severity] = strings.Join(windows[w.Severity], ",") + " " + fmt.Sprint(labels)
				if keepOf(r) != tt.burnKeep[i] {
					t.Errorf("%s: keepFiringFor %v, want %q", w.Name(), r["keepFiringFor"], tt.burnKeep[i])
				}
				bflux := r["data"].([]any)[0].(map[string]any)["model"].(map[string]any)["query"].(string)
				limit := strconv.FormatFloat(w.Factor*0.005, 'g', 6, 64)
				if !strings.Contains(bflux, `r.check == "asset")`) || !strings.Contains(bflux, fmt.Sprintf("r.runs >= %d.0", cfg.BurnRate.MinRuns)) || !strings.Contains(bflux, "> "+limit+" ") {
					t.Errorf("%s: query not over check asset, min_runs %d, limit %s:\n%s", w.Name(), cfg.BurnRate.MinRuns, limit, bflux)
				}
			}
			if fmt.Sprint(grafSet) != fmt.Sprint(promSet) {
				t.Errorf("burn-rate rules (windows, labels) per severity:\ngrafana    %v\nprometheus %v", grafSet, promSet)
			}
		})
	}
}

// keepOf is a rule's keepFiringFor, "" without one.
func keepOf(rule map[string]any) string {
	s, _ := rule["keepFiringFor"].(string)
	return s
}
