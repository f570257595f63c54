// Package scripttest holds helpers for tests that run browser scripts
// against a real Chromium.
package scripttest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/scripts"
)

// HoldBrowserSlot starts a Chromium with one browser slot and a run that
// holds that slot for about 5s (a page at /hold, then a sleep). It returns
// the browser and the URL of an origin serving a small page at every path;
// the holding run is cancelled, and the browser closed, when the test ends.
// Without Chromium the test skips (fails under CI=true): see
// checktest.NeedDependency.
func HoldBrowserSlot(t *testing.T) (*scripts.Browser, string) {
	t.Helper()
	b := scripts.NewBrowser(scripts.BrowserConfig{MaxConcurrent: 1})
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	checktest.NeedDependency(t, "chromium", b.Start(ctx))
	holding := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			select {
			case holding <- struct{}{}:
			default:
			}
		}
		fmt.Fprint(w, "<!doctype html><title>t</title><p>ok</p>")
	}))
	t.Cleanup(srv.Close)
	nav, sleep := "/hold", 5*time.Second
	holder, err := scripts.New(scripts.Script{{Browser: &scripts.BrowserStep{Navigate: &nav}}, {Browser: &scripts.BrowserStep{Sleep: &sleep}}},
		scripts.Options{Check: "holder", Timeout: 8 * time.Second, Browser: b})
	if err != nil {
		t.Fatal(err)
	}
	hctx, hcancel := context.WithCancel(context.Background())
	held := make(chan checks.Result, 1)
	go func() { held <- holder.Run(hctx, checks.Target{Name: "o", URL: srv.URL}) }()
	t.Cleanup(func() {
		hcancel()
		select {
		case <-held:
		case <-time.After(15 * time.Second):
			t.Error("the run holding the browser slot did not end")
		}
	})
	select {
	case <-holding:
	case res := <-held:
		t.Fatalf("the run meant to hold the browser slot ended: %s: %s", res.Cause, res.Err)
	case <-time.After(15 * time.Second):
		t.Fatal("the run meant to hold the browser slot never loaded its page")
	}
	return b, srv.URL
}
