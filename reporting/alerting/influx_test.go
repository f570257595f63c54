package alerting

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// TestInfluxSameAlerts runs the multi-region scenario through a real
// InfluxDB 1.8 (the store many canaries share) and expects the alerts the
// in-memory reference produces.
func TestInfluxSameAlerts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts influxd")
	}
	srv := influxtest.Start(t)
	st, err := influx.Open(influx.Config{URL: srv.URL, Bucket: srv.NewDatabase(t), FlushInterval: 20 * time.Millisecond,
		Timeout: 10 * time.Second}, t.TempDir(), influx.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	clock := &fakeClock{t: t0.Add(-3 * time.Hour)}
	viaInflux := scenarioEvents(t, clock, st, func(vs []reporting.Verdict) {
		if err := st.Publish(context.Background(), vs); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := st.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	})

	clock2 := &fakeClock{t: t0.Add(-3 * time.Hour)}
	mem := &memStore{clock: clock2.Now}
	viaMem := scenarioEvents(t, clock2, mem, func(vs []reporting.Verdict) { mem.add(vs...) })
	if strings.Join(viaInflux, "\n") != strings.Join(viaMem, "\n") {
		t.Fatalf("InfluxDB:\n%s\nin-memory:\n%s", strings.Join(viaInflux, "\n"), strings.Join(viaMem, "\n"))
	}
}
