// Command gen writes examples/prometheus/vigil-slo-rules.yml: the
// Prometheus recording and alerting rules for the reference config's SLOs
// and checks (alerting.ExampleSLOs, alerting.ExampleConfig,
// alerting.ExampleChecks). Run it with
// `go generate ./reporting/alerting`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vigil-synthetics/vigil/reporting/alerting"
)

func main() {
	out := flag.String("o", "vigil-slo-rules.yml", "output file")
	flag.Parse()
	b, err := alerting.PrometheusRules(alerting.ExampleConfig, alerting.ExampleSLOs, alerting.ExampleChecks...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
