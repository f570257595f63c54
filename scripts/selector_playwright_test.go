package scripts

import (
	"errors"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Playwright selectors of engines vigil does not take (text= and css= it
// takes: textsel_test.go) and XPath selectors, with the message the
// load-time check gives. querySelector rejects every one of them, but only at run time and
// without saying why.
var notCSSSelectors = []struct{ sel, msg string }{
	{`"Log in"`, `"\"Log in\"": a Playwright text selector without its engine; vigil takes CSS selectors and text=… (write it text="Log in")`},
	{"internal:text=Log in", `"internal:text=Log in": a Playwright text selector; vigil takes CSS selectors and text=… (write it text=Log in)`},
	{"//button[@id='submit']", `"//button[@id='submit']": an XPath selector; vigil takes CSS selectors and text=…`},
	{"  //a", `"  //a": an XPath selector; vigil takes CSS selectors and text=…`},
	{"(//a)[2]", `"(//a)[2]": an XPath selector; vigil takes CSS selectors and text=…`},
	{"../span", `"../span": an XPath selector; vigil takes CSS selectors and text=…`},
	{"xpath=//button", `"xpath=//button": an XPath selector; vigil takes CSS selectors and text=…`},
	{"#form >> text=Submit", `"#form >> text=Submit": a Playwright selector chain; vigil takes CSS selectors and text=… (a descendant is "a b", a child "a > b"; text= takes no chain)`},
	{"div>>span", `"div>>span": a Playwright selector chain; vigil takes CSS selectors and text=… (a descendant is "a b", a child "a > b"; text= takes no chain)`},
	{`[title="a"] >> b`, `"[title=\"a\"] >> b": a Playwright selector chain; vigil takes CSS selectors and text=… (a descendant is "a b", a child "a > b"; text= takes no chain)`},
	{"data-testid=submit", `"data-testid=submit": a Playwright data-testid= selector; vigil takes CSS selectors and text=… (in CSS: [data-testid="submit"])`},
	{`id="go"`, `"id=\"go\"": a Playwright id= selector; vigil takes CSS selectors and text=… (in CSS: [id="go"])`},
	{`role=button[name="Log in"]`, `"role=button[name=\"Log in\"]": a Playwright role selector; vigil takes CSS selectors and text=… (in CSS, match the element or its role attribute, e.g. button or [role="button"])`},
	{"nth=0", `"nth=0": a Playwright nth= selector; vigil takes CSS selectors and text=…`},
}

// CSS that looks like the above in places and must still pass: "//", "="
// and ">>" inside attribute values, ordinary combinators.
var cssLookalikes = []string{
	`a[href="//cdn.example/x"]`, `[data-x="text=1"]`, "div > p", ":is(a, b)", "#id",
	`[title="a >> b"]`, `[title='x>>y']`, `a[href^="xpath="]`, "div>p", `a[href*='//']`,
	`[data-x="css=.a"] > b`, `input[value="id=1"]`, `a\>\>b`,
}

func TestCheckSelectorPlaywright(t *testing.T) {
	for _, tc := range notCSSSelectors {
		err := checkSelector(tc.sel)
		if err == nil || err.Error() != tc.msg {
			t.Errorf("checkSelector(%q) = %v\nwant %s", tc.sel, err, tc.msg)
			continue
		}
		if !errors.Is(err, ErrNotCSSSelector) || !errors.Is(err, ErrInvalidSelector) {
			t.Errorf("checkSelector(%q): %v is not ErrNotCSSSelector and ErrInvalidSelector", tc.sel, err)
		}
	}
	for _, sel := range cssLookalikes {
		if err := checkSelector(sel); err != nil {
			t.Errorf("checkSelector(%q) = %v, want ok", sel, err)
		}
	}
}

// A script's Playwright selectors are config errors at their keys.
func TestValidatePlaywrightSelectorKeys(t *testing.T) {
	sc := mustScript(t, `
- browser: {navigate: /}
- browser: {click: "role=button"}
- browser: {type: {selector: "//input[@name='q']", text: shoes}}
- browser: {wait_text: {selector: "#cart >> .count", equals: "1"}}
- browser: {wait_visible: "data-testid=cart"}
- browser: {click: 'a[href="//cdn.example/x"]'}
`)
	err := units.Prefix("script", sc.ValidateAndSetDefaults(0))
	want := []string{
		`script[1].browser.click: "role=button": a Playwright role selector; vigil takes CSS selectors and text=… (in CSS, match the element or its role attribute, e.g. button or [role="button"])`,
		`script[2].browser.type.selector: "//input[@name='q']": an XPath selector; vigil takes CSS selectors and text=…`,
		`script[3].browser.wait_text.selector: "#cart >> .count": a Playwright selector chain; vigil takes CSS selectors and text=… (a descendant is "a b", a child "a > b"; text= takes no chain)`,
		`script[4].browser.wait_visible: "data-testid=cart": a Playwright data-testid= selector; vigil takes CSS selectors and text=… (in CSS: [data-testid="cart"])`,
	}
	var got []string
	for _, e := range units.Errors(err) {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !errors.Is(err, ErrNotCSSSelector) {
		t.Errorf("%v is not ErrNotCSSSelector", err)
	}
}

// Chromium's querySelector rejects every selector the check calls
// Playwright or XPath, and accepts the look-alikes: the check turns a
// run-time failure into a load-time one and rejects no CSS.
func TestCheckSelectorPlaywrightAgreesWithChromium(t *testing.T) {
	chromeRejects := chromeSelectorRejects(t)
	for _, tc := range notCSSSelectors {
		if !chromeRejects(tc.sel) {
			t.Errorf("Chromium accepts %q, which the load-time check rejects", tc.sel)
		}
	}
	for _, sel := range cssLookalikes {
		if chromeRejects(sel) {
			t.Errorf("Chromium rejects %q, which the load-time check accepts", sel)
		}
	}
}

// An undefined ${name} is echoed as written, though variables match
// case-insensitively: ${ORDERID} finds the extract orderid.
func TestValidateVarNameAsWritten(t *testing.T) {
	sc := mustScript(t, `
- http: {path: /orders}
  extract: {orderid: {json: id}}
- http: {path: "/orders/${ORDERID}", headers: {x-cart: "${cartId}"}}
- browser: {type: {selector: "#q", text: "${ Coupon }"}}
`)
	err := units.Prefix("script", sc.ValidateAndSetDefaults(0))
	want := []string{
		"script[1].http.headers.x-cart: undefined variable ${cartId}: no earlier step extracts it",
		"script[2].browser.type.text: undefined variable ${Coupon}: no earlier step extracts it",
	}
	var got []string
	for _, e := range units.Errors(err) {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// At run time too, the name as written.
	rv := newRunVars()
	rv.vars["orderid"] = "42"
	if out, err := rv.expand("/orders/${OrderId}"); err != nil || out != "/orders/42" {
		t.Errorf("expand ${OrderId} = %q, %v; want /orders/42", out, err)
	}
	if _, err := rv.expand("/carts/${cartId}"); err == nil || err.Error() != "variable cartId is not set" {
		t.Errorf("expand ${cartId}: %v, want variable cartId is not set", err)
	}
}
