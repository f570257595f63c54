package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
	"github.com/vigil-synthetics/vigil/reporting/store"
)

// BenchmarkStorePublish writes batches of 100 verdicts spread over 1,000
// series; the verdicts/s metric is the sustained write rate.
func BenchmarkStorePublish(b *testing.B) {
	s := open(b, b.TempDir(), store.Options{})
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	batch := make([]reporting.Verdict, 100)
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		for j := range batch {
			batch[j] = reporting.Verdict{Check: fmt.Sprint("check-", n%100), Target: fmt.Sprint("origin-", n%10), Region: "eu-west",
				Vantage: "canary-1", State: reporting.StateHealthy, OK: true, StatusCode: 200, TTFB: time.Duration(n%500) * time.Millisecond,
				At: base.Add(time.Duration(n) * time.Millisecond), Expires: base.Add(time.Hour)}
			n++
		}
		if err := s.Publish(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "verdicts/s")
}

// BenchmarkVerdicts reads the latest verdict of 10,000 series (the proxy's
// and status page's query) from a store holding 3 runs of each.
func BenchmarkVerdicts(b *testing.B) {
	s := open(b, b.TempDir(), store.Options{})
	ctx := context.Background()
	base := time.Now().Add(-10 * time.Minute)
	const series = 10000
	for run := 0; run < 3; run++ {
		batch := make([]reporting.Verdict, 0, 1000)
		for i := 0; i < series; i++ {
			batch = append(batch, reporting.Verdict{Check: fmt.Sprint("check-", i/10), Target: fmt.Sprint("origin-", i%10), Region: "eu-west",
				State: reporting.StateHealthy, OK: true, At: base.Add(time.Duration(run)*time.Minute + time.Duration(i)*time.Microsecond)})
			if len(batch) == cap(batch) {
				if err := s.Publish(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		v, err := s.Verdicts(ctx, time.Hour)
		if err != nil || len(v) != series {
			b.Fatalf("Verdicts = %d, %v", len(v), err)
		}
	}
}

// BenchmarkRollups measures one SLO read: per-minute rollups of one check ×
// target in 3 regions over 24 h of 30 s runs, among 20 other checks' data.
func BenchmarkRollups(b *testing.B) {
	s := open(b, b.TempDir(), store.Options{})
	ctx := context.Background()
	now := time.Now()
	start := now.Add(-24 * time.Hour)
	var batch []reporting.Verdict
	for c := 0; c < 21; c++ {
		for _, region := range []string{"eu-west", "us-east", "ap-south"} {
			for at := start; at.Before(now); at = at.Add(30 * time.Second) {
				if c > 0 && at.Before(now.Add(-time.Hour)) {
					continue
				}
				batch = append(batch, reporting.Verdict{Check: fmt.Sprint("check-", c), Target: "origin-a", Region: region,
					State: reporting.StateHealthy, OK: at.Minute()%17 != 0, TTFB: time.Duration(at.Second()+10) * time.Millisecond, At: at})
			}
		}
	}
	if err := s.Publish(ctx, batch); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := s.Rollups(ctx, reporting.HistoryQuery{Check: "check-0", Target: "origin-a", From: start, To: now})
		if err != nil || len(r) < 3*1439 {
			b.Fatalf("Rollups = %d rows, %v", len(r), err)
		}
	}
}
