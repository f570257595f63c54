package scripts

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestBrowserStopsWhenIdle: once no browser run has used it for the idle
// time (as after a reload that removed every browser check), the browser
// and all its processes stop and its directory is removed; a run that
// lasts longer than the idle time keeps it running, and the next run
// starts it again.
func TestBrowserStopsWhenIdle(t *testing.T) {
	needChromium(t)
	old := browserIdleStop
	browserIdleStop = 1500 * time.Millisecond
	b := NewBrowser(BrowserConfig{})
	browserIdleStop = old
	t.Cleanup(func() { b.Close() })
	o := newPageOrigin(t)
	tgt := checks.Target{Name: "x", URL: o.URL}
	// A run longer than the idle time: the browser stays up under it.
	long := browserRunner(t, b, "", `
- browser: {navigate: /tiny}
- browser: {sleep: 2500ms}
- browser: {assert_text: {selector: "#x", equals: ok}}
`, 30*time.Second)
	if res := long.Run(context.Background(), tgt); !res.OK {
		t.Fatalf("a run longer than the idle time: %s: %s", res.Cause, res.Err)
	}
	pid := b.PID()
	if pid == 0 || b.Starts() != 1 {
		t.Fatalf("after a run: pid %d, starts %d; want a browser started once", pid, b.Starts())
	}
	profile := profileDir(pid)
	if profile == "" {
		t.Fatal("no profile directory")
	}
	deadline := time.Now().Add(20 * time.Second)
	for b.PID() != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if b.PID() != 0 {
		t.Fatalf("the browser still runs %s after its last run (idle stop 1.5s)", 20*time.Second)
	}
	if n := settleCount(profile, 0, 10*time.Second); n != 0 {
		t.Errorf("%d Chromium processes survive the idle stop", n)
	}
	if _, err := os.Stat(filepath.Dir(profile)); !os.IsNotExist(err) {
		t.Errorf("the browser's directory %s is still there after the idle stop (err %v)", filepath.Dir(profile), err)
	}
	short := browserRunner(t, b, "", `[{browser: {navigate: /tiny}}, {browser: {assert_text: {selector: "#x", equals: ok}}}]`, 30*time.Second)
	if res := short.Run(context.Background(), tgt); !res.OK {
		t.Fatalf("the run after the idle stop: %s: %s", res.Cause, res.Err)
	}
	if b.Starts() != 2 || b.PID() == 0 {
		t.Errorf("after the idle stop and a run: starts %d, pid %d; want the browser started again", b.Starts(), b.PID())
	}
}
