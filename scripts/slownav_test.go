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
	// The page either never answered after the click, or answered once
	// and then stopped (which one depends on when the navigation began):
	// both messages name the step, the navigation still waiting for its
	// server, and what could not be checked.
	for _, want := range []string{`step 2 "next" (browser.wait_visible): wait_visible text=late: the page `,
		`a navigation to ` + o.URL + `/slowdoc?s=… was still waiting for its server`,
		`within 1s`, `so text=late could not be checked`} {
		if res.Cause != checks.CauseTimeout || !strings.Contains(res.Err, want) {
			t.Errorf("got %s: %q\nwant timeout, with %q", res.Cause, res.Err, want)
		}
	}
	if strings.Contains(res.Err, "never yields") {
		t.Errorf("blames a script: %q", res.Err)
	}
}

// TestBrowserTimeoutMessagesNameTheLimit: a step that runs out of time
// says which limit ended it and its value, and a check whose timeout ran
// out while vigil opened its tab says so, naming the step's URL, with
// cause browser (the agent's own work), not a bare "context deadline
// exceeded" with cause timeout.
func TestBrowserTimeoutMessagesNameTheLimit(t *testing.T) {
	b := needChromium(t)
	o := htmlPages(t, map[string]string{"/empty": `<!doctype html><title>empty</title>`})
	cases := []struct {
		name, src string
		timeout   time.Duration
		cause     checks.Cause
		want      string
	}{
		{"step timeout", `
- browser: {navigate: /empty}
- name: wait
  timeout: 300ms
  browser: {eval: {js: "new Promise(() => {})"}}
`, 20 * time.Second, checks.CauseScript,
			`step 1 "wait" (browser.eval): eval: did not finish within 300ms (the step's timeout)`},
		{"check timeout", `
- browser: {navigate: /empty}
- name: wait
  browser: {eval: {js: "new Promise(() => {})"}}
`, 3 * time.Second, checks.CauseTimeout,
			`step 1 "wait" (browser.eval): run timed out: eval: did not finish within `},
		{"tab opening", `
- browser: {navigate: /empty}
`, 20 * time.Millisecond, checks.CauseBrowserUnavailable,
			`step 0 (browser.navigate): navigate ` + o.URL + `/empty: the browser did not open the run's tab within `},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The browser runs before the check's clock starts.
			if _, err := b.running(context.Background()); err != nil {
				t.Fatal(err)
			}
			res := browserRunner(t, b, "", tc.src, tc.timeout).Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
			t.Log(res.Err)
			got, _, _ := strings.Cut(res.Err, "; no failure screenshot")
			if res.Cause != tc.cause || !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %s: %q\nwant %s: %q…", res.Cause, res.Err, tc.cause, tc.want)
			}
			for _, bad := range []string{"timed out after", "context canceled", ": context deadline exceeded\x00"} {
				if strings.Contains(res.Err+"\x00", bad) {
					t.Errorf("message says %q: %q", strings.TrimSuffix(bad, "\x00"), res.Err)
				}
			}
		})
	}
}
