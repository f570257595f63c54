package main

import (
	"strings"
	"testing"
)

// TestValidatePlaywrightSelector: `vigil validate` rejects a Playwright
// selector it does not take, or XPath (exit 2), naming the file, the key and
// what the selector is, instead of accepting it for querySelector to reject
// at run time; CSS with "//", "=" or ">>" inside attribute values, and text
// selectors, pass.
func TestValidatePlaywrightSelector(t *testing.T) {
	bad := writeConfig(t, `
targets: [{name: o, url: "http://127.0.0.1:1"}]
checks:
  - name: login
    targets: [o]
    script:
      - browser: {navigate: /login}
      - browser: {click: "role=button"}
      - browser: {wait_visible: "//button[@id='submit']"}
      - browser: {click: "#form >> button"}
`)
	out, code := runCLI(t, "validate", "-c", bad)
	for _, want := range []string{
		`checks[0].script[1].browser.click: "role=button": a Playwright role selector; vigil takes CSS selectors and text=… (in CSS, match the element or its role attribute, e.g. button or [role="button"])`,
		`checks[0].script[2].browser.wait_visible: "//button[@id='submit']": an XPath selector; vigil takes CSS selectors and text=…`,
		`checks[0].script[3].browser.click: "#form >> button": a Playwright selector chain; vigil takes CSS selectors and text=… (a descendant is "a b", a child "a > b"; text= takes no chain)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	if code != 2 || !strings.Contains(out, bad) {
		t.Errorf("exit %d, want 2 and the file name:\n%s", code, out)
	}

	ok := writeConfig(t, `
targets: [{name: o, url: "http://127.0.0.1:1"}]
checks:
  - name: page
    targets: [o]
    script:
      - browser: {navigate: /}
      - browser: {click: 'a[href="//cdn.example/x"]'}
      - browser: {wait_visible: '[data-x="text=1"]'}
      - browser: {wait_text: {selector: '[title="a >> b"], div > p, :is(a, b), #id', contains: x}}
      - browser: {click: "text=Log in"}
      - browser: {click: 'text="Log in"'}
`)
	if out, code := runCLI(t, "validate", "-c", ok); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Errorf("CSS selectors: exit %d: %s", code, out)
	}
}

// TestValidateVariableNameAsWritten: an undefined ${name} is shown as the
// file wrote it, while names still match case-insensitively.
func TestValidateVariableNameAsWritten(t *testing.T) {
	cfg := writeConfig(t, `
targets: [{name: o, url: "http://127.0.0.1:1"}]
checks:
  - name: order
    targets: [o]
    script:
      - http: {path: /orders}
        extract: {orderId: {json: id}}
      - http: {path: "/orders/${orderId}/${ORDERID}"}
      - http: {path: "/orders/${orderID}/items/${itemId}"}
`)
	out, code := runCLI(t, "validate", "-c", cfg)
	want := cfg + ":10:16: checks[0].script[2].http.path: undefined variable ${itemId}: no earlier step extracts it"
	if code != 2 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d:\n%s\nwant exit 2:\n%s", code, out, want)
	}
}
