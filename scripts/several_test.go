package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestBrowserActionNamesSeveralMatches: an action that waits for the
// element a CSS selector matches, and fails because the first of several
// matches is not ready, says how many matched and that the first is used,
// as a failing text assertion does: the visible second button is not the
// one clicked.
func TestBrowserActionNamesSeveralMatches(t *testing.T) {
	b := needChromium(t)
	srv := htmlPages(t, map[string]string{"/": `<!doctype html><title>Two</title>
<button class=b hidden>Buy</button><button class=b>Buy</button>
<button class=d disabled>Go</button><button class=d>Go</button>
<a class=l>no link</a><a class=l href="/next">next</a>
<button id=one>One</button>`})
	for _, tc := range []struct{ step, err string }{
		{`{click: ".b"}`, `step 1 "act" (browser.click): click .b: not visible within 500ms (.b matched 2 elements; the first is used)`},
		{`{wait_visible: ".b"}`, `step 1 "act" (browser.wait_visible): wait_visible .b: not visible within 500ms (.b matched 2 elements; the first is used)`},
		{`{click: ".d"}`, `step 1 "act" (browser.click): click .d: not enabled within 500ms (.d matched 2 elements; the first is used)`},
		{`{extract: {next: {attr: {selector: ".l", name: href}}}}`, `step 1 "act" (browser.extract): extract next from .l: no attribute href within 500ms (.l matched 2 elements; the first is used)`},
		// One match: no hint.
		{`{click: "#one[hidden]"}`, `step 1 "act" (browser.click): click #one[hidden]: no element within 500ms`},
		{`{wait_visible: "button#one:not(:enabled), .b[hidden]"}`, `step 1 "act" (browser.wait_visible): wait_visible button#one:not(:enabled), .b[hidden]: not visible within 500ms`},
	} {
		r := browserRunner(t, b, "", `
- browser: {navigate: /}
- name: act
  timeout: 500ms
  browser: `+tc.step, 20*time.Second)
		res := r.Run(context.Background(), checks.Target{Name: "app", URL: srv.URL})
		if res.OK || res.Cause != checks.CauseScript || res.Err != tc.err {
			t.Errorf("got %s: %q\nwant script: %q", res.Cause, res.Err, tc.err)
		}
	}
}
