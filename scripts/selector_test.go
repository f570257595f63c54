package scripts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/vigil-synthetics/vigil/checks"
)

// Selectors the load-time check must accept (Chromium accepts them all).
var validSelectors = []string{
	"#a", "div > p", "a + b ~ c", `a[href$=")"]`, `a[title="[x"]`, ":is(a, b)",
	"li:nth-child(2n+1)", "[class~=x]", `#foo\[bar`, "a, b", "input[name='q']",
	"a:not([href])", `#\31 23`, "  #padded  ", `[data-x="a\"b"]`, "div\n>\tp",
}

// Selectors it must reject, with the reason it gives. lenient marks the
// ones Chromium accepts because CSS closes open brackets and strings at the
// end of input (CSS Syntax Level 3, §5.4.7 and §4.3.5): almost surely typos,
// so vigil rejects them at load anyway.
var invalidSelectors = []struct {
	sel, why string
	lenient  bool
}{
	{"#go[[[", `unclosed "[" at offset 3`, false},
	{"a)", `unexpected ")" at offset 1`, false},
	{"a]", `unexpected "]" at offset 1`, false},
	{"a:not(b]", `unexpected "]" at offset 7`, false},
	{"a:is(b", `unclosed "(" at offset 4`, true},
	{`[x="y]`, "unterminated string starting at offset 3", true},
	{"a,", "empty selector in the list at offset 2", false},
	{",a", "empty selector in the list at offset 0", false},
	{"a, ,b", "empty selector in the list at offset 2", false},
	{"div >", `ends with the combinator ">"`, false},
	{"> div", `starts with the combinator ">"`, false},
	{"a ~", `ends with the combinator "~"`, false},
}

func TestCheckSelector(t *testing.T) {
	for _, sel := range validSelectors {
		if err := checkSelector(sel); err != nil {
			t.Errorf("checkSelector(%q) = %v, want ok", sel, err)
		}
	}
	for _, tc := range invalidSelectors {
		err := checkSelector(tc.sel)
		want := fmt.Sprintf("invalid CSS selector %q: %s", tc.sel, tc.why)
		if err == nil || err.Error() != want || !errors.Is(err, ErrInvalidSelector) {
			t.Errorf("checkSelector(%q) = %v, want %s", tc.sel, err, want)
		}
	}
}

// The load-time check agrees with Chromium on every case above: it rejects
// nothing Chromium accepts (except the lenient typos), and what it rejects
// Chromium rejects too.
func TestCheckSelectorAgreesWithChromium(t *testing.T) {
	chromeRejects := chromeSelectorRejects(t)
	for _, sel := range validSelectors {
		if chromeRejects(sel) {
			t.Errorf("Chromium rejects %q, which the load-time check accepts", sel)
		}
	}
	for _, tc := range invalidSelectors {
		if got := chromeRejects(tc.sel); got == tc.lenient {
			t.Errorf("Chromium rejects %q: %v, want %v", tc.sel, got, !tc.lenient)
		}
	}
}

// A selector that passes the load-time check but that Chromium rejects
// (here an unknown pseudo-class, or one built from a variable) fails the
// step at once with cause script, not after the step's timeout.
func TestBrowserInvalidSelectorFailsFast(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	tail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tail=[[[")
	}))
	defer tail.Close()
	for _, tc := range []struct{ name, step, sel string }{
		{"click", `{click: "#add-to-cart:nope"}`, "#add-to-cart:nope"},
		{"wait_visible", `{wait_visible: "#cart:nope"}`, "#cart:nope"},
		{"type", `{type: {selector: "#q:nope", text: x}}`, "#q:nope"},
		{"select", `{select: {selector: "#size:nope", value: "42"}}`, "#size:nope"},
		{"wait_text", `{wait_text: {selector: "#cart-count:nope", equals: "1"}}`, "#cart-count:nope"},
		{"assert_text", `{assert_text: {selector: "#cart-count:nope", equals: "1"}}`, "#cart-count:nope"},
		// Built from a variable: only checkable after expansion.
		{"variable", `{click: "#go${tail}"}`, "#go[[["},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := browserRunner(t, b, "", fmt.Sprintf(`
- http: {url: "%s/tail"}
  extract: {tail: {regex: "tail=(.*)"}}
- browser: {navigate: /shop}
- browser: %s
  timeout: 10s
- {always: true, browser: {assert_title: Shop}}
`, tail.URL, tc.step), 30*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "local", URL: o.URL})
			if res.OK {
				t.Fatal("passed with an invalid selector")
			}
			st := res.Steps[2]
			want := fmt.Sprintf("invalid CSS selector %q: ", tc.sel)
			if res.Cause != checks.CauseScript || st.Cause != checks.CauseScript || !strings.Contains(st.Err, want) {
				t.Errorf("cause %s, step cause %s, err %q; want cause script and %q", res.Cause, st.Cause, st.Err, want)
			}
			// Well inside the step's 10s timeout: the page was asked once.
			if st.Duration > 5*time.Second {
				t.Errorf("step took %s: it waited for the timeout", st.Duration)
			}
			if !res.Steps[3].OK {
				t.Errorf("the tab is unusable after the invalid selector: %+v", res.Steps[3])
			}
		})
	}
}

// chromeSelectorRejects opens a tab on a tiny page and returns a function
// telling whether Chromium's querySelector rejects a selector. The tab
// closes when the test ends.
func chromeSelectorRejects(t *testing.T) func(sel string) bool {
	t.Helper()
	b := needChromium(t)
	o := newPageOrigin(t)
	tb, err := b.openTab(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tb.close)
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	t.Cleanup(cancel)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(o.URL+"/tiny")); err != nil {
		t.Fatal(err)
	}
	return func(sel string) bool {
		msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(selectorJS, jsString(sel))))
		if err != nil {
			t.Fatalf("evaluate %q: %v", sel, err)
		}
		return msg != ""
	}
}
