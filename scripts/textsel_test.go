package scripts

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// TestParseSelectorEngines: text= (substring), text="…" (exact) and css=
// parse into what the page's resolver gets; malformed text selectors are
// ErrInvalidSelector saying what is wrong.
func TestParseSelectorEngines(t *testing.T) {
	for _, tc := range []struct {
		sel  string
		want selector
	}{
		{"text=Log in", selector{text: "Log in"}},
		{"text=  Log in  ", selector{text: "Log in"}},
		{"TEXT=Log in", selector{text: "Log in"}},
		{`text="Log in"`, selector{text: "Log in", exact: true}},
		{`text='Say "hi"'`, selector{text: `Say "hi"`, exact: true}},
		{`text="a \"b\""`, selector{text: `a "b"`, exact: true}},
		{`text="a >> b"`, selector{text: "a >> b", exact: true}},
		{"text=a=b", selector{text: "a=b"}},
		{"css=#go", selector{css: "#go"}},
		{"css= div > p", selector{css: "div > p"}},
		{"#go", selector{css: "#go"}},
		{`[data-x="text=1"]`, selector{css: `[data-x="text=1"]`}},
	} {
		got, err := parseSelector(tc.sel)
		tc.want.written = tc.sel
		if err != nil || got != tc.want {
			t.Errorf("parseSelector(%q) = %+v, %v; want %+v", tc.sel, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ sel, msg string }{
		{"text=", `invalid text selector "text=": no text after text=`},
		{"text=   ", `invalid text selector "text=   ": no text after text=`},
		{`text="Log in`, `invalid text selector "text=\"Log in": unterminated quote`},
		{`text="Log" in`, `invalid text selector "text=\"Log\" in": text after the closing quote at offset 9`},
		{`text=""`, `invalid text selector "text=\"\"": no text in the quotes`},
		{`text=/log\s+in/i`, `invalid text selector "text=/log\\s+in/i": a regular expression text selector, which vigil does not take (use text=… with plain text, or wait_text / assert_text with regex)`},
		{"css=", `invalid CSS selector "css=": no CSS after css=`},
		{"css=#a[[", `invalid CSS selector "#a[[": unclosed "[" at offset 2`},
		{"css=text=a", `"text=a": a Playwright text= selector; vigil takes CSS selectors and text=… (css= and text= are taken only at the start)`},
		{"#form >> text=Submit", `"#form >> text=Submit": a Playwright selector chain; vigil takes CSS selectors and text=… (a descendant is "a b", a child "a > b"; text= takes no chain)`},
		{"text=Sign up >> nth=0", `"text=Sign up >> nth=0": a Playwright selector chain; vigil takes CSS selectors and text=… (a descendant is "a b", a child "a > b"; text= takes no chain)`},
	} {
		_, err := parseSelector(tc.sel)
		if err == nil || err.Error() != tc.msg || !errors.Is(err, ErrInvalidSelector) {
			t.Errorf("parseSelector(%q) = %v\nwant %s", tc.sel, err, tc.msg)
		}
	}
}

// Text selectors pass validation at every selector key; malformed ones
// are errors at their key.
func TestValidateTextSelectorKeys(t *testing.T) {
	ok := mustScript(t, `
- browser: {navigate: /}
- browser: {click: "text=Log in"}
- browser: {type: {selector: 'text="User name"', text: ada}}
- browser: {fill: {selector: "css=#pw", text: x}}
- browser: {select: {selector: "text=Size", value: "42"}}
- browser: {wait_visible: "text=Welcome"}
- browser: {wait_text: {selector: "text=Cart", contains: "1"}}
- browser: {assert_text: {selector: "text=Total", regex: "[0-9]"}}
- browser: {extract: {a: {text: "text=Order"}, b: {value: "text=Email"}, c: {attr: {selector: "text=Help", name: href}}}}
`)
	if err := ok.ValidateAndSetDefaults(0); err != nil {
		t.Fatalf("text selectors rejected: %v", err)
	}
	bad := mustScript(t, `
- browser: {navigate: /}
- browser: {click: "text="}
- browser: {extract: {a: {text: 'text="Order'}}}
`)
	err := units.Prefix("script", bad.ValidateAndSetDefaults(0))
	want := []string{
		`script[1].browser.click: invalid text selector "text=": no text after text=`,
		`script[2].browser.extract.a.text: invalid text selector "text=\"Order": unterminated quote`,
	}
	var got []string
	for _, e := range units.Errors(err) {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// textPage has buttons and links to find by text: a hidden button with
// the text "Log in" before the real one, a button whose text only
// contains "Log in" before it, a link whose text sits in a span over two
// lines, and a login form whose fields have labels. Clicks on the
// buttons and the link are recorded into the form's field "clicked".
const textPage = `<!doctype html><title>login</title>
<nav><a id="help" href="/help">Help</a></nav>
<button id="ghost" type="button" style="display:none" onclick="hit('ghost')">Log in</button>
<p style="display:none">Secret door</p>
<button id="sso" type="button" onclick="hit('sso')">Log in with SSO</button>
<div id="card"><a href="#" id="signup" onclick="hit('signup'); return false"><span id="signup-label">Sign
    up</span></a></div>
<form method="post" action="/session">
<label for="user">User name</label> <input id="user" name="user">
<label for="pw">Password</label> <input id="pw" name="pw" type="password">
<input type="hidden" name="clicked" id="clicked">
<button id="go" type="submit"> Log
  in </button>
</form>
<script>function hit(id) { document.getElementById('clicked').value += id + ' '; }</script>`

// textServer serves textPage at /login and records the form posted to
// /session, answering "Welcome, <user>".
type textServer struct {
	*httptest.Server
	formSink
}

func newTextServer(t testing.TB) *textServer {
	s := &textServer{}
	mux := http.NewServeMux()
	s.route(mux, "/login", textPage, "/session", func(form url.Values) string {
		return `<!doctype html><title>home</title><main><p>Welcome, ` + htmlEscape(form.Get("user")) + `</p></main>`
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// TestBrowserTextSelectors: text=… clicks the smallest visible element
// containing the text, case-insensitively and with whitespace collapsed;
// text="…" clicks the one whose whole text it is (not "Log in with SSO",
// not the hidden "Log in" before it); a label found by text stands for its
// field in fill and type; extract and wait_text find by text too. The
// server receives what was filled and which elements got the clicks.
func TestBrowserTextSelectors(t *testing.T) {
	b := needChromium(t)
	o := newTextServer(t)
	r := browserRunner(t, b, "", `
- browser: {navigate: /login}
- browser: {click: "text=with sso"}
- browser: {click: "text=SIGN   UP"}
- browser: {extract: {smallest: {attr: {selector: "text=Sign up", name: id}}, help: {attr: {selector: "text=help", name: href}}}}
- browser: {fill: {selector: "text=User name", text: "ada"}}
- browser: {type: {selector: 'text="Password"', text: "pw-${smallest}"}}
- browser: {assert_text: {selector: "css=#user", equals: ""}}
- browser: {click: 'text="Log in"'}
- browser: {wait_text: {selector: "text=welcome", equals: "Welcome, ada"}}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	if !res.OK {
		t.Fatalf("%s: %s\n%+v", res.Cause, res.Err, res.Steps)
	}
	o.checkPosted(t, map[string]string{
		// sso: "with sso" is in "Log in with SSO"; signup: the link's
		// text over two lines; never ghost, the hidden "Log in".
		"clicked": "sso signup ",
		"user":    "ada",
		// The span, not the link or the div around it.
		"pw": "pw-signup-label",
	})
}

// TestBrowserTextSelectorErrors: a text selector that finds nothing, or
// only hidden elements, fails the step (cause script) naming the selector
// as written.
func TestBrowserTextSelectorErrors(t *testing.T) {
	b := needChromium(t)
	o := newTextServer(t)
	for _, tc := range []struct{ step, want string }{
		// Exact text is case-sensitive.
		{`{click: 'text="log in"'}`, `click text="log in": no element within 1s`},
		{`{click: "text=Secret door"}`, `click text=Secret door: not visible within 1s`},
		{`{wait_visible: "text=Secret door"}`, `wait_visible text=Secret door: not visible within 1s`},
		{`{assert_text: {selector: "text=Nowhere", contains: x}}`, `assert_text text=Nowhere: no element within 1s`},
		{`{fill: {selector: "text=Log in with", text: x}}`, `fill text=Log in with: a <button> cannot be filled (want an input, a textarea or a contenteditable element)`},
		{`{extract: {v: {text: 'text="Sign"'}}}`, `extract v from text="Sign": no element within 1s`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			r := browserRunner(t, b, "", `
- browser: {navigate: /login}
- {name: s, timeout: 1s, browser: `+tc.step+`}
`, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
			if res.OK || res.Cause != checks.CauseScript || !strings.HasSuffix(res.Err, "): "+tc.want) {
				t.Fatalf("%s: %q\nwant script: …%q", res.Cause, res.Err, tc.want)
			}
		})
	}
}

// FuzzParseSelector: parsing never panics, every rejection is an
// ErrInvalidSelector, what parses is CSS or a text with text in it, and
// any text written quoted (with \" and \\) comes back exact, as written.
func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"text=Log in", `text="Log in"`, "css=#go", "#go", `text='a\'b'`, "text=", `text="a >> b"`, `a\`, "Log in"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := parseSelector(s)
		switch {
		case err != nil:
			if !errors.Is(err, ErrInvalidSelector) {
				t.Fatalf("parseSelector(%q) = %v: not an ErrInvalidSelector", s, err)
			}
		case sel.css == "" && strings.TrimSpace(sel.text) == "":
			t.Fatalf("parseSelector(%q) = %+v: neither CSS nor text", s, sel)
		}
		if strings.TrimSpace(s) == "" {
			return
		}
		quoted := `text="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
		sel, err = parseSelector(quoted)
		if err != nil || !sel.exact || sel.text != s {
			t.Fatalf("parseSelector(%q) = %+v, %v; want the exact text %q", quoted, sel, err, s)
		}
	})
}
