package scripts

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

const benchScript = `
- browser: {navigate: /shop}
- browser: {click: "#add-to-cart"}
- browser: {wait_text: {selector: "#cart-count", equals: "1"}}
`

// reportLatency reports p50 and p95 of the run wall times in ms.
func reportLatency(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	p := func(q float64) float64 {
		return float64(d[min(len(d)-1, int(q*float64(len(d))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(p(0.50), "p50-ms")
	b.ReportMetric(p(0.95), "p95-ms")
}

// rssOf sums the proportional set size (Pss, KiB: shared pages split
// between the processes that map them) of the processes whose command line
// holds marker.
func rssOf(marker string) int64 {
	entries, _ := os.ReadDir("/proc")
	var total int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmd, []byte("--user-data-dir="+marker)) {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/smaps_rollup")
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(st, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("Pss:")); ok {
				f := bytes.Fields(v)
				if len(f) > 0 {
					n, _ := strconv.ParseInt(string(f[0]), 10, 64)
					total += n
				}
			}
		}
	}
	return total
}

// BenchmarkBrowserCheckWarm is the wall time of one browser check (new
// isolated context + tab, navigate to a JS-rendered page, click, wait for
// text, close) on a warm browser.
func BenchmarkBrowserCheckWarm(b *testing.B) {
	needChromium(b)
	br := NewBrowser(BrowserConfig{Log: slog.New(slog.DiscardHandler)})
	defer br.Close()
	o := newPageOrigin(b)
	r := browserRunner(b, br, "", benchScript, 20*time.Second)
	tgt := checks.Target{Name: "bench", URL: o.URL}
	if res := r.Run(context.Background(), tgt); !res.OK {
		b.Fatalf("warm-up: %s: %s", res.Cause, res.Err)
	}
	var d []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if res := r.Run(context.Background(), tgt); !res.OK {
			b.Fatalf("run %d: %s: %s", i, res.Cause, res.Err)
		}
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, d)
}

// BenchmarkBrowserCheck4Concurrent runs the check from 4 goroutines with
// max_concurrent 4 and reports the latency and the peak memory (Pss) of
// the browser's processes and of the Go heap.
func BenchmarkBrowserCheck4Concurrent(b *testing.B) {
	needChromium(b)
	br := NewBrowser(BrowserConfig{MaxConcurrent: 4, Log: slog.New(slog.DiscardHandler)})
	defer br.Close()
	o := newPageOrigin(b)
	r := browserRunner(b, br, "", benchScript, 30*time.Second)
	tgt := checks.Target{Name: "bench", URL: o.URL}
	if res := r.Run(context.Background(), tgt); !res.OK {
		b.Fatalf("warm-up: %s: %s", res.Cause, res.Err)
	}
	dir := profileDir(br.PID())
	idle := rssOf(dir)
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			if v := rssOf(dir); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	var mu sync.Mutex
	var d []time.Duration
	var next atomic.Int64
	var failed atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				start := time.Now()
				if res := r.Run(context.Background(), tgt); !res.OK {
					failed.Add(1)
				}
				mu.Lock()
				d = append(d, time.Since(start))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(stop)
	sampler.Wait()
	if failed.Load() > 0 {
		b.Fatalf("%d runs failed", failed.Load())
	}
	reportLatency(b, d)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(idle)/1024, "chromium-idle-pss-MiB")
	b.ReportMetric(float64(peak.Load())/1024, "chromium-peak-pss-MiB")
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "go-heap-MiB")
}
