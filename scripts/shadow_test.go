package scripts

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestBrowserCSSSelectorsPierceOpenShadowRoots: a CSS selector finds an
// element inside an open shadow root (nested too), as Playwright's CSS
// engine does; a closed root stays closed.
func TestBrowserCSSSelectorsPierceOpenShadowRoots(t *testing.T) {
	b := needChromium(t)
	o := htmlPages(t, map[string]string{"/shadow": `<!doctype html><title>shadow</title>
<my-el></my-el><closed-el></closed-el>
<script>
const outer = document.querySelector('my-el').attachShadow({mode: 'open'});
outer.innerHTML = '<p>outer</p><inner-el></inner-el>';
const inner = outer.querySelector('inner-el').attachShadow({mode: 'open'});
inner.innerHTML = '<button id="inner" onclick="document.title = \'clicked\'">Go</button><input id="q">';
document.querySelector('closed-el').attachShadow({mode: 'closed'}).innerHTML = '<b id="hidden">x</b>';
</script>`})
	ok := browserRunner(t, b, "", `
- browser: {navigate: /shadow}
- browser: {assert_text: {selector: "#inner", equals: Go}}
- browser: {fill: {selector: "#q", text: hello}}
- browser: {extract: {q: {value: "#q"}}}
- browser: {click: "#inner"}
- browser: {assert_title: clicked}
- expr: 'vars.q == "hello"'
`, 20*time.Second).Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
	if !ok.OK {
		t.Errorf("run failed: %s: %s", ok.Cause, ok.Err)
	}
	closed := browserRunner(t, b, "", `
- browser: {navigate: /shadow}
- timeout: 500ms
  browser: {click: "#hidden"}
`, 20*time.Second).Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
	if got, _, _ := strings.Cut(closed.Err, "; no failure screenshot"); closed.OK || !strings.HasSuffix(got, "click #hidden: no element within 500ms") {
		t.Errorf("closed root: %s: %q, want no element", closed.Cause, closed.Err)
	}
}
