package scripts

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/vigil-synthetics/vigil/checks"
)

func browserRunner(t testing.TB, b *Browser, dataDir, src string, timeout time.Duration) *Runner {
	t.Helper()
	r, err := New(mustScript(t, src), Options{Check: "shop-flow", Timeout: timeout, DataDir: dataDir, Browser: b})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

func TestBrowserJSRenderedFlowPasses(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	dir := t.TempDir()
	r := browserRunner(t, b, dir, `
- browser: {navigate: /shop}
- browser: {assert_title: "Shop"}
- browser: {assert_url: "~/shop$"}
- browser: {wait_visible: "#add-to-cart"}
- browser: {eval: {js: "document.querySelectorAll('.item').length", equals: 3}}
- browser: {click: "#add-to-cart"}
- browser: {wait_visible: "#cart"}
- browser: {wait_text: {selector: "#cart-count", equals: "1"}}
- browser: {assert_text: {selector: "#cart-count", regex: "^[0-9]+$"}}
- browser: {type: {selector: "#q", text: "shoes"}}
- browser: {select: {selector: "#size", value: "42"}}
- browser: {assert_text: {selector: "#echo", equals: "shoes/42"}}
- browser: {eval: {js: "new Promise(r => setTimeout(() => r('done'), 10))", contains: "do"}}
- browser: {sleep: 50ms}
- browser: {screenshot: true}
- browser: {no_console_errors: true}
- browser: {max_failed_requests: 0}
`, 30*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "local", URL: o.URL})
	if !res.OK {
		t.Fatalf("flow failed: %s: %s\nsteps: %+v", res.Cause, res.Err, res.Steps)
	}
	nav := res.Steps[0]
	if nav.StatusCode != 200 || nav.TTFB <= 0 || nav.URL != o.URL+"/shop" {
		t.Errorf("navigate step: %+v", nav)
	}
	for _, m := range []string{"ttfb_ms", "dom_content_loaded_ms", "load_ms", "cls"} {
		if _, ok := nav.Metrics[m]; !ok {
			t.Errorf("navigate metrics lack %s: %v", m, nav.Metrics)
		}
	}
	t.Logf("navigate metrics: %v", nav.Metrics)
	if len(res.Artifacts) != 1 || !strings.HasSuffix(res.Artifacts[0], ".png") {
		t.Fatalf("artifacts %v, want the screenshot step's PNG", res.Artifacts)
	}
	if png, err := os.ReadFile(filepath.Join(ArtifactsDir(dir), res.Artifacts[0])); err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Errorf("screenshot is not a PNG: %v", err)
	}
}

func TestBrowserBrokenSelectorFailsWithScreenshot(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	dir := t.TempDir()
	r := browserRunner(t, b, dir, `
- browser: {navigate: /shop}
- name: add to cart
  browser: {click: "#add-to-cartx"}
  timeout: 1s
- browser: {assert_text: {selector: "#cart-count", equals: "1"}}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "local", URL: o.URL})
	if res.OK {
		t.Fatal("passed with a broken selector")
	}
	if res.Cause != checks.CauseScript {
		t.Errorf("cause %q, want script (%s)", res.Cause, res.Err)
	}
	if !strings.Contains(res.Err, `step 1 "add to cart"`) || !strings.Contains(res.Err, "#add-to-cartx") {
		t.Errorf("err %q", res.Err)
	}
	if s := res.Steps[1]; s.OK || s.Cause != checks.CauseScript || s.URL != o.URL+"/shop" {
		t.Errorf("failed step %+v", s)
	}
	if !res.Steps[2].Skipped {
		t.Errorf("step after failure not skipped: %+v", res.Steps[2])
	}
	if len(res.Artifacts) != 1 {
		t.Fatalf("artifacts %v", res.Artifacts)
	}
	// The reference is the bare file name under <data_dir>/artifacts.
	if a := res.Artifacts[0]; !strings.HasPrefix(a, "shop-flow~local~") || strings.ContainsAny(a, `/\`) {
		t.Errorf("artifact reference %q, want a file name shop-flow~local~*.png", a)
	}
	png := filepath.Join(dir, "artifacts", res.Artifacts[0])
	data, err := os.ReadFile(png)
	if err != nil || !strings.HasPrefix(string(data), "\x89PNG") {
		t.Fatalf("screenshot: %v", err)
	}
	var info failureInfo
	side, err := os.ReadFile(strings.TrimSuffix(png, ".png") + ".json")
	if err != nil || json.Unmarshal(side, &info) != nil || info.URL != o.URL+"/shop" || info.Step != 1 {
		t.Errorf("sidecar %s: %v", side, err)
	}
}

func TestBrowserTTFBFromNavigationTiming(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	r := browserRunner(t, b, "", `[{browser: {navigate: /slow}}, {browser: {assert_text: {selector: "#x", equals: slow}}}]`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "local", URL: o.URL})
	if !res.OK {
		t.Fatalf("%s: %s", res.Cause, res.Err)
	}
	if got := res.Steps[0].TTFB; got < 300*time.Millisecond {
		t.Errorf("TTFB %s, want >= 300ms (metrics %v)", got, res.Steps[0].Metrics)
	}
	if res.Phases.TTFB != res.Steps[0].TTFB {
		t.Errorf("result TTFB %s != step TTFB %s", res.Phases.TTFB, res.Steps[0].TTFB)
	}
	if v := res.Steps[0].Metrics["request_to_first_byte_ms"]; v < 300 {
		t.Errorf("request_to_first_byte_ms %v", v)
	}
}

func TestBrowserConsoleErrorsAndFailedRequests(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	for _, tc := range []struct {
		name, step, want string
	}{
		{"console", `{no_console_errors: true}`, "kaboom"},
		{"failed requests", `{max_failed_requests: 0}`, "missing.png"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := browserRunner(t, b, "", `
- browser: {navigate: /errors}
- browser: {sleep: 200ms}
- browser: `+tc.step, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "local", URL: o.URL})
			if res.OK || res.Cause != checks.CauseScript || !strings.Contains(res.Err, tc.want) {
				t.Fatalf("res %s: %s", res.Cause, res.Err)
			}
			if a := res.Steps[2].Assertions; len(a) != 1 || a[0].OK {
				t.Errorf("assertions %+v", a)
			}
			if m := res.Steps[2].Metrics; m["console_errors"] < 1 || m["failed_requests"] < 1 {
				t.Errorf("metrics %v, want console errors and failed requests counted", m)
			}
		})
	}
	// A page with an uncaught exception only.
	r := browserRunner(t, b, "", `
- browser: {navigate: /errors}
- browser: {sleep: 200ms}
- browser: {eval: {js: "1+1", equals: 2}}
- browser: {assert_title: "~^Err"}
`, 20*time.Second)
	if res := r.Run(context.Background(), checks.Target{Name: "local", URL: o.URL}); !res.OK {
		t.Fatalf("eval/title: %s: %s", res.Cause, res.Err)
	}
}

func TestBrowserAssertionsFail(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	for _, tc := range []struct{ name, step, want string }{
		{"title", `{assert_title: "Shopping"}`, `assert_title: got "Shop"`},
		{"url", `{assert_url: "/other"}`, "assert_url"},
		{"eval", `{eval: {js: "1+1", equals: 3}}`, "eval: value 2, want 3"},
		{"eval exception", `{eval: {js: "nope()"}}`, "nope is not defined"},
		{"text", `{assert_text: {selector: "#cart-count", equals: "7"}}`, `text "0", want equals "7"`},
		{"select unknown option", `{select: {selector: "#size", value: "99"}}`, `no option "99"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := browserRunner(t, b, "", `
- browser: {navigate: /shop}
- browser: {wait_visible: "#add-to-cart"}
- browser: `+tc.step+`
  timeout: 2s`, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "local", URL: o.URL})
			if res.OK || res.Cause != checks.CauseScript || !strings.Contains(res.Err, tc.want) {
				t.Fatalf("got %s: %s; want script: %s", res.Cause, res.Err, tc.want)
			}
		})
	}
}

func TestBrowserNavigateErrors(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	dead := newPageOrigin(t)
	deadURL := dead.URL
	dead.Close()
	for _, tc := range []struct {
		name, url string
		top, step checks.Cause
	}{
		{"status 503", o.URL, checks.CauseScript, checks.CauseStatus},
		{"refused", deadURL, checks.CauseConnectRefused, checks.CauseConnectRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := browserRunner(t, b, "", `[{browser: {navigate: /broken}}]`, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "x", URL: tc.url})
			if res.OK || res.Cause != tc.top || res.Steps[0].Cause != tc.step {
				t.Fatalf("cause %s / step %s (%s), want %s / %s", res.Cause, res.Steps[0].Cause, res.Err, tc.top, tc.step)
			}
		})
	}
}

// TestBrowserStepTimeoutCauses: a step that runs out of its own timeout
// (the check's is far off) while the origin has not delivered the page is
// cause timeout ("could not run"), as an http step to the same origin is;
// an element (or text) that never appears on a page that loaded is cause
// script, naming the step and the selector.
func TestBrowserStepTimeoutCauses(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	for _, tc := range []struct {
		name, script string
		cause        checks.Cause
		err          string
	}{
		{"slow origin, navigate", `[{name: open, timeout: 500ms, browser: {navigate: /slower}}]`, checks.CauseTimeout,
			`step 0 "open" (browser.navigate): navigate ` + o.URL + `/slower: no load event within 500ms`},
		{"slow origin, http step", `[{name: get, timeout: 500ms, http: {path: /slower}}]`, checks.CauseTimeout,
			`step 0 "get" (http): `},
		{"element never appears", `
- browser: {navigate: /tiny}
- {name: wait, timeout: 500ms, browser: {wait_visible: "#never"}}`, checks.CauseScript,
			`step 1 "wait" (browser.wait_visible): wait_visible #never: no element within 500ms`},
		{"text never appears", `
- browser: {navigate: /tiny}
- {name: wait, timeout: 500ms, browser: {wait_text: {selector: "#x", equals: "done"}}}`, checks.CauseScript,
			`step 1 "wait" (browser.wait_text): wait_text #x: text "ok", want equals "done", within 500ms`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := browserRunner(t, b, "", tc.script, 10*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
			last := res.Steps[len(res.Steps)-1]
			if res.OK || res.Cause != tc.cause || last.Cause != tc.cause || !strings.HasPrefix(res.Err, tc.err) {
				t.Fatalf("cause %s / step %s (%s)\nwant %s: %s", res.Cause, last.Cause, res.Err, tc.cause, tc.err)
			}
			if res.CouldNotRun() != (tc.cause == checks.CauseTimeout) {
				t.Errorf("could not run: %v, want %v", res.CouldNotRun(), tc.cause == checks.CauseTimeout)
			}
			if res.Phases.Total > 5*time.Second {
				t.Errorf("the run took %s: the step's timeout did not end it", res.Phases.Total)
			}
		})
	}
}

// TestBrowserMissingElementAtRunDeadlineIsScript: an element that never
// appears is a script failure naming the step and the selector, also when
// the check's timeout (not a step timeout) ends the wait; the
// failure screenshot is still taken, within the check's timeout, and an
// always step still runs. A navigation that never loads stays `timeout`.
func TestBrowserMissingElementAtRunDeadlineIsScript(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	dir := t.TempDir()
	const timeout = 3 * time.Second
	r := browserRunner(t, b, dir, `
- browser: {navigate: /shop}
- name: checkout
  browser: {wait_visible: "#checkout"}
- {always: true, browser: {assert_title: Shop}}
`, timeout)
	start := time.Now()
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	took := time.Since(start)
	if res.OK || res.Cause != checks.CauseScript || res.CouldNotRun() {
		t.Fatalf("cause %s (%s), want script", res.Cause, res.Err)
	}
	if want := `step 1 "checkout" (browser.wait_visible): wait_visible #checkout: no element within `; !strings.HasPrefix(res.Err, want) {
		t.Errorf("err %q, want it to start with %q", res.Err, want)
	}
	if s := res.Steps[1]; s.Cause != checks.CauseScript {
		t.Errorf("step cause %q, want script", s.Cause)
	}
	if len(res.Artifacts) != 1 {
		t.Errorf("artifacts %v, want the failure screenshot (err %s)", res.Artifacts, res.Err)
	}
	if !res.Steps[2].OK {
		t.Errorf("always step after the deadline did not run: %+v", res.Steps[2])
	}
	// The always step has its own cleanup budget; the run up to it, with
	// the screenshot, fits in the timeout.
	if upTo := res.Steps[0].Duration + res.Steps[1].Duration; upTo > timeout {
		t.Errorf("steps took %s, over the check's timeout %s", upTo, timeout)
	}
	t.Logf("run took %s: %s", took, res.Err)

	nav := browserRunner(t, b, "", `[{browser: {navigate: /stuck}}]`, 2*time.Second)
	res = nav.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	if res.OK || res.Cause != checks.CauseTimeout || !strings.Contains(res.Err, "no load event") {
		t.Errorf("navigation that never loads: cause %s (%s), want timeout", res.Cause, res.Err)
	}
}

// TestBrowserHungPageEndsWithinTimeout: a page that opens an alert and
// then loops forever makes the run fail within the check's timeout, the
// failure screenshot included (it is skipped, saying why), and neither its
// tab nor its renderer keeps later runs from passing.
func TestBrowserHungPageEndsWithinTimeout(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	dir := t.TempDir()
	const timeout = 3 * time.Second
	r := browserRunner(t, b, dir, `[{browser: {navigate: /hang}}]`, timeout)
	for i := range 2 {
		start := time.Now()
		res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
		took := time.Since(start)
		if res.OK {
			t.Fatal("a hung page passed")
		}
		if res.Cause != checks.CauseTimeout {
			t.Errorf("run %d: cause %s (%s), want timeout", i, res.Cause, res.Err)
		}
		if took > timeout+500*time.Millisecond || res.Phases.Total > timeout {
			t.Errorf("run %d took %s (phases.total %s), over the check's timeout %s", i, took, res.Phases.Total, timeout)
		}
		if !strings.Contains(res.Err, "no failure screenshot: the page did not answer within") {
			t.Errorf("run %d: err %q does not say why there is no screenshot", i, res.Err)
		}
		if len(res.Artifacts) != 0 {
			t.Errorf("run %d: artifacts %v", i, res.Artifacts)
		}
	}
	// The hung tabs are closed.
	root, err := b.running(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		infos, err := chromedp.Targets(root)
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, ti := range infos {
			if strings.HasSuffix(ti.URL, "/hang") {
				left = append(left, ti.URL)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hung tabs still open 10s after their runs: %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The browser serves the next runs (as many at once as it has slots).
	healthy := browserRunner(t, b, "", `[{browser: {navigate: /shop}}, {browser: {wait_visible: "#add-to-cart"}}]`, 10*time.Second)
	results := make(chan checks.Result, 4)
	for range 4 {
		go func() { results <- healthy.Run(context.Background(), checks.Target{Name: "x", URL: o.URL}) }()
	}
	for range 4 {
		if res := <-results; !res.OK {
			t.Errorf("run after the hung page: %s: %s", res.Cause, res.Err)
		}
	}
}

func TestBrowserUnavailable(t *testing.T) {
	for _, tc := range []struct{ name, path, err string }{
		{"missing", filepath.Join(t.TempDir(), "no-such-chromium"), ""},
		{"cannot start", "/bin/false", ""},
		// With no exec_path and none of the binaries on PATH, the error
		// names every binary that was looked for.
		{"none on PATH", "", `step 0 (browser.navigate): browser unavailable: ` +
			`no chromium, chromium-browser, google-chrome, google-chrome-stable or headless-shell in PATH (set agent.browser.exec_path)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.path == "" {
				t.Setenv("PATH", t.TempDir())
			}
			b := NewBrowser(BrowserConfig{ExecPath: tc.path})
			defer b.Close()
			if err := b.Start(context.Background()); !errors.Is(err, ErrBrowserUnavailable) {
				t.Errorf("Start: %v, want ErrBrowserUnavailable", err)
			}
			r := browserRunner(t, b, "", `[{browser: {navigate: "http://127.0.0.1:1/"}}, {always: true, browser: {sleep: 1ms}}]`, 10*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "x", URL: "http://127.0.0.1:1"})
			if res.OK || res.Cause != checks.CauseBrowserUnavailable || !res.CouldNotRun() {
				t.Fatalf("cause %s (%s), want browser_unavailable", res.Cause, res.Err)
			}
			if tc.err != "" && res.Err != tc.err {
				t.Errorf("err %q, want %q", res.Err, tc.err)
			}
		})
	}
}

func TestBrowserKilledMidRunRecovers(t *testing.T) {
	needChromium(t)
	b := NewBrowser(BrowserConfig{})
	defer b.Close()
	o := newPageOrigin(t)
	r := browserRunner(t, b, "", `
- browser: {navigate: /tiny}
- browser: {sleep: 5s}
- browser: {assert_text: {selector: "#x", equals: ok}}
`, 20*time.Second)
	done := make(chan checks.Result, 1)
	go func() { done <- r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL}) }()
	// Kill the browser once the page is loaded.
	deadline := time.Now().Add(10 * time.Second)
	for o.hits.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	pid := b.PID()
	if pid == 0 {
		t.Fatal("no browser pid")
	}
	oldDir := profileDir(pid)
	if oldDir == "" {
		t.Fatal("no profile dir")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	res := <-done
	t.Logf("killed run returned %s after the kill", time.Since(killedAt))
	// The browser process died under the run: the agent's own trouble
	// (browser_unavailable, not counted against the target), whatever
	// the step saw.
	if res.OK || res.Cause != checks.CauseBrowserUnavailable || !res.Cause.AgentFault() ||
		!strings.Contains(res.Err, "the browser process died during the run (the agent's own trouble, not the page's): ") {
		t.Fatalf("run with a killed browser: %s (%s), want browser_unavailable saying the browser died", res.Cause, res.Err)
	}
	r2 := browserRunner(t, b, "", `[{browser: {navigate: /tiny}}, {browser: {assert_text: {selector: "#x", equals: ok}}}]`, 20*time.Second)
	t1 := time.Now()
	res = r2.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	t.Logf("run after the kill (with restart) took %s", time.Since(t1))
	if !res.OK {
		t.Fatalf("run after the kill: %s: %s", res.Cause, res.Err)
	}
	if b.Starts() != 2 || b.PID() == pid {
		t.Errorf("starts %d, pid %d (old %d)", b.Starts(), b.PID(), pid)
	}
	t0 := time.Now()
	n0 := chromiumProcs(oldDir)
	n := settleCount(oldDir, 0, 10*time.Second)
	t.Logf("old browser processes: %d right after, %d after %s", n0, n, time.Since(t0))
	if n != 0 {
		t.Errorf("%d processes of the killed browser survive its restart", n)
	}
	newDir := profileDir(b.PID())
	b.Close()
	if n := settleCount(newDir, 0, 10*time.Second); n != 0 {
		t.Errorf("%d processes of the restarted browser survive Close", n)
	}
}

func TestBrowserNoOrphanProcesses(t *testing.T) {
	needChromium(t)
	runs := 200
	if testing.Short() {
		runs = 30
	}
	// Profile directories of browsers already running (the shared test
	// browser, others' still ending): their processes may come and go.
	known := chromiumDirs(testTmp)
	b := NewBrowser(BrowserConfig{MaxConcurrent: 2})
	o := newPageOrigin(t)
	r := browserRunner(t, b, "", `[{browser: {navigate: /tiny}}, {browser: {assert_text: {selector: "#x", equals: ok}}}]`, 20*time.Second)
	tgt := checks.Target{Name: "x", URL: o.URL}
	if res := r.Run(context.Background(), tgt); !res.OK {
		t.Fatalf("warm-up: %s: %s", res.Cause, res.Err)
	}
	dir := profileDir(b.PID())
	if dir == "" || !strings.HasPrefix(dir, testTmp) {
		t.Fatalf("profile dir %q not under %s", dir, testTmp)
	}
	warm := stableCount(dir, 5*time.Second)
	// A run timing out mid-step must not leak either.
	slow := browserRunner(t, b, "", `[{browser: {navigate: /tiny}}, {browser: {wait_visible: "#never"}}]`, 1*time.Second)
	// Two runs at a time (max_concurrent 2), as the canary would.
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(runs); i = next.Add(1) - 1 {
				rr := r
				if i%50 == 25 {
					rr = slow
				}
				res := rr.Run(context.Background(), tgt)
				if rr == r && !res.OK {
					t.Errorf("run %d: %s: %s", i, res.Cause, res.Err)
				}
			}
		})
	}
	wg.Wait()
	after := settleCount(dir, warm, 10*time.Second)
	t.Logf("%d runs: chromium processes warm %d, after %d", runs, warm, after)
	if after > warm {
		t.Errorf("%d chromium processes after %d runs, %d before", after, runs, warm)
	}
	if b.Starts() != 1 {
		t.Errorf("browser restarted: %d starts", b.Starts())
	}
	b.Close()
	if n := settleCount(dir, 0, 10*time.Second); n != 0 {
		t.Errorf("%d chromium processes survive Close", n)
	}
	// Nothing of this test's browser is left under another directory.
	deadline := time.Now().Add(10 * time.Second)
	stray := newDirs(testTmp, known)
	for len(stray) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		stray = newDirs(testTmp, known)
	}
	if len(stray) > 0 {
		t.Errorf("chromium processes of this binary under profile directories that did not exist before: %v", stray)
	}
}

func TestBrowserRunsAreIsolated(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	tgt := checks.Target{Name: "x", URL: o.URL}
	set := browserRunner(t, b, "", `
- browser: {navigate: /tiny}
- browser: {eval: {js: "localStorage.setItem('k', 'v'); document.cookie = 'c=1; path=/'; document.cookie", equals: "c=1"}}
`, 20*time.Second)
	check := browserRunner(t, b, "", `
- browser: {navigate: /tiny}
- browser: {eval: {js: "localStorage.getItem('k') === null && document.cookie === ''", equals: true}}
`, 20*time.Second)
	if res := set.Run(context.Background(), tgt); !res.OK {
		t.Fatalf("set: %s: %s", res.Cause, res.Err)
	}
	if res := check.Run(context.Background(), tgt); !res.OK {
		t.Fatalf("state leaked between runs: %s: %s", res.Cause, res.Err)
	}
}

func TestBrowserUsesExtractedVariables(t *testing.T) {
	b := needChromium(t)
	pages := newPageOrigin(t)
	api := newAPIOrigin(t)
	t.Setenv("DEMO_PASSWORD", demoPassword)
	r := browserRunner(t, b, "", `
- http: {method: POST, url: "`+api.URL+`/login", json: {user: demo, password: "${env:DEMO_PASSWORD}"}}
  extract: {token: {json: token}}
- browser: {navigate: "/tiny?t=${token}"}
- browser: {assert_url: "/tiny?t=${token}"}
- browser: {eval: {js: "'${token}'", equals: "tok-4711"}}
- browser: {eval: {js: "document.cookie", contains: "sid=sess-1"}}
- browser: {eval: {js: "`+"`$${1+1}`"+`", equals: "2"}}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: pages.URL})
	if !res.OK {
		t.Fatalf("%s: %s", res.Cause, res.Err)
	}
}

func TestBrowserConcurrentRuns(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	r := browserRunner(t, b, "", `
- browser: {navigate: /shop}
- browser: {click: "#add-to-cart"}
- browser: {wait_text: {selector: "#cart-count", equals: "1"}}
`, 30*time.Second)
	results := make(chan checks.Result, 6)
	for i := 0; i < 6; i++ {
		go func() { results <- r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL}) }()
	}
	for i := 0; i < 6; i++ {
		if res := <-results; !res.OK {
			t.Errorf("concurrent run: %s: %s", res.Cause, res.Err)
		}
	}
}

func TestBrowserDialogsAreAccepted(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	r := browserRunner(t, b, "", `
- browser: {navigate: /dialog}
- browser: {click: "#b"}
- browser: {wait_text: {selector: "#out", equals: "yes"}}
  timeout: 3s
`, 20*time.Second)
	if res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL}); !res.OK {
		t.Fatalf("%s: %s", res.Cause, res.Err)
	}
}

// TestBrowserFailureArtifactsArePruned: a check that fails on every run
// keeps only its newest ArtifactsPerPair screenshots and notes, and its
// first run sweeps away artifacts past the retention.
func TestBrowserFailureArtifactsArePruned(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	data := t.TempDir()
	dir := ArtifactsDir(data)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := "gone-check-x-" + time.Now().Add(-8*24*time.Hour).UTC().Format(artifactStamp) + ".png"
	if err := os.WriteFile(filepath.Join(dir, stale), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := New(mustScript(t, `[{browser: {navigate: /tiny}}, {browser: {wait_visible: "#never"}, timeout: 200ms}]`),
		Options{Check: "never", Timeout: 10 * time.Second, DataDir: data, Browser: b, ArtifactsPerPair: 3})
	if err != nil {
		t.Fatal(err)
	}
	var last []string
	for i := range 5 {
		res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
		if res.OK || len(res.Artifacts) != 1 {
			t.Fatalf("run %d: ok %v, artifacts %v (%s)", i, res.OK, res.Artifacts, res.Err)
		}
		last = res.Artifacts
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pngs, notes []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".png":
			pngs = append(pngs, e.Name())
		case ".json":
			notes = append(notes, e.Name())
		}
	}
	if len(pngs) != 3 || len(notes) != 3 {
		t.Errorf("after 5 failing runs: %d screenshots %v and %d notes, want the newest 3 of each", len(pngs), pngs, len(notes))
	}
	if _, err := os.Stat(filepath.Join(dir, last[0])); err != nil {
		t.Errorf("the latest run's screenshot %s is gone: %v", last[0], err)
	}
	if _, err := os.Stat(filepath.Join(dir, stale)); err == nil {
		t.Errorf("%s, older than the retention, was kept", stale)
	}
}

// TestBrowserStartNotCountedAgainstFirstStep: Chromium's start (0.5-1.5 s)
// happens before the run's clock starts, and opening the run's tab does not
// use the first step's timeout: a first browser step with a short timeout
// passes on a browser that was not running yet.
func TestBrowserStartNotCountedAgainstFirstStep(t *testing.T) {
	needChromium(t)
	o := newPageOrigin(t)
	b := NewBrowser(BrowserConfig{MaxConcurrent: 1})
	t.Cleanup(func() { b.Close() })
	r := browserRunner(t, b, "", `[{name: open, timeout: 300ms, browser: {navigate: /tiny}}]`, 10*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	if !res.OK {
		t.Fatalf("first run on a browser not started yet: cause %s (%s), want a pass", res.Cause, res.Err)
	}
	if w := res.Steps[0].Metrics["browser_slot_wait_ms"]; w <= 0 {
		t.Errorf("browser_slot_wait_ms %v: the start should be reported as waiting", w)
	}
}
