// Command gen writes vigil's generated Grafana dashboards and alert rules.
//
//	go run ./gen -out ../../examples/grafana/dashboards -alerts ../../examples/grafana/provisioning/alerting/vigil-slo.yaml
//
// It is run by `go generate ./reporting/grafana`. For a Grafana that
// already has an InfluxDB datasource, -datasource-uid points every panel,
// variable and alert rule at it, and -bucket sets the bucket; -quorum,
// -ttfb-p95 and -objective match the rules to the alerter's
// alerting.quorum and slos:
//
//	go run ./reporting/grafana/gen -out dashboards -alerts alerting/vigil-slo.yaml \
//	    -datasource-uid P951FEA4DE68E13C5 -bucket telemetry/autogen
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/grafana"
)

func main() { os.Exit(cli(os.Args[1:], os.Stderr)) }

// cli runs gen with args and returns the exit code: 0, 1 when writing
// failed, 2 for bad flags (nothing written).
func cli(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory for <name>.json dashboards (required)")
	alerts := fs.String("alerts", "", "file for the alert rules provisioning YAML (optional)")
	var o grafana.Options
	fs.StringVar(&o.DatasourceUID, "datasource-uid", grafana.DatasourceUID,
		"uid of the InfluxDB (Flux) datasource the dashboards and alert rules query: at most 40 letters, digits, - and _")
	fs.StringVar(&o.Bucket, "bucket", grafana.DefaultBucket,
		`InfluxDB bucket: the dashboards' default $bucket and the bucket the alert rules read ("db/rp" on 1.8)`)
	quorum := fs.Int("quorum", grafana.Quorum,
		"regions that must agree before a rule fires; keep it equal to the alerter's alerting.quorum")
	ttfb := fs.Duration("ttfb-p95", time.Duration(grafana.TTFBP95ThresholdMS*float64(time.Millisecond)),
		"TTFB p95 objective of the TTFB rule and the dashboards' TTFB thresholds")
	objective := grafana.SLOTarget * 100
	fs.Func("objective", fmt.Sprintf("availability objective in percent of the burn-rate rule and the dashboards' colours (default %g%%)", objective),
		func(v string) error {
			f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "%"), 64)
			if err != nil {
				return fmt.Errorf("not a percentage")
			}
			objective = f
			return nil
		})
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// 0 is the zero value's default in Options; a flag set to it is a mistake.
	switch {
	case *quorum < 1:
		fmt.Fprintf(stderr, "gen: -quorum: %d: at least 1 region\n", *quorum)
		return 2
	case *ttfb < time.Millisecond:
		fmt.Fprintf(stderr, "gen: -ttfb-p95: %s: at least 1ms\n", *ttfb)
		return 2
	case !(objective > 0 && objective < 100):
		fmt.Fprintf(stderr, "gen: -objective: %g%%: above 0%% and below 100%%\n", objective)
		return 2
	// Empty would silently mean the defaults in Options.
	case o.Bucket == "":
		fmt.Fprintf(stderr, "gen: -bucket: bucket \"\": %v: empty\n", grafana.ErrBucket)
		return 2
	case o.DatasourceUID == "":
		fmt.Fprintf(stderr, "gen: -datasource-uid: datasource uid \"\": %v: empty\n", grafana.ErrDatasourceUID)
		return 2
	}
	o.Quorum, o.TTFBP95, o.Objective = *quorum, *ttfb, objective
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gen: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *out == "" {
		fmt.Fprintln(stderr, "gen: -out is required")
		return 2
	}
	if err := o.Validate(); err != nil {
		// The objectives were checked above: the uid or the bucket.
		flagName := "-datasource-uid"
		if errors.Is(err, grafana.ErrBucket) {
			flagName = "-bucket"
		}
		fmt.Fprintf(stderr, "gen: %s: %v\n", flagName, err)
		return 2
	}
	if err := run(*out, *alerts, o); err != nil {
		fmt.Fprintln(stderr, "gen:", err)
		return 1
	}
	return 0
}

func run(out, alerts string, o grafana.Options) error {
	boards, err := o.Dashboards()
	if err != nil {
		return err
	}
	var rules []byte
	if alerts != "" {
		if rules, err = o.AlertRules(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for name, raw := range boards {
		if err := os.WriteFile(filepath.Join(out, name+".json"), raw, 0o644); err != nil {
			return err
		}
	}
	if alerts == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(alerts), 0o755); err != nil {
		return err
	}
	return os.WriteFile(alerts, rules, 0o644)
}
