package scripts

import (
	"context"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestBrowserNewTabIsNamedByAssertURL: a click on a target=_blank link
// opens a tab the script does not follow; the assert_url that expected
// its page says so and names the URL, and navigating to the link's href,
// extracted into a variable, reaches it.
func TestBrowserNewTabIsNamedByAssertURL(t *testing.T) {
	b := needChromium(t)
	srv := htmlPages(t, map[string]string{
		"/":     `<!doctype html><title>Home</title><a id=docs href="/docs" target="_blank">Docs</a>`,
		"/docs": `<!doctype html><title>Docs</title><h1>Docs</h1>`,
	})

	r := browserRunner(t, b, "", `
- browser: {navigate: /}
- browser: {click: "#docs"}
- name: on docs
  timeout: 500ms
  browser: {assert_url: /docs}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "app", URL: srv.URL})
	want := `step 2 "on docs" (browser.assert_url): assert_url: got "` + srv.URL + `/", want "` + srv.URL + `/docs", within 500ms; the page opened ` + srv.URL + `/docs in a new tab, which the script does not follow (navigate to it: extract the link's href into a variable and navigate: ${var})`
	if res.OK || res.Cause != checks.CauseScript || res.Err != want {
		t.Errorf("got %s: %q\nwant script: %q", res.Cause, res.Err, want)
	}

	// The workaround the message gives.
	r = browserRunner(t, b, "", `
- browser: {navigate: /}
- browser: {extract: {docs: {attr: {selector: "#docs", name: href}}}}
- browser: {navigate: "${docs}"}
- browser: {assert_url: /docs}
- browser: {assert_text: {selector: h1, equals: Docs}}
`, 20*time.Second)
	if res := r.Run(context.Background(), checks.Target{Name: "app", URL: srv.URL}); !res.OK {
		t.Errorf("navigating to the extracted href: %s: %s", res.Cause, res.Err)
	}
}
