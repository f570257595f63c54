package scripts

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestBrowserWaitAfterClickToSlowServer: after a click on a link to a
// server that takes its time, a step that waits for the next page says
// that the navigation was still waiting for its server (cause timeout),
// naming its URL, not that a script never yields: the page runs none.
func TestBrowserWaitAfterClickToSlowServer(t *testing.T) {
	b := needChromium(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><title>start</title><a id="next" href="/slowdoc?s=30">Next</a>`)
	})
	mux.HandleFunc("/slowdoc", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, `<!doctype html><title>late</title><p>late</p>`)
	})
	o := serveOn(t, mux)
	r := browserRunner(t, b, "", `
- browser: {navigate: /start}
- browser: {click: "#next"}
- name: next
  timeout: 1s
  browser: {wait_visible: "text=late"}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
	want := `step 2 "next" (browser.wait_visible): wait_visible text=late: the page did not answer within 1s: a navigation to ` +
		o.URL + `/slowdoc?s=… was still waiting for its server, so text=late could not be checked`
	if got, _, _ := strings.Cut(res.Err, "; no failure screenshot"); res.Cause != checks.CauseTimeout || got != want {
		t.Errorf("got %s: %q\nwant timeout: %q", res.Cause, res.Err, want)
	}
	if strings.Contains(res.Err, "never yields") {
		t.Errorf("blames a script: %q", res.Err)
	}
}
