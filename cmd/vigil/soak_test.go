package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// loadResult counts what a client saw.
type loadResult struct {
	sent, failed atomic.Int64
	firstErr     atomic.Value
}

// drive sends GETs through the proxy at about rate per second from
// workers goroutines until ctx ends (bounded by ctx and by max requests).
func drive(ctx context.Context, base string, rate, workers int, max int64, res *loadResult) *sync.WaitGroup {
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	every := time.Duration(int64(time.Second) * int64(workers) / int64(rate))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(every)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if res.sent.Add(1) > max {
					return
				}
				path := []string{"/api/items", "/asset.bin", "/healthz"}[i%3]
				resp, err := client.Get(base + path)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode >= 500 {
						err = fmt.Errorf("%s: status %d", path, resp.StatusCode)
					}
				}
				if err != nil {
					res.failed.Add(1)
					res.firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	return &wg
}

func proxyConfig(dir string, urls []string, weights []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
agent: {region: test, data_dir: %s}
defaults: {interval: 1s, timeout: 800ms, rise: 2, fall: 2}
targets:
`, dir)
	for i, u := range urls {
		fmt.Fprintf(&b, "  - {name: o%d, url: %s}\n", i, u)
	}
	b.WriteString(`checks:
  - {name: healthz, targets: [o0, o1, o2], http: {path: /healthz}}
alerting: {disabled: true}
proxy:
  listen: 127.0.0.1:0
  pools:
    - name: web
      origins:
`)
	for i := range urls {
		fmt.Fprintf(&b, "        - {target: o%d, weight: %d}\n", i, weights[i])
	}
	b.WriteString(`      verdicts: {checks: [healthz], quorum: 1, max_age: 10s}
      passive: {consecutive_5xx: 3, ejection: 2s}
      retry: {tries: 3, try_timeout: 2s, budget: 4s}
`)
	return b.String()
}

func proxyBase(t *testing.T, a *app) string {
	t.Helper()
	waitFor(t, 10*time.Second, "the proxy listener", func() bool { return len(a.prx.Addrs()) > 0 })
	return "http://" + a.prx.Addrs()[0].String()
}

// TestProxyReloadUnderLoad: the config is rewritten (weights change) every
// 300ms while clients send a steady load; no client request fails.
func TestProxyReloadUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test skipped in -short mode")
	}
	var urls []string
	for range 3 {
		o := checktest.NewOrigin()
		defer o.Close()
		urls = append(urls, o.URL())
	}
	dir := t.TempDir()
	path := dir + "/vigil.yaml"
	if err := os.WriteFile(path, []byte(proxyConfig(dir, urls, []int{1, 1, 1})), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, proxy: true})
	defer stop()
	base := proxyBase(t, a)

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	var res loadResult
	wg := drive(ctx, base, 200, 8, 4000, &res)
	reloads := 0
	for i := 0; ctx.Err() == nil; i++ {
		time.Sleep(300 * time.Millisecond)
		w := []int{1 + i%3, 1 + (i+1)%3, 1 + (i+2)%3}
		if err := os.WriteFile(path, []byte(proxyConfig(dir, urls, w)), 0o600); err != nil {
			t.Fatal(err)
		}
		a.reload()
		reloads++
	}
	wg.Wait()
	a.mu.Lock()
	rerr := a.reloadErr
	a.mu.Unlock()
	if rerr != nil {
		t.Fatalf("reload failed: %v", rerr)
	}
	if res.failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed across %d reloads; first: %v", res.failed.Load(), res.sent.Load(), reloads, res.firstErr.Load())
	}
	t.Logf("%d requests, 0 failed, across %d reloads", res.sent.Load(), reloads)
}

// TestSoak (make soak; VIGIL_SOAK=1): proxy load for VIGIL_SOAK_DURATION
// (default 10m) with one origin flapping; heap and goroutines stay flat and
// no GET fails.
func TestSoak(t *testing.T) {
	if os.Getenv("VIGIL_SOAK") == "" {
		t.Skip("soak runs with make soak (VIGIL_SOAK=1)")
	}
	dur := 10 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("VIGIL_SOAK_DURATION")); err == nil {
		dur = d
	}
	var urls []string
	for i := range 3 {
		opts := []checktest.Option{}
		if i == 1 {
			opts = append(opts, checktest.WithMode(checktest.ModeFlapping), checktest.WithFlapPeriod(5*time.Second))
		}
		o := checktest.NewOrigin(opts...)
		defer o.Close()
		urls = append(urls, o.URL())
	}
	dir := t.TempDir()
	path := dir + "/vigil.yaml"
	if err := os.WriteFile(path, []byte(proxyConfig(dir, urls, []int{1, 1, 1})), 0o600); err != nil {
		t.Fatal(err)
	}
	a, stop := startApp(t, path, roles{canary: true, proxy: true})
	defer stop()
	base := proxyBase(t, a)

	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var res loadResult
	wg := drive(ctx, base, 300, 16, int64(dur.Seconds()*400), &res)
	sample := func() (uint64, int) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse, runtime.NumGoroutine()
	}
	time.Sleep(min(dur/5, time.Minute)) // warm-up: pools and buffers fill
	heap0, gr0 := sample()
	var heapMax uint64
	grMax := 0
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			h, g := sample()
			heapMax, grMax = max(heapMax, h), max(grMax, g)
			t.Logf("heap %.1f MiB, goroutines %d, requests %d, failed %d", float64(h)/(1<<20), g, res.sent.Load(), res.failed.Load())
		}
	}
	wg.Wait()
	heap1, gr1 := sample()
	t.Logf("after warm-up: heap %.1f MiB, %d goroutines; end: heap %.1f MiB, %d goroutines; max %.1f MiB, %d; %d requests, %d failed",
		float64(heap0)/(1<<20), gr0, float64(heap1)/(1<<20), gr1, float64(heapMax)/(1<<20), grMax, res.sent.Load(), res.failed.Load())
	if heap1 > heap0*3/2+16<<20 {
		t.Errorf("heap grew from %.1f MiB to %.1f MiB", float64(heap0)/(1<<20), float64(heap1)/(1<<20))
	}
	if gr1 > gr0+64 {
		t.Errorf("goroutines grew from %d to %d", gr0, gr1)
	}
	if res.failed.Load() != 0 {
		t.Errorf("%d of %d GETs failed; first: %v", res.failed.Load(), res.sent.Load(), res.firstErr.Load())
	}
}
