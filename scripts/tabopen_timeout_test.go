package scripts

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// A browser that died after the run started is started again for the
// first browser step within the check's timeout: a Chromium that takes
// longer to start (an overloaded machine; here a real Chromium behind a
// wrapper that first sleeps 6s) fails the run with cause browser when the
// timeout runs out, naming what vigil was doing and the limit, instead of
// holding the run until the browser is up. The next run starts the
// browser again and passes.
func TestBrowserRestartWithinCheckTimeout(t *testing.T) {
	needChromium(t)
	real, err := (&BrowserConfig{}).findExec() // what needChromium found
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	slowFlag := filepath.Join(dir, "slow")
	wrapper := filepath.Join(dir, "chromium")
	script := "#!/bin/sh\n[ -e " + slowFlag + " ] && sleep 6\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := NewBrowser(BrowserConfig{ExecPath: wrapper})
	defer b.Close()
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The origin kills the browser while the run's http step waits for
	// it, and makes its next start slow.
	var killed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/kill" {
			if pid := b.PID(); pid != 0 {
				os.WriteFile(slowFlag, nil, 0o644)
				killed.Store(syscall.Kill(pid, syscall.SIGKILL) == nil)
				// Until the browser's end is seen, the next step would
				// find it alive.
				deadline := time.Now().Add(2 * time.Second)
				for b.PID() != 0 && time.Now().Before(deadline) {
					b.mustLock()
					dead := b.root != nil && b.root.Err() != nil
					b.unlock()
					if dead {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><title>t</title><p id="x">ok</p>`))
	}))
	defer srv.Close()

	const timeout = 3 * time.Second
	r := browserRunner(t, b, t.TempDir(), `
- http: {path: /kill}
- browser: {navigate: /page}
`, timeout)
	start := time.Now()
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: srv.URL})
	took := time.Since(start)
	t.Logf("took %s: %s: %s", took, res.Cause, res.Err)
	if !killed.Load() {
		t.Fatal("the browser was not killed")
	}
	if took > timeout+500*time.Millisecond {
		t.Errorf("the run took %s, over the check's %s timeout", took, timeout)
	}
	want := `step 1 (browser.navigate): navigate ` + srv.URL + `/page: the browser was not running (it had died) and did not start again within `
	if res.Cause != checks.CauseBrowserUnavailable || !strings.HasPrefix(res.Err, want) || !strings.Contains(res.Err, ", and the check's 3s timeout ran out (vigil's own work") {
		t.Errorf("got %s: %q\nwant browser_unavailable: %q…, and the check's 3s timeout ran out (vigil's own work…", res.Cause, res.Err, want)
	}
	os.Remove(slowFlag)
	t1 := time.Now()
	defer func() { t.Logf("the run after took %s", time.Since(t1)) }()
	res = browserRunner(t, b, "", `[{browser: {navigate: /page}}, {browser: {assert_text: {selector: "#x", equals: ok}}}]`, 20*time.Second).
		Run(context.Background(), checks.Target{Name: "x", URL: srv.URL})
	if !res.OK {
		t.Errorf("the run after: %s: %s", res.Cause, res.Err)
	}
}

// signalBrowser sends sig to the processes of the browser whose profile
// directory is dir: its renderers only, or all of them.
func signalBrowser(dir string, sig syscall.Signal, renderersOnly bool) int {
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmd, []byte("--user-data-dir="+dir)) {
			continue
		}
		if renderersOnly && !bytes.Contains(cmd, []byte("--type=renderer")) {
			continue
		}
		if syscall.Kill(pid, sig) == nil {
			n++
		}
	}
	return n
}

// A browser that stops answering while it opens the run's tab (its
// renderers frozen, then the browser process too, as on a machine out of
// CPU) fails the run within the check's timeout, naming the phase and the
// limit: closing the half-opened tab, which asks the frozen browser again,
// goes on in the background, and the browser slot stays held until it is
// done. Once the browser thaws, it serves the next run.
func TestBrowserTabOpeningEndsWithinCheckTimeout(t *testing.T) {
	needChromium(t)
	b := NewBrowser(BrowserConfig{MaxConcurrent: 1})
	defer b.Close()
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := newPageOrigin(t)
	dir := profileDir(b.PID())
	if dir == "" {
		t.Fatal("no profile dir")
	}
	const timeout = 2 * time.Second
	r := browserRunner(t, b, t.TempDir(), `[{browser: {navigate: /tiny}}]`, timeout)
	stop := make(chan struct{})
	froze := make(chan struct{})
	go func() {
		defer close(froze)
		start := time.Now()
		for tick := time.NewTicker(2 * time.Millisecond); ; {
			select {
			case <-stop:
				tick.Stop()
				return
			case <-tick.C:
			}
			signalBrowser(dir, syscall.SIGSTOP, true) // every renderer, new ones too
			// Shortly before the run's deadline (1.6s: 400ms are kept
			// for the failure screenshot), the browser process as well.
			if time.Since(start) > 1300*time.Millisecond {
				signalBrowser(dir, syscall.SIGSTOP, false)
			}
		}
	}()
	thaw := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-froze
		signalBrowser(dir, syscall.SIGCONT, false)
	}
	defer thaw()
	start := time.Now()
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	took := time.Since(start)
	thaw()
	t.Logf("took %s: %s: %s", took, res.Cause, res.Err)
	if took > timeout+300*time.Millisecond {
		t.Errorf("the run took %s, over the check's %s timeout", took, timeout)
	}
	want := `step 0 (browser.navigate): navigate ` + o.URL + `/tiny: the browser did not open the run's tab within `
	if res.Cause != checks.CauseBrowserUnavailable || !strings.HasPrefix(res.Err, want) || !strings.Contains(res.Err, ", and the check's 2s timeout ran out (vigil's own work") {
		t.Errorf("got %s: %q\nwant browser_unavailable: %q…, and the check's 2s timeout ran out (vigil's own work…", res.Cause, res.Err, want)
	}
	res = browserRunner(t, b, "", `[{browser: {navigate: /tiny}}, {browser: {assert_text: {selector: "#x", equals: ok}}}]`, 20*time.Second).
		Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	if !res.OK {
		t.Errorf("the run after: %s: %s", res.Cause, res.Err)
	}
}
