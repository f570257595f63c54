package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// startTestDemo runs the demo on free ports with a temp data dir.
func startTestDemo(t *testing.T) (*demo, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := demoFlags{listen: "127.0.0.1:0", proxyListen: "127.0.0.1:0", originPort: 0,
		dataDir: t.TempDir(), traffic: 10, browser: false, logLevel: "warn"}
	d, err := startDemo(ctx, f, discardLogger(), io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stop := func() {
		cancel()
		if err := d.wait(); err != nil {
			t.Errorf("demo stopped with error: %v", err)
		}
	}
	return d, stop
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitFor polls cond every 200ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return time.Since(start)
}

func artifactDir(t *testing.T) string {
	dir := os.Getenv("VIGIL_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func findChromium() (string, error) {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium, chromium-browser or google-chrome on PATH")
}

// TestDemoEndToEnd is the first minute a newcomer sees, in real headless
// Chromium: all origins healthy; one switched to corrupt from the page;
// within fall × interval + 5s the page shows it unhealthy with cause
// checksum and the proxy section shows it out.
func TestDemoEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end demo test skipped in -short mode")
	}
	chrome, err := findChromium()
	checktest.NeedDependency(t, "chromium", err)

	d, stop := startTestDemo(t)
	defer stop()
	base := "http://" + d.app.Addr()

	// All three origins healthy in every region for the deep asset check.
	waitFor(t, 30*time.Second, "asset healthy everywhere", func() bool {
		return strings.Count(getBody(t, base+"/"), `data-check="asset"`) == 9 &&
			strings.Count(getBody(t, base+"/"), `data-check="asset" data-target="origin-b" data-region="`) == 3 &&
			!strings.Contains(getBody(t, base+"/"), `data-state="unknown"`)
	})

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1280, 1000))...)
	defer cancelAlloc()
	bctx, cancelB := chromedp.NewContext(alloc)
	defer cancelB()
	bctx, cancelT := context.WithTimeout(bctx, 90*time.Second)
	defer cancelT()

	count := func(sel string) int {
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
		if err != nil {
			t.Fatalf("count %s: %v", sel, err)
		}
		return n
	}
	open := func() {
		if err := chromedp.Do(bctx, chromedp.Navigate(base+"/"),
			chromedp.WaitVisible(chromedp.CSS(`td[data-check="asset"][data-target="origin-b"]`))); err != nil {
			t.Fatalf("open status page: %v", err)
		}
	}
	open()
	if cells, healthy := count(`td[data-check="asset"]`), count(`td[data-check="asset"][data-state="healthy"]`); cells != 9 || healthy != 9 {
		t.Fatalf("asset cells: %d, healthy: %d; want 9 and 9", cells, healthy)
	}

	// Break origin-b from the page.
	clicked := time.Now()
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`button[data-fault-origin="origin-b"][data-fault-mode="corrupt"]`))); err != nil {
		t.Fatalf("click fault button: %v", err)
	}
	waitFor(t, 5*time.Second, "origin-b switched to corrupt", func() bool { return d.origins["origin-b"].Mode().String() == "corrupt" })

	// fall (2) × interval (3s) + 5s.
	limit := 2*3*time.Second + 5*time.Second
	for {
		open()
		unhealthy := count(`td[data-check="asset"][data-target="origin-b"][data-state="unhealthy"][data-cause="checksum"]`)
		out := count(`tr[data-origin="origin-b"][data-available="false"]`)
		if unhealthy >= 2 && out == 1 {
			break
		}
		if time.Since(clicked) > limit {
			t.Fatalf("after %s: %d regions show asset × origin-b unhealthy/checksum, proxy rows out: %d; want ≥2 and 1",
				time.Since(clicked).Round(time.Millisecond), unhealthy, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("origin-b judged unhealthy (checksum) and out of the proxy %s after the click (limit %s)",
		time.Since(clicked).Round(time.Millisecond), limit)

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(artifactDir(t), "demo-e2e.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	// The proxy routes around origin-b: no client sees the corrupt body.
	proxyURL := "http://" + d.proxyAddr()
	for i := 0; i < 30; i++ {
		resp, err := http.Get(proxyURL + "/asset.bin")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) != checktest.AssetSize || string(b) != string(checktest.Asset()) {
			t.Fatalf("request %d through the proxy: status %d, %d bytes, intact=%v", i, resp.StatusCode, len(b), string(b) == string(checktest.Asset()))
		}
	}
}
