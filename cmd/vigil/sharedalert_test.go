package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestRunWarnsOfSharedStoreAlerting: `vigil run` with alerting on and
// store.influxdb (the store every region writes) warns at start that each
// region running it sends its own notification for every alert, and says
// what to run instead. `vigil alerter`, alerting.disabled: true and an
// embedded store alone are silent.
func TestRunWarnsOfSharedStoreAlerting(t *testing.T) {
	const warning = "alerting: vigil run alerts on the shared InfluxDB store (store.influxdb)"
	for _, tc := range []struct {
		name     string
		roles    roles
		alerting string
		influx   bool
		warn     bool
	}{
		{"run on influxdb", roles{canary: true, alerter: true, page: true}, "", true, true},
		{"alerter on influxdb", roles{alerter: true, page: true}, "", true, false},
		{"run with alerting disabled", roles{canary: true, alerter: true, page: true}, "alerting: {disabled: true}", true, false},
		{"run on the embedded store", roles{canary: true, alerter: true, page: true}, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := "store: {embedded: {enabled: true}}"
			if tc.influx {
				// Nothing listens there: the outbox keeps the verdicts.
				store = "store: {embedded: {enabled: true}, influxdb: {url: \"http://127.0.0.1:9\", bucket: vigil/autogen}}"
			}
			path := writeConfig(t, fmt.Sprintf(`
agent: {region: r1, data_dir: %q}
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks: [{name: healthz, targets: [a], interval: 30s, http: {path: /healthz}}]
%s
%s
`, t.TempDir(), store, tc.alerting))
			cfg, err := loadConfig(path, os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			var logs checktest.SyncBuffer
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			a, err := newApp(cfg, appOptions{roles: tc.roles, listener: ln, watch: 100 * time.Millisecond,
				log: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("app did not stop within 20s")
			}
			got := strings.Contains(logs.String(), warning)
			if got != tc.warn {
				t.Errorf("warning logged: %v, want %v; log:\n%s", got, tc.warn, logs.String())
			}
			if got && (!strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "run one vigil alerter") ||
				!strings.Contains(logs.String(), "alerting.disabled: true")) {
				t.Errorf("the warning does not say what to do instead:\n%s", logs.String())
			}
		})
	}
}
