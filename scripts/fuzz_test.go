package scripts

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// FuzzScript decodes arbitrary YAML as a script and validates it: neither
// may panic, and a script that validates must compile with New.
func FuzzScript(f *testing.F) {
	for _, s := range []string{
		`[{http: {path: /login, method: POST, json: {user: "${env:U}"}}, extract: {token: {json: token}}}, {http: {path: /me, headers: {authorization: "Bearer ${token}"}}}]`,
		`[{browser: {navigate: /shop}}, {browser: {click: "#a"}, timeout: 2s}, {always: true, browser: {screenshot: true}}]`,
		`[{expr: 'vars.x == "1"'}]`,
		`[{browser: {wait_text: {selector: "#c", equals: "1", regex: "^\\d$"}}}]`,
		`[{browser: {eval: {js: "1+1", equals: {a: [1, 2]}}}}]`,
		`[{browser: {type: {selector: "${", text: "$${x}"}}}]`,
		`[{name: x, http: {path: /}, expect: {status: "2xx"}, extract: {A: {regex: "("}}}]`,
		`[{browser: {sleep: -1s}}, {browser: {max_failed_requests: -3}}]`,
		`{}`,
		`[1, "two", null]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		sc, err := decodeScript(src)
		if err != nil {
			return
		}
		err = sc.ValidateAndSetDefaults(30 * time.Second)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		for i := range sc {
			if sc[i].Name == "" || sc[i].kind == "" {
				t.Fatalf("step %d validated without name/kind", i)
			}
		}
		_, err = New(sc, Options{Check: "fuzz", Timeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("validated script does not compile: %v", err)
		}
	})
}

// FuzzExpand checks that variable expansion never panics and that a string
// without "${" is returned unchanged.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "${a}", "$${a}", "${env:HOME}", "${", "}${}", "${a b}", "$$$${x}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rv := newRunVars()
		rv.vars["a"] = "A"
		out, err := rv.expand(s)
		if !strings.Contains(s, "${") && (err != nil || out != s) {
			t.Fatalf("expand(%q) = %q, %v", s, out, err)
		}
		_, _ = parseRefs(s)
	})
}

// FuzzCheckSelector: the load-time selector check never panics, and every
// rejection is an ErrInvalidSelector that quotes the selector.
func FuzzCheckSelector(f *testing.F) {
	for _, s := range validSelectors {
		f.Add(s)
	}
	for _, tc := range invalidSelectors {
		f.Add(tc.sel)
	}
	f.Add(`a\`)
	f.Add(`"`)
	f.Fuzz(func(t *testing.T, sel string) {
		err := checkSelector(sel)
		if err != nil && (!errors.Is(err, ErrInvalidSelector) || !strings.Contains(err.Error(), fmt.Sprintf("%q", sel))) {
			t.Fatalf("checkSelector(%q) = %v", sel, err)
		}
	})
}
