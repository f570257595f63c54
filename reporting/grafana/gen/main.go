// Command gen writes vigil's generated Grafana dashboards and alert rules.
//
//	go run ./gen -out ../../examples/grafana/dashboards -alerts ../../examples/grafana/provisioning/alerting/vigil-slo.yaml
//
// It is run by `go generate ./reporting/grafana`.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vigil-synthetics/vigil/reporting/grafana"
)

func main() {
	out := flag.String("out", "", "directory for <name>.json dashboards (required)")
	alerts := flag.String("alerts", "", "file for the alert rules provisioning YAML (optional)")
	flag.Parse()
	if err := run(*out, *alerts); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out, alerts string) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	boards, err := grafana.Dashboards()
	if err != nil {
		return err
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
	raw, err := grafana.AlertRules()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(alerts), 0o755); err != nil {
		return err
	}
	return os.WriteFile(alerts, raw, 0o644)
}
