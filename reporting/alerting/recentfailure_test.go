package alerting

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// countingSource counts the rows History returns.
type countingSource struct {
	*store.Store
	rows atomic.Int64
}

func (c *countingSource) History(ctx context.Context, q reporting.HistoryQuery) ([]reporting.Verdict, error) {
	vs, err := c.Store.History(ctx, q)
	c.rows.Add(int64(len(vs)))
	return vs, err
}

// TestRecentFailureReadsFailuresOnly: a burn-rate alert's cause after an
// hour of a wide outage is read from the newest failed runs of its regions
// (reporting.DownRuns, recentFailureRuns each), not the hour's every run
// (720 rows per firing series at every evaluation, the alerter's main cost
// for hours after an outage); a failure among an hour of passing runs is
// still found, and runs that failed only their TTFB assertion or that the
// agent could not make give no cause. Over the embedded store.
func TestRecentFailureReadsFailuresOnly(t *testing.T) {
	clock := &fakeClock{t: t0}
	st, err := store.Open(t.TempDir(), store.Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var vs []reporting.Verdict
	for i := range 360 { // an hour, a run every 10 s
		at := t0.Add(-time.Hour + time.Duration(i+1)*10*time.Second)
		for _, region := range []string{"eu", "us"} {
			// outage: every run of o1 failed; o2 failed once, 50 minutes ago
			v := reporting.Verdict{Check: "asset", Target: "o1", Region: region, Vantage: region + "-1", State: reporting.StateUnhealthy,
				Cause: "connect_refused", Err: "connection refused", At: at}
			if i%3 != 0 {
				v.Cause, v.Err = "status", "status 503 not in 200"
			}
			if i == 358 {
				v.Err = "status 502 not in 200"
			}
			if i == 359 {
				v.Cause, v.Err = reporting.CauseTTFB, "ttfb 900ms over 500ms"
			}
			w := reporting.Verdict{Check: "asset", Target: "o2", Region: region, Vantage: region + "-1", State: reporting.StateHealthy, OK: true, At: at}
			if i == 60 {
				w.OK, w.State, w.Cause, w.Err = false, reporting.StateUnhealthy, "tls", "certificate expired"
			}
			if i == 300 {
				w.OK, w.State, w.Cause, w.Err = false, reporting.StateHealthy, reporting.CauseAgent, "no browser"
			}
			vs = append(vs, v, w)
		}
	}
	if err := st.Publish(context.Background(), vs); err != nil {
		t.Fatal(err)
	}
	src := &countingSource{Store: st}
	e := &evaluator{src: src, now: t0}

	cause, msg := e.recentFailure(context.Background(), seriesKey{"asset", "o1"}, []string{"eu", "us"}, time.Hour)
	if cause != "status" || msg != "status 502 not in 200" {
		t.Errorf("o1: cause %q, error %q; want status, the newest error of that cause", cause, msg)
	}
	if n := src.rows.Load(); n > 2*recentFailureRuns {
		t.Errorf("o1: read %d rows for a cause, want at most %d (the newest failed runs of 2 regions)", n, 2*recentFailureRuns)
	}
	src.rows.Store(0)
	cause, msg = e.recentFailure(context.Background(), seriesKey{"asset", "o2"}, []string{"eu"}, time.Hour)
	if cause != "tls" || msg != "certificate expired" {
		t.Errorf("o2: cause %q, error %q; want the one failure of the hour, tls", cause, msg)
	}
	if n := src.rows.Load(); n > 2 {
		t.Errorf("o2: read %d rows, want the failed ones only", n)
	}
}
