package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// equals: null (also ~ and an empty value) asserts JSON null through the
// real loader, for vigil check and vigil validate. It used to decode as
// "equals not set" and pass as soon as the path existed.
func TestJSONEqualsNullFromYAML(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"n":1,"error":"boom","none":null}`)
	}))
	t.Cleanup(srv.Close)
	cfg := writeConfig(t, fmt.Sprintf(`
targets: [{name: o, url: %q}]
checks:
  - {name: on-number, targets: [o], expect: {json: [{path: n, equals: null}]}}
  - {name: on-string, targets: [o], expect: {json: [{path: error, equals: ~}]}}
  - {name: on-missing, targets: [o], expect: {json: [{path: missing, equals: }]}}
  - name: on-null
    targets: [o]
    expect:
      json:
        - path: none
          equals:
`, srv.URL))
	if out, code := runCLI(t, "validate", "-c", cfg); code != 0 {
		t.Fatalf("validate: exit %d: %s", code, out)
	}
	out, code := runCLI(t, "check", "--json", "-c", cfg)
	if code != 1 {
		t.Errorf("check: exit %d, want 1:\n%s", code, out)
	}
	got := checksByName(out)
	want := map[string]string{
		"on-number":  "json n: got 1, want null",
		"on-string":  `json error: got "boom", want null`,
		"on-missing": "json missing: got (missing), want null",
		"on-null":    "",
	}
	for name, msg := range want {
		c := got[name]
		if c.OK != (msg == "") || c.Error != msg || (msg != "" && c.Cause != "json") {
			t.Errorf("%s: ok %v, cause %q, error %q; want error %q", name, c.OK, c.Cause, c.Error, msg)
		}
	}
}

// status: true shows true (weak decoding made it "1"); headers written as
// a list says a map is expected. Errors are listed in file order.
func TestExpectDecodeErrors(t *testing.T) {
	wantValidate(t, `
targets: [{name: a, url: "http://127.0.0.1:9"}]
checks:
  - {name: st, targets: [a], expect: {status: true}}
  - {name: st2, targets: [a], expect: {status: [200, false]}}
  - {name: hl, targets: [a], expect: {headers: [X-A]}}
`,
		`checks[0].expect.status: "true": not a status code or range`,
		`checks[1].expect.status[1]: "false": not a status code or range`,
		`checks[2].expect.headers: want a map of header: value (e.g. {X-Cache: present}), got a list`)
}
