package checks_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

func benchHTTP(b *testing.B, spec checks.HTTPSpec, expect checks.Expect) {
	o := checktest.NewOrigin()
	defer o.Close()
	h, err := checks.NewHTTP(spec, expect, checks.Options{Check: "bench", Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	t := checks.Target{URL: o.URL()}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := h.Run(ctx, t); !r.OK {
			b.Fatalf("%s %s", r.Cause, r.Err)
		}
	}
}

// BenchmarkHTTPCheck: a /healthz check on a fresh connection per run (the
// default).
func BenchmarkHTTPCheck(b *testing.B) {
	benchHTTP(b, checks.HTTPSpec{Path: "/healthz"}, checks.Expect{Status: checks.StatusList{"200"}})
}

// BenchmarkHTTPCheckKeepAlive: the same with reuse_connections: true.
func BenchmarkHTTPCheckKeepAlive(b *testing.B) {
	benchHTTP(b, checks.HTTPSpec{Path: "/healthz", ReuseConnections: true}, checks.Expect{Status: checks.StatusList{"200"}})
}

// BenchmarkHTTPCheckDeep: the 64 KiB asset with checksum, headers and
// content type, keep-alive.
func BenchmarkHTTPCheckDeep(b *testing.B) {
	benchHTTP(b, checks.HTTPSpec{Path: "/asset.bin", ReuseConnections: true, CacheBust: true}, checks.Expect{
		Status: checks.StatusList{"200"}, Checksum: "sha256:" + checktest.AssetSHA256(), ContentType: "application/octet-stream",
		Headers: map[string]string{"cache-control": `~max-age=\d+`, "access-control-allow-origin": "present"},
	})
}

// BenchmarkTTFBError reports how far the measured TTFB is from an origin's
// fixed first-byte delay: p50 and p99 of |ttfb − delay| in milliseconds.
// Run with -benchtime 100x for the 100-run figure.
func BenchmarkTTFBError(b *testing.B) {
	for _, d := range []time.Duration{50 * time.Millisecond, 200 * time.Millisecond} {
		b.Run(d.String(), func(b *testing.B) {
			o := checktest.NewOrigin(checktest.WithFirstByteDelay(d))
			defer o.Close()
			h, _ := checks.NewHTTP(checks.HTTPSpec{Path: "/healthz"}, checks.Expect{}, checks.Options{Timeout: 5 * time.Second})
			t := checks.Target{URL: o.URL()}
			var errs []float64
			for b.Loop() {
				r := h.Run(context.Background(), t)
				if !r.OK {
					b.Fatalf("%s %s", r.Cause, r.Err)
				}
				errs = append(errs, math.Abs(float64(r.Phases.TTFB-d))/float64(time.Millisecond))
			}
			slices.Sort(errs)
			q := func(p float64) float64 { return errs[min(len(errs)-1, int(math.Ceil(p*float64(len(errs))))-1)] }
			b.ReportMetric(q(0.50), "ttfb-err-p50-ms")
			b.ReportMetric(q(0.99), "ttfb-err-p99-ms")
			b.ReportMetric(errs[len(errs)-1], "ttfb-err-max-ms")
		})
	}
}
