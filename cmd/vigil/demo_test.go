package main

import (
	"context"
	"encoding/json"
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

	// Chromium puts its scratch directories (org.chromium.Chromium.*) in
	// TMPDIR and does not always remove them: keep them in the test's.
	browserTmp := t.TempDir()
	t.Cleanup(func() { // before the directory is removed
		if left, _ := filepath.Glob(filepath.Join(browserTmp, "org.chromium.Chromium.*")); len(left) > 0 {
			t.Logf("Chromium left %d scratch directories in its TMPDIR (removed with it)", len(left))
		}
	})
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Env("TMPDIR="+browserTmp), chromedp.UserDataDir(filepath.Join(browserTmp, "profile")),
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

	// vigil judges origin-b in fall (2) runs of the asset check, 3s apart,
	// and the proxy (verdict_poll 1s) takes it out: about 6–8s after the
	// click. The limit leaves a busy machine 15s of slack and still fails
	// when the demo's short interval is lost (at the 30s default, two runs
	// take a minute). It is read from the API, which a slow browser does
	// not delay.
	limit := 2*3*time.Second + 15*time.Second
	waitFor(t, limit, "≥2 regions judging asset × origin-b unhealthy (checksum) and the proxy taking it out", func() bool {
		var vs []struct{ Check, Target, Region, State, Cause string }
		if err := json.Unmarshal([]byte(getBody(t, base+"/api/v1/verdicts")), &vs); err != nil {
			t.Fatalf("GET /api/v1/verdicts: %v", err)
		}
		unhealthy := 0
		for _, v := range vs {
			if v.Check == "asset" && v.Target == "origin-b" && v.State == "unhealthy" && v.Cause == "checksum" {
				unhealthy++
			}
		}
		out := false
		for _, o := range d.app.prx.Origins() {
			if o.Target == "origin-b" {
				out = !o.Available && o.VerdictDown
			}
		}
		return unhealthy >= 2 && out
	})
	detected := time.Since(clicked)
	// The page shows what the API says; Chromium on a busy machine may
	// take a while to load and render it.
	pageLimit := detected + 30*time.Second
	for {
		open()
		unhealthy := count(`td[data-check="asset"][data-target="origin-b"][data-state="unhealthy"][data-cause="checksum"]`)
		out := count(`tr[data-origin="origin-b"][data-available="false"]`)
		if unhealthy >= 2 && out == 1 {
			break
		}
		if time.Since(clicked) > pageLimit {
			t.Fatalf("after %s: the page shows %d regions with asset × origin-b unhealthy/checksum, proxy rows out: %d; want ≥2 and 1 (the API showed it %s after the click)",
				time.Since(clicked).Round(time.Millisecond), unhealthy, out, detected.Round(time.Millisecond))
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("origin-b judged unhealthy (checksum) and out of the proxy %s after the click (limit %s); on the page after %s",
		detected.Round(time.Millisecond), limit, time.Since(clicked).Round(time.Millisecond))

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(artifactDir(t), "demo-e2e.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)

	// The public page: the asset check ("Downloads") is degraded service
	// with one origin of three down, not an outage, and names no origin.
	public := "http://" + d.app.PublicAddr() + "/"
	waitFor(t, 10*time.Second, "the public page showing Downloads degraded", func() bool {
		return strings.Contains(getBody(t, public), `data-public-check="Downloads" data-state="degraded"`)
	})
	if body := getBody(t, public); strings.Contains(body, "origin-b") || strings.Contains(body, "checksum") || !strings.Contains(body, ">Degraded performance<") {
		t.Errorf("the public page during the fault:\n%.3000s", body)
	}

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

// TestDemoFault drives a running demo's fault switches as a user does:
// `vigil demo fault` with every mode and the parameterised forms the help
// documents, the errors it gives for bad ones, and POST /demo/fault's
// refusal of cross-site browser requests.
func TestDemoFault(t *testing.T) {
	if testing.Short() {
		t.Skip("demo test skipped in -short mode")
	}
	d, stop := startTestDemo(t)
	defer stop()
	addr := d.app.Addr()
	oc := d.origins["origin-c"]

	// apiFailures sends n requests to origin-c's /api/* directly and
	// counts the 503 answers.
	apiFailures := func(n int) int {
		c := &http.Client{Timeout: 5 * time.Second}
		bad := 0
		for i := 0; i < n; i++ {
			resp, err := c.Get(oc.URL() + "/api/probe")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				bad++
			}
		}
		return bad
	}

	t.Run("modes", func(t *testing.T) {
		for _, mode := range demoModes {
			out, code := runCLI(t, "demo", "fault", "--addr", addr, "origin-a", mode)
			if code != 0 || !strings.Contains(out, "origin-a is now "+mode) {
				t.Errorf("demo fault origin-a %s: exit %d, output %q", mode, code, out)
			}
			if got := d.origins["origin-a"].Mode().String(); got != mode {
				t.Errorf("after demo fault origin-a %s: origin mode %s", mode, got)
			}
		}
		if _, code := runCLI(t, "demo", "fault", "--addr", addr, "origin-a", "ok"); code != 0 {
			t.Fatalf("heal origin-a: exit %d", code)
		}
	})

	t.Run("parameters", func(t *testing.T) {
		for _, tc := range []struct{ arg, mode string }{
			{"slow:3s", "slow"}, {"flapping:10", "flapping"}, {"flapping:30s", "flapping"}, {"partial:40%", "partial"},
		} {
			out, code := runCLI(t, "demo", "fault", "--addr", addr, "origin-c", tc.arg)
			if code != 0 || !strings.Contains(out, "origin-c is now "+tc.arg) {
				t.Errorf("demo fault origin-c %s: exit %d, output %q", tc.arg, code, out)
			}
			if got := oc.Mode().String(); got != tc.mode {
				t.Errorf("after %s: origin mode %s, want %s", tc.arg, got, tc.mode)
			}
		}
		// The parameter takes effect: partial:100% fails every /api/*
		// request (the default, 25 %, would not).
		if _, code := runCLI(t, "demo", "fault", "--addr", addr, "origin-c", "partial:100%"); code != 0 {
			t.Fatalf("partial:100%%: exit %d", code)
		}
		if bad := apiFailures(12); bad != 12 {
			t.Errorf("partial:100%%: %d of 12 /api/* requests answered 503, want 12", bad)
		}
		// A bare mode is its default again, not the last parameter.
		if _, code := runCLI(t, "demo", "fault", "--addr", addr, "origin-c", "partial"); code != 0 {
			t.Fatalf("partial: exit %d", code)
		}
		if bad := apiFailures(12); bad == 0 || bad == 12 {
			t.Errorf("partial (default 25 %%): %d of 12 /api/* requests answered 503", bad)
		}
		if _, code := runCLI(t, "demo", "fault", "--addr", addr, "origin-c", "ok"); code != 0 || oc.Mode().String() != "ok" {
			t.Fatalf("heal origin-c: exit %d, mode %s", code, oc.Mode())
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct{ origin, mode, want string }{
			{"origin-c", "sideways", `unknown fault mode "sideways"`},
			{"origin-c", "partial:lots", `fault "partial:lots": want a percentage`},
			{"origin-c", "slow:fast", `fault "slow:fast": want a duration`},
			{"origin-c", "corrupt:5", "takes no parameter"},
			{"origin-z", "ok", `no origin "origin-z"`},
		} {
			out, code := runCLI(t, "demo", "fault", "--addr", addr, tc.origin, tc.mode)
			// A usage error, like a missing MODE: exit 2.
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Errorf("demo fault %s %s: exit %d, output %q; want exit 2 and %q", tc.origin, tc.mode, code, out, tc.want)
			}
		}
		if got := oc.Mode().String(); got != "ok" {
			t.Errorf("refused switches changed origin-c to %s", got)
		}
	})

	t.Run("cross-site", func(t *testing.T) {
		post := func(path string, hdr map[string]string) int {
			t.Helper()
			return postStatus(t, "http://"+addr+path, "application/x-www-form-urlencoded", "origin=origin-b&mode=503", hdr)
		}
		for name, hdr := range map[string]map[string]string{
			"Sec-Fetch-Site cross-site": {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
			"foreign Origin only":       {"Origin": "http://evil.example"},
		} {
			for _, path := range []string{"/demo/fault", "/fault"} {
				if code := post(path, hdr); code != http.StatusForbidden {
					t.Errorf("%s POST %s: %d, want 403", name, path, code)
				}
			}
		}
		if got := d.origins["origin-b"].Mode().String(); got != "ok" {
			t.Fatalf("a cross-site POST switched origin-b to %s", got)
		}
		// Same-origin browser requests and non-browser clients still work.
		if code := post("/demo/fault", map[string]string{"Origin": "http://" + addr, "Sec-Fetch-Site": "same-origin"}); code != http.StatusOK {
			t.Errorf("same-origin POST /demo/fault: %d, want 200", code)
		}
		if code := post("/demo/fault", nil); code != http.StatusOK {
			t.Errorf("curl-style POST /demo/fault: %d, want 200", code)
		}
		if got := d.origins["origin-b"].Mode().String(); got != "503" {
			t.Errorf("origin-b is %s, want 503", got)
		}
		if _, code := runCLI(t, "demo", "fault", "--addr", addr, "origin-b", "ok"); code != 0 {
			t.Fatalf("heal origin-b: exit %d", code)
		}
	})
}

// TestDemoFaultHelpAndBanner: `vigil demo fault --help` lists every mode
// (reset included) and the parameterised forms; the banner's example names
// --addr when the demo is not on the default address.
func TestDemoFaultHelpAndBanner(t *testing.T) {
	out, code := runCLI(t, "demo", "fault", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range append(append([]string{}, demoModes...), "partial:40%", "slow:3s", "flapping:10", "--addr") {
		if !strings.Contains(out, want) {
			t.Errorf("demo fault --help lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "reset") {
		t.Error("demo fault --help lacks reset")
	}
	if got := demoFaultHint("bin/vigil", "127.0.0.1:9470"); got != "bin/vigil demo fault origin-b corrupt" {
		t.Errorf("default address hint: %q", got)
	}
	if got := demoFaultHint("vigil", "127.0.0.1:9555"); got != "vigil demo fault --addr 127.0.0.1:9555 origin-b corrupt" {
		t.Errorf("other address hint: %q", got)
	}
}

// postStatus POSTs body with the Content-Type and the headers hdr to url
// (within 5s) and returns the status code; the answer's body is read and
// discarded.
func postStatus(t *testing.T, url, contentType, body string, hdr map[string]string) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
