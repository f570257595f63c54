package grafana

//go:generate go run ./gen -out ../../examples/grafana/dashboards -alerts ../../examples/grafana/provisioning/alerting/vigil-slo.yaml
