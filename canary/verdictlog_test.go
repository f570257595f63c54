package canary

import (
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// TestUnknownToUnhealthyLoggedAtInfo: a pair whose first verdict is
// unhealthy is logged at info ("verdict changed … from=unknown
// to=unhealthy") like any other change, since it may page; a pair that
// starts healthy is routine and stays at debug.
func TestUnknownToUnhealthyLoggedAtInfo(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	cfg := testConfig(t, map[string]string{"up": o.URL(), "down": dead},
		CheckConfig{Name: "h", Targets: []string{"up", "down"}, Fall: 1, HTTP: &checks.HTTPSpec{Path: "/healthz"}})
	logs := &checktest.SyncBuffer{}
	c := start(t, cfg, compile(t, cfg), Options{Sink: &memSink{},
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	waitFor(t, "down unhealthy", stateIs(c, "h", "down", reporting.StateUnhealthy))
	waitFor(t, "up healthy", stateIs(c, "h", "up", reporting.StateHealthy))
	waitFor(t, "the unhealthy start logged at info", func() bool {
		return strings.Contains(logs.String(), `level=INFO msg="verdict changed" check=h target=down from=unknown to=unhealthy`)
	})
	if strings.Contains(logs.String(), "target=up from=unknown") {
		t.Errorf("a healthy start logged at info:\n%s", logs.String())
	}
}
