package statuspage

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestBrowser drives the page in real headless Chromium: the fault button
// POSTs and redirects back, the auto-refresh script swaps the matrix in place
// (no reload) under the page's Content-Security-Policy, and the stylesheet
// applies.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: no Chromium")
	}
	bin := chromium(t)
	src := &memSource{now: time.Now}
	publish := func(state reporting.State, cause string) {
		now := time.Now()
		src.add(reporting.Verdict{Check: "asset", Target: "origin-a", Region: "eu-west", Vantage: "c1", State: state,
			OK: cause == "", Cause: cause, TTFB: 12 * time.Millisecond, At: now, Expires: now.Add(time.Hour)})
	}
	publish(reporting.StateHealthy, "")
	var mu sync.Mutex
	mode := "ok"
	fc := &FaultControl{Origins: []string{"origin-a"}, Open: true,
		Set: func(_, m string) error {
			mu.Lock()
			mode = m
			mu.Unlock()
			if m == "corrupt" {
				publish(reporting.StateUnhealthy, "checksum")
			}
			return nil
		},
		Current: func(string) string { mu.Lock(); defer mu.Unlock(); return mode }}
	p, err := New(Options{Verdicts: src, Faults: fc, Refresh: 300 * time.Millisecond,
		Origins: func() []Origin { return []Origin{{Pool: "web", Name: "origin-a", Available: true}} }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()

	ctx := chromeContext(t, bin)

	cell := `td[data-check="asset"][data-target="origin-a"][data-region="eu-west"]`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(cell+`[data-state="healthy"]`)),
	); err != nil {
		t.Fatalf("open page: %v", err)
	}
	bg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('`+cell+`')).backgroundColor`))
	if err != nil {
		t.Fatal(err)
	}
	if bg != "rgb(226, 243, 230)" {
		t.Errorf("healthy cell background %q: stylesheet not applied", bg)
	}

	// The fault button posts, Set runs, the browser lands back on the page.
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`button[data-fault-origin="origin-a"][data-fault-mode="corrupt"]`)),
		chromedp.WaitVisible(chromedp.CSS(cell+`[data-state="unhealthy"][data-cause="checksum"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[data-fault-mode="corrupt"][aria-pressed="true"]`)),
	); err != nil {
		t.Fatalf("fault switch: %v", err)
	}

	// Auto-refresh replaces the matrix in place: a marker on window survives.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__vigilMarker = 7`)); err != nil {
		t.Fatal(err)
	}
	publish(reporting.StateHealthy, "")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(cell+`[data-state="healthy"]`))); err != nil {
		t.Fatalf("auto-refresh: %v", err)
	}
	marker, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__vigilMarker || 0`))
	if err != nil {
		t.Fatal(err)
	}
	if marker != 7 {
		t.Errorf("page reloaded instead of refreshing in place (marker %d)", marker)
	}

	// A failing store shows the error banner on the next refresh; it goes
	// away once the store answers again.
	src.setErr(errDown)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#error:not([hidden])`))); err != nil {
		t.Fatalf("error banner: %v", err)
	}
	src.setErr(nil)
	if err := chromedp.Do(ctx, chromedp.WaitNotVisible(chromedp.CSS(`#error`)),
		chromedp.WaitVisible(chromedp.CSS(cell+`[data-state="healthy"]`))); err != nil {
		t.Fatalf("error banner stays: %v", err)
	}
}

// chromeContext starts headless Chromium bin (with extra allocator
// options) for one test, ended with it, and returns a browser context
// bounded to 30 s. Chromium, ended by the allocator's cancel, leaves its
// org.chromium.Chromium.* scratch directories in TMPDIR: a TMPDIR of the
// test's own keeps them out of /tmp and removes them with it.
func chromeContext(t *testing.T, bin string, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("TMPDIR="+t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), append(opts, extra...)...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 30*time.Second)
	t.Cleanup(cancelT)
	return ctx
}
