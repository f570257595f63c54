package scripts

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// busyOrigin serves /busy, a page whose main thread is blocked for good
// 200ms after its load (a script that never yields), with #b visible.
func busyOrigin(t testing.TB) *httptest.Server {
	return htmlPages(t, map[string]string{
		"/busy": `<!doctype html><title>Busy</title><p id=b>busy</p><script>setTimeout(()=>{while(true){}},200)</script>`,
	})
}

// TestBrowserElementStepOnAPageThatDoesNotAnswer: a step that waits for
// an element of a page busy in a script that never yields says that the
// page did not answer (cause timeout), not that the element is missing
// or hidden: #b is there and visible.
func TestBrowserElementStepOnAPageThatDoesNotAnswer(t *testing.T) {
	b := needChromium(t)
	o := busyOrigin(t)
	for _, tc := range []struct{ step, err string }{
		{`{assert_text: {selector: "#b", equals: "busy"}}`, `step 2 "check" (browser.assert_text): assert_text #b: the page did not answer within 1s (a script that never yields), so #b could not be checked`},
		{`{wait_text: {selector: "#b", contains: "busy"}}`, `step 2 "check" (browser.wait_text): wait_text #b: the page did not answer within 1s (a script that never yields), so #b could not be checked`},
		{`{wait_visible: "#b"}`, `step 2 "check" (browser.wait_visible): wait_visible #b: the page did not answer within 1s (a script that never yields), so #b could not be checked`},
		{`{click: "#b"}`, `step 2 "check" (browser.click): click #b: the page did not answer within 1s (a script that never yields), so #b could not be checked`},
	} {
		r := browserRunner(t, b, "", `
- browser: {navigate: /busy}
- browser: {sleep: 400ms}
- name: check
  timeout: 1s
  browser: `+tc.step, 20*time.Second)
		res := r.Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
		// The failure screenshot cannot be taken either: its reason follows.
		if got, _, _ := strings.Cut(res.Err, "; no failure screenshot"); res.Cause != checks.CauseTimeout || got != tc.err {
			t.Errorf("got %s: %q\nwant timeout: %q", res.Cause, res.Err, tc.err)
		}
	}
}
