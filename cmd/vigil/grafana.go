package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-synthetics/vigil/reporting/grafana"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

func init() { commands = append(commands, newGrafanaCmd) }

// grafanaFlags are the flags of vigil grafana.
type grafanaFlags struct {
	file, out, datasourceUID, bucket, objective string
	quorum, minRuns                             int
	ttfbP95                                     time.Duration
}

func newGrafanaCmd() *cobra.Command {
	var f grafanaFlags
	cmd := &cobra.Command{
		Use:   "grafana -c FILE --out DIR",
		Short: "Write Grafana dashboards and alert rules for a config file",
		Long: `Writes vigil's Grafana dashboards (DIR/dashboards/*.json), their provisioning file
(DIR/provisioning/dashboards/vigil.yaml) and the alert rules
(DIR/provisioning/alerting/vigil-slo.yaml) for the file's slos, alerting, checks and
store sections: the rules judge what vigil's alerter judges for that file (quorum, SLO
objectives, burn-rate pairs, min_runs, dead man). Flags override the file's values.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			files, err := grafanaFiles(cmd, &f)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			paths := make([]string, 0, len(files))
			for p := range files {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, p := range paths {
				if err := writeFile(p, files[p]); err != nil {
					return &exitError{code: 1, err: fmt.Errorf("grafana: %w", err)}
				}
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", p)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "config", "c", "vigil.yaml", "config file")
	fl.StringVar(&f.out, "out", "", "directory to write dashboards/ and provisioning/ under (required)")
	fl.StringVar(&f.datasourceUID, "datasource-uid", grafana.DatasourceUID, "uid of the InfluxDB (Flux) datasource every panel and rule queries")
	fl.StringVar(&f.bucket, "bucket", "", `InfluxDB bucket the rules read and $bucket's default (default store.influxdb.bucket, else "`+grafana.DefaultBucket+`")`)
	fl.IntVar(&f.quorum, "quorum", 0, "regions that must agree before a rule fires (default alerting.quorum)")
	fl.StringVar(&f.objective, "objective", "", "availability objective in percent for every SLO with one, and the dashboards' colours (default each SLO's objective)")
	fl.DurationVar(&f.ttfbP95, "ttfb-p95", 0, "TTFB p95 objective for every SLO with one, and the dashboards' TTFB line (default each SLO's ttfb_p95)")
	fl.IntVar(&f.minRuns, "min-runs", 0, "runs a region needs in a burn-rate pair's long window (default alerting.burn_rate.min_runs)")
	return cmd
}

// grafanaFiles checks the flags, loads the config and renders every file
// by path, writing nothing: an error names the flag or the config key.
func grafanaFiles(cmd *cobra.Command, f *grafanaFlags) (map[string][]byte, error) {
	set := cmd.Flags().Changed
	if f.out == "" {
		return nil, errors.New("--out: required (the directory to write dashboards/ and provisioning/ under)")
	}
	// Given empty, they would silently mean the defaults.
	if set("bucket") && f.bucket == "" {
		return nil, fmt.Errorf("--bucket: bucket %q: %w: empty (leave the flag out for store.influxdb.bucket or %s)", f.bucket, grafana.ErrBucket, grafana.DefaultBucket)
	}
	if set("datasource-uid") && f.datasourceUID == "" {
		return nil, fmt.Errorf("--datasource-uid: datasource uid %q: %w: empty (leave the flag out for %s)", f.datasourceUID, grafana.ErrDatasourceUID, grafana.DatasourceUID)
	}
	if set("quorum") && f.quorum < 1 {
		return nil, fmt.Errorf("--quorum: %d: at least 1 region", f.quorum)
	}
	if set("min-runs") && f.minRuns < 1 {
		return nil, fmt.Errorf("--min-runs: %d: at least 1 run", f.minRuns)
	}
	if set("ttfb-p95") && f.ttfbP95 < time.Millisecond {
		return nil, fmt.Errorf("--ttfb-p95: %s: at least 1ms", f.ttfbP95)
	}
	var objective float64
	if set("objective") {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f.objective), "%"), 64)
		if err != nil || !(v > 0 && v < 100) || math.IsNaN(v) {
			return nil, fmt.Errorf("--objective: %q: want a percentage above 0%% and below 100%% (99.9 or 99.9%%)", f.objective)
		}
		objective = v
	}
	// Receivers' secrets may be unset: the rules hold none.
	cfg, err := loadRulesConfigWarn(f.file, os.LookupEnv, warnTo(cmd.ErrOrStderr()))
	if err != nil {
		return nil, err
	}
	alertCfg := cfg.Alerting
	if set("min-runs") {
		alertCfg.BurnRate.MinRuns = f.minRuns
	}
	o := grafana.Options{DatasourceUID: f.datasourceUID, Bucket: f.bucket, Quorum: f.quorum,
		Objective: objective, TTFBP95: f.ttfbP95, Alerting: &alertCfg,
		Checks: cfg.deadManChecks(time.Now()), GeneratedBy: "vigil grafana -c " + f.file}
	if o.Bucket == "" && cfg.Store.InfluxDB != nil {
		o.Bucket = cfg.Store.InfluxDB.Bucket
	}
	if cfg.Store.InfluxDB == nil && !set("bucket") {
		// Written anyway: the canaries feeding the Grafana may run
		// another file.
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: no store.influxdb: the dashboards and rules read InfluxDB (bucket %s), which vigil writes only with store.influxdb set; the embedded store is not readable from Grafana\n", f.file, grafana.DefaultBucket)
	}
	o.SLOs = append(o.SLOs, cfg.SLOs...)
	for i := range o.SLOs {
		s := &o.SLOs[i]
		if objective > 0 && s.Objective > 0 {
			s.Objective = units.Percent(objective)
		}
		if f.ttfbP95 > 0 && s.TTFBP95 > 0 {
			s.TTFBP95 = f.ttfbP95
		}
		// The dashboards' thresholds: the first SLO's objectives.
		if o.Objective == 0 && s.Objective > 0 {
			o.Objective = float64(s.Objective)
		}
		if o.TTFBP95 == 0 && s.TTFBP95 > 0 {
			o.TTFBP95 = s.TTFBP95
		}
	}
	if err := o.Validate(); err != nil {
		switch {
		case errors.Is(err, grafana.ErrBucket) && f.bucket == "":
			return nil, fmt.Errorf("store.influxdb.bucket: %w (or pass --bucket)", err)
		case errors.Is(err, grafana.ErrBucket):
			return nil, fmt.Errorf("--bucket: %w", err)
		case errors.Is(err, grafana.ErrDatasourceUID):
			return nil, fmt.Errorf("--datasource-uid: %w", err)
		}
		return nil, err
	}
	boards, err := o.Dashboards()
	if err != nil {
		return nil, err
	}
	rules, err := o.AlertRules()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		filepath.Join(f.out, "provisioning", "alerting", "vigil-slo.yaml"): rules,
		filepath.Join(f.out, "provisioning", "dashboards", "vigil.yaml"):   []byte(grafana.DashboardProvider),
	}
	for name, raw := range boards {
		files[filepath.Join(f.out, "dashboards", name+".json")] = raw
	}
	return files, nil
}

// writeFile writes one generated file atomically, creating its directory.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := units.WriteFileAtomic(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
