package influx_test

import (
	"context"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/influx"
	"github.com/vigil-synthetics/vigil/reporting/influx/influxtest"
)

// TestWritesFailingSinceSurvivesRestart: vigil restarted during an
// InfluxDB outage says "writes failing since" the outage's first failed
// write, not the restart; once the points are delivered, the next outage
// has its own start. FailingSince (the status page's "since") is the
// earliest of the failing writes' and reads' starts.
func TestWritesFailingSinceSurvivesRestart(t *testing.T) {
	srv := influxtest.Start(t)
	bucket := srv.NewDatabase(t)
	dir := t.TempDir()
	open := func() *influx.Store {
		st, err := influx.Open(influx.Config{URL: srv.URL, Bucket: bucket, FlushInterval: 20 * time.Millisecond, Timeout: 2 * time.Second},
			dir, influx.Options{Log: slog.New(slog.DiscardHandler), MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	publish := func(st *influx.Store) {
		if err := st.Publish(context.Background(), []reporting.Verdict{outageVerdict(time.Now(), 0)}); err != nil {
			t.Fatal(err)
		}
	}
	since := regexp.MustCompile(`writes failing since (\S+) \(`)
	writesSince := func(st *influx.Store) string {
		h := waitHealth(t, st, "writes failing since")
		return since.FindStringSubmatch(h)[1]
	}

	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	st := open()
	publish(st)
	first := writesSince(st)
	if fs := st.FailingSince().UTC().Format(time.RFC3339); fs != first {
		t.Errorf("FailingSince = %s, want the first failed write's %s", fs, first)
	}
	st.Close()

	time.Sleep(1100 * time.Millisecond) // the restart is in a later second
	st = open()
	defer func() { st.Close() }()
	if got := writesSince(st); got != first {
		t.Errorf("after a restart during the outage: writes failing since %s, want the outage's start %s", got, first)
	}
	if _, err := st.Verdicts(context.Background(), time.Minute); err == nil {
		t.Fatal("a read of a stopped InfluxDB worked")
	}
	if fs := st.FailingSince().UTC().Format(time.RFC3339); fs != first {
		t.Errorf("with reads failing too: FailingSince = %s, want the first failed write's %s", fs, first)
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	err := st.Flush(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Verdicts(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if h := st.Health(); h != nil {
		t.Fatalf("Health after InfluxDB returned = %v", h)
	}
	if fs := st.FailingSince(); !fs.IsZero() {
		t.Errorf("FailingSince after InfluxDB returned = %s, want zero", fs)
	}
	st.Close()

	// A new outage, after a restart: its own start.
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	st = open()
	publish(st)
	if got := writesSince(st); got <= first {
		t.Errorf("a later outage: writes failing since %s, want after the earlier one's %s", got, first)
	}
}
