// Package grafana holds vigil's Grafana dashboards and SLO alert rules as
// code, built with github.com/grafana/grafana-foundation-sdk/go.
//
// Three dashboards read what the InfluxDB sink writes (measurements
// vigil_verdict and vigil_signal) through an InfluxDB datasource in Flux
// mode with uid DatasourceUID (or Options.DatasourceUID): overview (verdict matrix checks × regions,
// availability, state history), check (templated on $check: TTFB p50/p95 by
// region, phase breakdown, failures by cause, recent failures) and proxy
// (requests, errors, latency and ejections per origin). Every query reads
// the $bucket variable (default DefaultBucket, "db/rp" on InfluxDB 1.8) and
// filters on $region; they use only Flux that InfluxDB 1.8 already has.
//
// Options point them at an existing datasource and bucket; the gen
// command's -datasource-uid and -bucket flags set them. With
// Options.Alerting, SLOs and Checks the alert rules follow a vigil config
// as its alerter judges it (`vigil grafana -c FILE --out DIR` builds them
// from a config file).
//
// `go generate ./reporting/grafana` writes Dashboards() to
// examples/grafana/dashboards/<name>.json and AlertRules() to
// examples/grafana/provisioning/alerting/vigil-slo.yaml; tests fail when the
// committed files drift, and run every query of Queries() against a real
// InfluxDB.
package grafana
