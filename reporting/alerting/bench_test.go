package alerting

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// BenchmarkEvaluateEmbeddedStore measures one evaluation (down, cert,
// dead-man, TTFB and all four burn-rate pairs) of one availability + one
// TTFB SLO over three days of one run per minute in three regions, read
// from the embedded SQLite store.
func BenchmarkEvaluateEmbeddedStore(b *testing.B) {
	clock := &fakeClock{t: t0}
	st, err := store.Open(b.TempDir(), store.Options{Now: clock.Now, Retention: 30 * 24 * time.Hour,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var batch []reporting.Verdict
	for m := t0.Add(-72 * time.Hour); m.Before(t0); m = m.Add(time.Minute) {
		for _, r := range []string{"eu", "us", "ap"} {
			batch = append(batch, verdict("asset", "origin-a", r, m, H, time.Minute))
		}
		if len(batch) >= 3000 {
			if err := st.Publish(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := st.Publish(context.Background(), batch); err != nil {
		b.Fatal(err)
	}
	a, err := New(Config{Quorum: 2}, []SLO{
		{Name: "avail", Check: "asset", Objective: 99.9},
		{Name: "ttfb", Check: "asset", TTFBP95: 600 * time.Millisecond},
	}, st, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close(context.Background())
	b.ResetTimer()
	for b.Loop() {
		if err := a.Evaluate(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
