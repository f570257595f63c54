package scripts

import (
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// maskPW is the secret the page of formsOrigin shows in several forms.
const maskPW = "ScriptPw&EEEE 5555"

// formsOrigin serves /forms, a page that shows maskPW upper-cased,
// lower-cased, in a Basic credential, percent-encoded the RFC 3986 way,
// hex- and base32-encoded, percent-encoded twice and split across two
// elements, one form a line. /forms?ref=1 is the same
// page with what a screenshot must hide written as "•", worked out with
// checks.Redactor: the forms a screenshot hides are the text's.
func formsOrigin(t *testing.T) *httptest.Server {
	t.Helper()
	var red checks.Redactor
	for _, f := range []string{maskPW, strings.ToUpper(maskPW), strings.ToLower(maskPW)} {
		red.Add(f)
	}
	// dots is line with the secret's form in it as "•": Redact's "***"
	// stands for the bytes it hid.
	dots := func(line string) string {
		r := red.Redact(line)
		if strings.Count(r, checks.Redacted) != 1 {
			t.Fatalf("Redact(%q) = %q, want one form hidden", line, r)
		}
		return strings.Replace(r, checks.Redacted, strings.Repeat("•", len(line)-len(r)+len(checks.Redacted)), 1)
	}
	lines := []string{
		strings.ToUpper(maskPW),
		strings.ToLower(maskPW),
		"Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+maskPW)),
		strings.NewReplacer("&", "%26", " ", "%20").Replace(maskPW),
		"sig " + hex.EncodeToString([]byte(maskPW)),
		"seed " + base32.StdEncoding.EncodeToString([]byte(maskPW)),
		"next=" + url.QueryEscape(url.QueryEscape(maskPW)),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref := r.URL.Query().Get("ref") != ""
		var b strings.Builder
		for i, l := range lines {
			if ref {
				l = dots(l)
			}
			fmt.Fprintf(&b, "<p>%d: %s</p>", i, html.EscapeString(l))
		}
		head, tail := maskPW[:6], maskPW[6:]
		if ref {
			head, tail = strings.Repeat("•", len(head)), strings.Repeat("•", len(tail))
		}
		fmt.Fprintf(&b, "<p>split: <b>%s</b>%s</p>", html.EscapeString(head), html.EscapeString(tail))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>f</title><style>body { font: 20px monospace; margin: 20px }</style>%s<p id="ok">ok</p>`, b.String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserScreenshotHidesSecretForms: the failure screenshot hides an
// ${env:…} secret in the forms the run's messages hide it in (upper- and
// lower-cased, inside a Basic credential, percent-encoded once and twice,
// hex, base32) and split
// across two elements: pixel for pixel, it is the page with those
// characters written as "•".
func TestBrowserScreenshotHidesSecretForms(t *testing.T) {
	b := needChromium(t)
	srv := formsOrigin(t)
	t.Setenv("MASK_PW", maskPW)
	run := func(src string) (checks.Result, string) {
		t.Helper()
		dir := t.TempDir()
		res := browserRunner(t, b, dir, src, 20*time.Second).Run(context.Background(), checks.Target{Name: "x", URL: srv.URL})
		if res.OK || len(res.Artifacts) != 1 || !strings.Contains(res.Err, "assert_text") {
			t.Fatalf("%s: %s %v, want the assert_text step to fail with a screenshot", res.Cause, res.Err, res.Artifacts)
		}
		return res, dir
	}
	got, gdir := run(`
- browser: {navigate: /forms}
- browser: {eval: {js: "'${env:MASK_PW}'.length > 0"}}
- browser: {assert_text: {selector: "#ok", equals: "nomatch"}}
  timeout: 500ms
`)
	ref, rdir := run(`
- browser: {navigate: "/forms?ref=1"}
- browser: {eval: {js: "true"}}
- browser: {assert_text: {selector: "#ok", equals: "nomatch"}}
  timeout: 500ms
`)
	if !samePixels(decodePNG(t, rdir, ref.Artifacts[0]), decodePNG(t, gdir, got.Artifacts[0])) {
		t.Errorf("the failure screenshot is not the page with the secret's forms as •")
	}
}
