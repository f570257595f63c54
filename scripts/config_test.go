package scripts

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

func TestValidateValid(t *testing.T) {
	sc := mustScript(t, `
- name: login
  http: {method: POST, path: /login, json: {user: demo, password: "${env:DEMO_PASSWORD}"}}
  expect: {status: 200, json: [{path: token, exists: true}]}
  extract: {token: {json: token}, sid: {cookie: sid}, etag: {header: ETag}, order: {regex: "order=(\\d+)"}}
  timeout: 5s
- http: {path: /api/me, headers: {authorization: "Bearer ${token}"}}
- expr: 'vars.token != "" && last.status_code == 200'
- browser: {navigate: /shop}
- browser: {click: "#add-to-cart"}
- browser: {type: {selector: "#q", text: "shoes"}}
- browser: {select: {selector: "#size", value: "42"}}
- browser: {wait_visible: "#cart"}
- browser: {wait_text: {selector: "#cart-count", equals: "1"}}
- browser: {assert_text: {selector: "#cart-count", equals: "${order}"}}
- browser: {assert_title: "Shop"}
- browser: {assert_url: "~/shop"}
- browser: {eval: {js: "document.querySelectorAll('.item').length", equals: 3}}
- browser: {screenshot: true}
- browser: {sleep: 500ms}
- browser: {no_console_errors: true}
- browser: {max_failed_requests: 0}
- name: cleanup
  always: true
  http: {method: DELETE, path: /cart}
`)
	if err := sc.ValidateAndSetDefaults(30 * time.Second); err != nil {
		t.Fatalf("valid script rejected: %v", err)
	}
	wantKinds := []string{"http", "http", "expr", "browser.navigate", "browser.click", "browser.type",
		"browser.select", "browser.wait_visible", "browser.wait_text", "browser.assert_text",
		"browser.assert_title", "browser.assert_url", "browser.eval", "browser.screenshot",
		"browser.sleep", "browser.no_console_errors", "browser.max_failed_requests", "http"}
	for i, k := range wantKinds {
		if got := sc[i].Kind(); got != k {
			t.Errorf("step %d kind %q, want %q", i, got, k)
		}
	}
	if sc[0].Name != "login" || sc[1].Name != "1 http" || sc[4].Name != "4 browser.click" {
		t.Errorf("names: %q %q %q", sc[0].Name, sc[1].Name, sc[4].Name)
	}
	if sc[0].timeout != 5*time.Second || sc[1].timeout != DefaultStepTimeout {
		t.Errorf("timeouts: %s %s", sc[0].timeout, sc[1].timeout)
	}
	if !sc.HasBrowser() {
		t.Error("HasBrowser false")
	}
	// The canary validates at load, then compiles: validation is idempotent.
	if _, err := New(sc, Options{Check: "c", Timeout: 30 * time.Second}); err != nil {
		t.Fatalf("New after ValidateAndSetDefaults: %v", err)
	}
	if sc[1].Name != "1 http" || len(sc[0].extract) != 4 {
		t.Errorf("second validation changed the steps: %q, %d extractors", sc[1].Name, len(sc[0].extract))
	}
}

func TestValidateErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		timeout   time.Duration
		want      []string // full messages after units.Prefix("script", …)
		is        error
	}{
		{"no kind", `[{name: x}]`, 0,
			[]string{"script[0]: step has no kind: want one of http, expr, browser"}, ErrNoKind},
		{"two kinds", `[{expr: "true", browser: {click: "#a"}}]`, 0,
			[]string{"script[0]: step has more than one kind: expr, browser"}, ErrManyKinds},
		{"empty selector", `
- browser: {navigate: /}
- browser: {navigate: /}
- browser: {click: ""}`, 0,
			[]string{"script[2].browser.click: selector is empty"}, ErrEmptySelector},
		{"empty type selector", `[{browser: {type: {text: hi}}}]`, 0,
			[]string{"script[0].browser.type.selector: selector is empty"}, ErrEmptySelector},
		{"two actions", `[{browser: {click: "#a", wait_visible: "#b"}}]`, 0,
			[]string{"script[0].browser: more than one action: click, wait_visible"}, nil},
		{"invalid selector", `
- browser: {navigate: /}
- browser: {click: "#go[[["}`, 0,
			[]string{`script[1].browser.click: invalid CSS selector "#go[[[": unclosed "[" at offset 3`}, ErrInvalidSelector},
		{"invalid selectors name their keys", `
- browser: {type: {selector: "input[name='q", text: x}}
- browser: {wait_text: {selector: "#a >", equals: "1"}}
- browser: {select: {selector: "a,,b", value: "1"}}`, 0,
			[]string{
				`script[0].browser.type.selector: invalid CSS selector "input[name='q": unterminated string starting at offset 11`,
				`script[1].browser.wait_text.selector: invalid CSS selector "#a >": ends with the combinator ">"`,
				`script[2].browser.select.selector: invalid CSS selector "a,,b": empty selector in the list at offset 2`,
			}, ErrInvalidSelector},
		{"no action", `[{browser: {}}]`, 0,
			[]string{"script[0].browser: no action: want one of navigate, click, type, fill, select, wait_visible, wait_text, assert_text, assert_title, assert_url, eval, extract, screenshot, sleep, no_console_errors, max_failed_requests"}, nil},
		{"undefined variable", `
- http: {path: /login}
  extract: {token: {json: token}}
- http: {path: /me, headers: {authorization: "Bearer ${tokn}"}}`, 0,
			[]string{"script[1].http.headers.authorization: undefined variable ${tokn}: no earlier step extracts it"}, ErrUndefinedVar},
		{"an environment variable written as a script variable", `
- http: {path: /me, headers: {X-Key: "${API_KEY}"}}`, 0,
			[]string{"script[0].http.headers.x-key: undefined variable ${API_KEY}: no earlier step extracts it (for the environment variable API_KEY write ${env:API_KEY}: in a script step ${API_KEY} is a variable an earlier step extracts)"}, ErrUndefinedVar},
		{"undefined variables name their keys", `
- http: {path: "/a/${nope}", body: "x${b}"}
- http: {url: "http://127.0.0.1/${u}", json: {user: {name: "${j}"}, list: ["${l}"]}}
- browser: {type: {selector: "#q", text: "${t}"}}
- browser: {wait_text: {selector: "#q", contains: "${c}"}}
- browser: {eval: {js: "${e}"}}`, 0,
			[]string{
				"script[0].http.path: undefined variable ${nope}: no earlier step extracts it",
				"script[0].http.body: undefined variable ${b}: no earlier step extracts it",
				"script[1].http.url: undefined variable ${u}: no earlier step extracts it",
				"script[1].http.json.list[0]: undefined variable ${l}: no earlier step extracts it",
				"script[1].http.json.user.name: undefined variable ${j}: no earlier step extracts it",
				"script[2].browser.type.text: undefined variable ${t}: no earlier step extracts it",
				"script[3].browser.wait_text.contains: undefined variable ${c}: no earlier step extracts it",
				"script[4].browser.eval.js: undefined variable ${e}: no earlier step extracts it",
			}, ErrUndefinedVar},
		{"malformed variable names its key", `[{http: {path: /, headers: {x-a: "${not a name}"}}}]`, 0,
			[]string{"script[0].http.headers.x-a: ${not a name}: not a variable name (want ${name} or ${env:NAME})"}, nil},
		{"variable used before extraction", `
- browser: {navigate: "/orders/${order}"}
- http: {path: /login}
  extract: {order: {json: id}}`, 0,
			[]string{"script[0].browser.navigate: undefined variable ${order}: no earlier step extracts it"}, ErrUndefinedVar},
		{"undefined variable in expr", `[{expr: 'vars.nope == "x"'}]`, 0,
			[]string{"script[0].expr: undefined variable vars.nope: no earlier step extracts it"}, ErrUndefinedVar},
		{"variables in expect", `
- http: {path: /login}
  extract: {token: {json: token}, Order: {regex: "order=(\\d+)"}}
- name: me
  http: {path: /me}
  expect: {body: {contains: ["${token}"], not_contains: ["id ${ORDER} and ${order}"]}, headers: {X-Token: "${env:API_TOKEN}"}, json: [{path: id, equals: "${later}"}]}
- http: {path: /x}
  extract: {later: {header: X-Later}}`, 0,
			[]string{
				`script[1].expect.headers.x-token: variables are not expanded in expect (step "me"): ${env:API_TOKEN} would be matched as literal text; expect cannot use environment variables (their values are secrets)`,
				`script[1].expect.body.contains[0]: variables are not expanded in expect (step "me"): ${token} would be matched as literal text; compare the variable in an expr step instead, e.g. expr: 'last.body contains vars.token'`,
				`script[1].expect.body.not_contains[0]: variables are not expanded in expect (step "me"): ${ORDER} would be matched as literal text; compare the variable in an expr step instead, e.g. expr: 'last.body contains vars.order'`,
				`script[1].expect.json[0].equals: variables are not expanded in expect (step "me"): ${later} would be matched as literal text; compare the variable in an expr step instead, e.g. expr: 'last.body contains vars.later'`,
			}, ErrVarInExpect},
		{"bad expr", `[{expr: 'last.status_code +'}]`, 0, nil, nil},
		{"expr not bool", `[{expr: 'last.status_code'}]`, 0, nil, nil},
		{"timeouts over check timeout", `
- {browser: {navigate: /}, timeout: 4s}
- {browser: {click: "#a"}, timeout: 4s}
- {browser: {sleep: 3s}}`, 10 * time.Second,
			[]string{"script[2].browser.sleep: step timeouts exceed the check timeout: steps 0..2 add up to 11s ([0].timeout 4s + [1].timeout 4s + [2].browser.sleep 3s), the check timeout is 10s"}, ErrTimeoutSum},
		{"sleeps over check timeout", `
- {browser: {sleep: 2.5s}}
- {browser: {sleep: 2.5s}}`, 4 * time.Second,
			[]string{"script[1].browser.sleep: step timeouts exceed the check timeout: steps 0..1 add up to 5s ([0].browser.sleep 2.5s + [1].browser.sleep 2.5s), the check timeout is 4s"}, ErrTimeoutSum},
		{"timeout after a sleep over check timeout", `
- {browser: {sleep: 2s}}
- {browser: {click: "#a"}, timeout: 3s}`, 4 * time.Second,
			[]string{"script[1].timeout: step timeouts exceed the check timeout: steps 0..1 add up to 5s ([0].browser.sleep 2s + [1].timeout 3s), the check timeout is 4s"}, ErrTimeoutSum},
		{"extract on browser step", `[{browser: {navigate: /}, extract: {x: {json: a}}}]`, 0,
			[]string{"script[0].extract: only for http steps"}, nil},
		{"extract two sources", `[{http: {path: /}, extract: {x: {json: a, header: b}}}]`, 0,
			[]string{"script[0].extract.x: more than one of json, regex, header, cookie"}, nil},
		{"bad extract regex", `[{http: {path: /}, extract: {x: {regex: "("}}}]`, 0, nil, nil},
		{"unterminated variable", `[{browser: {click: "${x"}}]`, 0,
			[]string{`script[0].browser.click: unterminated "${"`}, ErrUnterminatedVar},
		{"wait_text without matcher", `[{browser: {wait_text: {selector: "#a"}}}]`, 0,
			[]string{"script[0].browser.wait_text: want one of equals, contains, regex"}, nil},
		{"screenshot false", `[{browser: {screenshot: false}}]`, 0,
			[]string{"script[0].browser.screenshot: must be true"}, nil},
		{"http error from checks", `[{http: {method: "GE T", path: /}}]`, 0, nil, nil},
		{"empty", `[]`, 0, []string{"script: script has no steps"}, ErrEmptyScript},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := decodeScript(tc.src)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			err = units.Prefix("script", sc.ValidateAndSetDefaults(tc.timeout))
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if tc.want == nil {
				if !strings.HasPrefix(err.Error(), "script[0]") {
					t.Errorf("error %q lacks the key path", err)
				}
				return
			}
			got := units.Errors(err)
			var msgs []string
			for _, e := range got {
				msgs = append(msgs, e.Error())
			}
			if strings.Join(msgs, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestDecodeRejectsUnknownKeys(t *testing.T) {
	if _, err := decodeScript(`[{browser: {clik: "#a"}}]`); err == nil || !strings.Contains(err.Error(), "clik") {
		t.Fatalf("unknown key accepted: %v", err)
	}
}

func TestNoBrowserIsUnavailable(t *testing.T) {
	sc := mustScript(t, `[{browser: {navigate: /}}, {always: true, browser: {screenshot: true}}]`)
	r, err := New(sc, Options{Check: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.UsesBrowser() {
		t.Error("UsesBrowser false")
	}
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: "http://127.0.0.1:1"})
	if res.OK || res.Cause != checks.CauseBrowserUnavailable || res.Steps[1].Cause != checks.CauseBrowserUnavailable {
		t.Fatalf("res %+v", res)
	}
}

func TestExpand(t *testing.T) {
	t.Setenv("VIGIL_TEST_SECRET", "hunter2")
	rv := newRunVars()
	rv.vars["token"] = "abc"
	for _, tc := range []struct{ in, want, err string }{
		{"Bearer ${token}", "Bearer abc", ""},
		{"${TOKEN}!", "abc!", ""},
		{"pw=${env:VIGIL_TEST_SECRET}", "pw=hunter2", ""},
		{"js `$${x}`", "js `${x}`", ""},
		{"no vars", "no vars", ""},
		{"${missing}", "", "variable missing is not set"},
		{"${env:VIGIL_TEST_UNSET_XYZ}", "", "environment variable VIGIL_TEST_UNSET_XYZ is not set"},
		{"${a b}", "", "not a variable name"},
		{"${x", "", `unterminated "${"`},
	} {
		got, err := rv.expand(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("expand(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if got := rv.redact("x hunter2 y"); got != "x [redacted] y" {
		t.Errorf("redact: %q", got)
	}
}

func TestResolveURL(t *testing.T) {
	for _, tc := range [][3]string{
		{"http://h:1", "/shop", "http://h:1/shop"},
		{"http://h:1/", "shop", "http://h:1/shop"},
		{"http://h:1/app", "/shop?x=1", "http://h:1/app/shop?x=1"},
		{"http://h:1", "https://other/x", "https://other/x"},
		{"http://h:1", "", "http://h:1"},
	} {
		if got := resolveURL(tc[0], tc[1]); got != tc[2] {
			t.Errorf("resolveURL(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

// TestExpectLiteralDollarBrace: a "${" in expect that names no variable of
// the script is matched as written, so a check for unrendered templates
// loads and fails on the page that shows one.
func TestExpectLiteralDollarBrace(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "Hello Ann, order 42") })
	mux.HandleFunc("/tpl", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "Hello ${user.name}") })
	o := httptest.NewServer(mux)
	defer o.Close()
	src := `
- http: {path: /ok}
  extract: {order: {regex: "order (\\d+)"}}
  expect: {body: {not_contains: ["${", "$${order}"]}}
- name: template
  http: {path: PATH}
  expect: {body: {not_contains: ["${user.name}", "${unknown}"]}}
`
	for _, tc := range []struct {
		path, cause, err string
	}{
		{"/ok", "", ""},
		{"/tpl", "script", `step 1 "template" (http): body contains "${user.name}"`},
	} {
		r, err := New(mustScript(t, strings.Replace(src, "PATH", tc.path, 1)), Options{Check: "c", Timeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("a literal ${ in expect rejected: %v", err)
		}
		res := r.Run(context.Background(), checks.Target{Name: "o", URL: o.URL})
		if res.OK != (tc.cause == "") || string(res.Cause) != tc.cause || !strings.HasPrefix(res.Err, tc.err) {
			t.Errorf("%s: ok %v cause %q err %q; want cause %q err %q", tc.path, res.OK, res.Cause, res.Err, tc.cause, tc.err)
		}
	}
}
