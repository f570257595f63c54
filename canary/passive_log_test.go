package canary

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting/influx"
)

// logLines returns the lines of log containing s.
func logLines(log *checktest.SyncBuffer, s string) []string {
	var out []string
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// TestPassiveSignalsOutageLogsOncePerMinute: while the signal store (a
// real InfluxDB client against a server answering 503) fails, the canary
// logs the first failed read, then at most one line a minute saying how
// many it left out, and one line when reads work again.
func TestPassiveSignalsOutageLogsOncePerMinute(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	var reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	}))
	defer srv.Close()
	src, err := influx.Open(influx.Config{URL: srv.URL, Bucket: "vigil/autogen"}, t.TempDir(), influx.Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	var clock atomic.Int64
	clock.Store(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).UnixNano())
	var log checktest.SyncBuffer
	cfg := testConfig(t, map[string]string{"o": "http://127.0.0.1:9"})
	c, err := New(cfg, nil, Options{Log: slog.New(slog.NewTextHandler(&log, nil)),
		Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	trig := TriggerConfig{Poll: 5 * time.Millisecond}
	if err := trig.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.WatchSignals(ctx, src, trig) }()
	defer func() { cancel(); <-done }()

	const failed = `msg="passive triggers: reading signals failed"`
	waitReads := func(n int64) {
		t.Helper()
		start := reads.Load()
		waitFor(t, "signal reads", func() bool { return reads.Load() >= start+n })
	}
	waitReads(20)
	if got := logLines(&log, failed); len(got) != 1 || strings.Contains(got[0], "suppressed") {
		t.Fatalf("after 20 failed reads within a second: %d failure lines, want the first alone:\n%s", len(got), strings.Join(got, "\n"))
	}
	clock.Add(int64(time.Minute))
	waitReads(20)
	got := logLines(&log, failed)
	if len(got) != 2 || !strings.Contains(got[1], " suppressed=") || strings.Contains(got[1], " suppressed=0 ") {
		t.Fatalf("a minute later: %d failure lines, want a second one with suppressed=N:\n%s", len(got), strings.Join(got, "\n"))
	}
	down.Store(false)
	waitFor(t, "the recovery line", func() bool { return len(logLines(&log, "passive triggers: reading signals recovered")) == 1 })
	if rec := logLines(&log, "recovered")[0]; !strings.Contains(rec, "failures=") || !strings.Contains(rec, "failed_for=1m0s") {
		t.Errorf("recovery line %q: want failures= and failed_for=1m0s", rec)
	}
	waitReads(10)
	if got := logLines(&log, failed); len(got) != 2 {
		t.Errorf("after recovery: %d failure lines, want still 2", len(got))
	}
}
