package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestDemoHook: POST /demo/hook, the demo's alert sink, answers 403 to
// cross-site browser requests and prints nothing for them; what it prints
// for an alert carries no control characters (an ESC sequence in a summary
// does not reach the terminal); and the alerter's own notifications still
// arrive: origin-b switched down fires an alert printed on the terminal.
func TestDemoHook(t *testing.T) {
	if testing.Short() {
		t.Skip("demo test skipped in -short mode")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var term checktest.SyncBuffer // what the demo prints, written from its goroutines
	f := demoFlags{listen: "127.0.0.1:0", proxyListen: "127.0.0.1:0", originPort: 0,
		dataDir: t.TempDir(), traffic: 0, browser: false, logLevel: "warn"}
	d, err := startDemo(ctx, f, discardLogger(), &term)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := d.wait(); err != nil {
			t.Errorf("demo stopped with error: %v", err)
		}
	}()
	hook := "http://" + d.app.Addr() + "/demo/hook"
	post := func(body, contentType string, hdr map[string]string) int {
		t.Helper()
		return postStatus(t, hook, contentType, body, hdr)
	}
	const evil = "{\"status\":\"firing\",\"alerts\":[{\"status\":\"firing\",\"summary\":\"\\u001b[2J\\u001b]0;pwned\\u0007forged\\r\\nline\\u007f\\u009b31m end\"}]}"

	t.Run("cross-site", func(t *testing.T) {
		for name, hdr := range map[string]map[string]string{
			"Sec-Fetch-Site cross-site": {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
			"foreign Origin only":       {"Origin": "http://evil.example"},
		} {
			for _, ct := range []string{"text/plain", "application/json"} {
				if code := post(evil, ct, hdr); code != http.StatusForbidden {
					t.Errorf("%s POST /demo/hook (%s): %d, want 403", name, ct, code)
				}
			}
		}
		if got := term.String(); got != "" {
			t.Errorf("refused requests printed on the terminal: %q", got)
		}
	})

	t.Run("control characters", func(t *testing.T) {
		if code := post(evil, "application/json", nil); code != http.StatusNoContent {
			t.Fatalf("POST /demo/hook: %d, want 204", code)
		}
		if code := post(evil, "application/json", map[string]string{"Origin": "http://" + d.app.Addr(), "Sec-Fetch-Site": "same-origin"}); code != http.StatusNoContent {
			t.Fatalf("same-origin POST /demo/hook: %d, want 204", code)
		}
		got := term.String()
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("terminal: %d lines, want 2 (one per alert):\n%q", len(lines), got)
		}
		for _, l := range lines {
			if i := strings.IndexFunc(l, func(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f }); i >= 0 {
				t.Errorf("printed line holds control character %U: %q", []rune(l[i:])[0], l)
			}
			if !strings.Contains(l, "ALERT FIRING") || !strings.HasSuffix(l, "[2J]0;pwnedforgedline31m end") {
				t.Errorf("printed line %q, want ALERT FIRING and the summary without its control characters", l)
			}
		}
	})

	t.Run("alerter", func(t *testing.T) {
		before := strings.Count(term.String(), "\n")
		if err := d.setFault("origin-b", "down"); err != nil {
			t.Fatal(err)
		}
		defer d.setFault("origin-b", "ok")
		waitFor(t, 60*time.Second, "the alerter's notification on the terminal", func() bool {
			lines := strings.Split(term.String(), "\n")
			for _, l := range lines[before:] {
				if strings.Contains(l, "ALERT FIRING") && strings.Contains(l, "origin-b") {
					return true
				}
			}
			return false
		})
	})
}
