package scripts

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// actionOrigin serves pages whose controls are not ready at once.
func actionOrigin(t testing.TB) *httptest.Server {
	pages := map[string]string{
		// The button is enabled 1s after the page loads; a click before
		// that does nothing.
		"/late": `<!doctype html><title>late</title><button id="b" disabled>go</button><p id="out">idle</p>
<script>const b = document.getElementById('b');
b.onclick = () => { document.getElementById('out').textContent = 'clicked'; };
setTimeout(() => { b.disabled = false; }, 1000);</script>`,
		"/disabled": `<!doctype html><title>d</title><button id="b" disabled>go</button>
<fieldset disabled><input id="f"></fieldset>
<div id="a" role="button" aria-disabled="true">go</div>
<select id="s" disabled><option>1</option><option>2</option></select>`,
		// A full-screen overlay over the button (a cookie banner, a
		// spinner that never goes away).
		"/overlay": `<!doctype html><title>o</title><button id="b">go</button><p id="out">idle</p>
<div id="overlay" style="position:fixed;inset:0;background:rgba(0,0,0,.5)"></div>
<script>document.getElementById('b').onclick = () => { document.getElementById('out').textContent = 'clicked'; };</script>`,
		// The overlay goes away after 500ms.
		"/spinner": `<!doctype html><title>s</title><button id="b">go</button><p id="out">idle</p>
<div class="spinner big" style="position:fixed;inset:0;background:#fff"></div>
<script>document.getElementById('b').onclick = () => { document.getElementById('out').textContent = 'clicked'; };
setTimeout(() => document.querySelector('.spinner').remove(), 500);</script>`,
		// The button is far below the fold.
		"/below": `<!doctype html><title>b</title><div style="height:5000px"></div><button id="b">go</button><p id="out">idle</p>
<script>document.getElementById('b').onclick = () => { document.getElementById('out').textContent = 'clicked'; };</script>`,
	}
	return htmlPages(t, pages)
}

// htmlPages serves each page's HTML at its path (404 elsewhere).
func htmlPages(t testing.TB, pages map[string]string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserActionsWaitUntilActionable: click, type and select wait, within
// the step's timeout, until their element is enabled and (click) would get
// the click; a click on a button enabled late takes effect, and one that
// never can fails naming the step, the selector and why.
func TestBrowserActionsWaitUntilActionable(t *testing.T) {
	b := needChromium(t)
	o := actionOrigin(t)
	for _, tc := range []struct {
		name, script string
		err          string // "" = the run passes
	}{
		{"button enabled after 1s", `
- browser: {navigate: /late}
- {name: go, timeout: 3s, browser: {click: "#b"}}
- {name: done, timeout: 200ms, browser: {assert_text: {selector: "#out", equals: clicked}}}`, ""},
		{"overlay removed after 500ms", `
- browser: {navigate: /spinner}
- {name: go, timeout: 3s, browser: {click: "#b"}}
- {name: done, timeout: 200ms, browser: {assert_text: {selector: "#out", equals: clicked}}}`, ""},
		{"button below the fold", `
- browser: {navigate: /below}
- {name: go, timeout: 3s, browser: {click: "#b"}}
- {name: done, timeout: 200ms, browser: {assert_text: {selector: "#out", equals: clicked}}}`, ""},
		{"always disabled", `
- browser: {navigate: /disabled}
- {name: go, timeout: 1s, browser: {click: "#b"}}`,
			`step 1 "go" (browser.click): click #b: not enabled within 1s`},
		{"aria-disabled", `
- browser: {navigate: /disabled}
- {name: go, timeout: 1s, browser: {click: "#a"}}`,
			`step 1 "go" (browser.click): click #a: not enabled within 1s`},
		{"input in a disabled fieldset", `
- browser: {navigate: /disabled}
- {name: fill, timeout: 1s, browser: {type: {selector: "#f", text: x}}}`,
			`step 1 "fill" (browser.type): type #f: not enabled within 1s`},
		{"disabled select", `
- browser: {navigate: /disabled}
- {name: pick, timeout: 1s, browser: {select: {selector: "#s", value: "2"}}}`,
			`step 1 "pick" (browser.select): select #s: not enabled within 1s`},
		{"covered by an overlay", `
- browser: {navigate: /overlay}
- {name: go, timeout: 1s, browser: {click: "#b"}}`,
			`step 1 "go" (browser.click): click #b: covered by div#overlay within 1s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := browserRunner(t, b, "", tc.script, 20*time.Second)
			start := time.Now()
			res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
			took := time.Since(start)
			if tc.err == "" {
				if !res.OK {
					t.Fatalf("%s: %s", res.Cause, res.Err)
				}
				return
			}
			if res.OK || res.Cause != checks.CauseScript || !strings.HasPrefix(res.Err, tc.err) {
				t.Fatalf("cause %s: %q\nwant script: %q", res.Cause, res.Err, tc.err)
			}
			if took > 10*time.Second {
				t.Errorf("the run took %s", took)
			}
		})
	}
}
