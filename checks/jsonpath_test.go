package checks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/vigil-synthetics/vigil/checks"
)

// compileJSON validates an expect block holding one json assertion.
func compileJSON(path string, j checks.JSONExpect) error {
	j.Path = path
	e := checks.Expect{JSON: []checks.JSONExpect{{Path: "ok"}, j}}
	return e.ValidateAndSetDefaults()
}

// A malformed gjson path is a config error naming the key, the path and
// the offset of the problem. Before, gjson quietly selected nothing, so
// `exists: false` passed on a body that held the value.
func TestJSONPathSyntaxErrors(t *testing.T) {
	f := false
	cases := []struct{ path, want string }{
		{`services.#(status=="down"`, `json[1].path: "services.#(status==\"down\"": unclosed "(" at 10`},
		{`a.b.#(==99`, `json[1].path: "a.b.#(==99": unclosed "(" at 5`},
		{`a.#(b=="x)`, `json[1].path: "a.#(b==\"x)": unclosed quote in query "#(b==\"x)" at 7`},
		{`a.#(b==)`, `json[1].path: "a.#(b==)": no value after "==" in query (write "" for the empty string) at 7`},
		{`{a,b`, `json[1].path: "{a,b": unclosed "{" at 0`},
		{`[a,b`, `json[1].path: "[a,b": unclosed "[" at 0`},
		{`a.b]`, `json[1].path: "a.b]": unbalanced "]" (no opening "[") at 3`},
		{`a)`, `json[1].path: "a)": unbalanced ")" (no opening "(") at 1`},
		{`a"b`, `json[1].path: "a\"b": unclosed quote at 1`},
		{`a\`, `json[1].path: "a\\": dangling escape "\" (a literal backslash is \\) at 1`},
		{`a.`, `json[1].path: "a.": empty key (the path ends in ".") at 2`},
		{`a..b`, `json[1].path: "a..b": empty key between ".." at 2`},
		{`items|@revers`, `json[1].path: "items|@revers": unknown modifier "@revers"`},
		{`@pretty:{"sortKeys":tru}`, `json[1].path: "@pretty:{\"sortKeys\":tru}": modifier "@pretty": argument {"sortKeys":tru} is not JSON at 8`},
		{`a.b[1]`, `json[1].path: "a.b[1]": unexpected "[" after key "b" at 3: gjson has no [index] or ['key']; write "a.b.1"`},
		{`$.a[*]`, `json[1].path: "$.a[*]": [*] at 3 has no gjson form`},
		{`$..a`, `json[1].path: "$..a": recursive descent ".." at 1 has no gjson form`},
		{`$.a[-1]`, `json[1].path: "$.a[-1]": negative index [-1] at 3`},
		{` `, `json[1].path: empty JSON path`},
		{`..`, `json[1].path: "..": empty path after ".." at 2`},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			err := compileJSON(c.path, checks.JSONExpect{Exists: &f})
			if err == nil {
				t.Fatalf("%q validated; want %s", c.path, c.want)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error\n got: %s\nwant: %s…", err, c.want)
			}
			if !errors.Is(err, checks.ErrBadValue) {
				t.Errorf("error does not wrap ErrBadValue: %v", err)
			}
		})
	}
}

// jsonOrigin serves body as application/json on every path.
func jsonOrigin(t *testing.T, body string) checks.Target {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return checks.Target{Name: "o", URL: srv.URL}
}

func runJSON(t *testing.T, tgt checks.Target, j checks.JSONExpect) checks.Result {
	t.Helper()
	h, err := checks.NewHTTP(checks.HTTPSpec{Path: "/h.json"}, checks.Expect{JSON: []checks.JSONExpect{j}}, checks.Options{})
	if err != nil {
		t.Fatalf("path %q: %v", j.Path, err)
	}
	defer h.Close()
	return h.Run(context.Background(), tgt)
}

// Valid paths still select what they did, and JSONPath's bracket forms
// after a leading "$" select what gjson's dotted forms do ($.a.b[1] used
// to report "(missing)").
func TestJSONPathSelects(t *testing.T) {
	tgt := jsonOrigin(t, `{"services":[{"name":"db","status":"down"},{"name":"web","status":"up"}],"a":{"b":[1,2,3],"c.d":"dot"}}`)
	f := false
	cases := []struct {
		name, path string
		equals     any
		exists     *bool
		ok         bool
		got        string
	}{
		{name: "query finds the down service", path: `services.#(status=="down")`, exists: &f, ok: false, got: `{"name":"db","status":"down"}`},
		{name: "query name", path: `services.#(status=="down").name`, equals: "db", ok: true, got: `"db"`},
		{name: "jsonpath index", path: `$.a.b[1]`, equals: 2, ok: true, got: "2"},
		{name: "jsonpath quoted keys", path: `$['a']["b"][2]`, equals: 3, ok: true, got: "3"},
		{name: "jsonpath key with a dot", path: `$.a['c.d']`, equals: "dot", ok: true, got: `"dot"`},
		{name: "gjson index", path: `a.b.1`, equals: 2, ok: true, got: "2"},
		{name: "jsonpath root", path: `$[services][1].name`, ok: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := checks.JSONExpect{Path: c.path, Equals: c.equals, Exists: c.exists}
			if c.got == "" { // not a path: must not compile
				if err := compileJSON(c.path, j); err == nil {
					t.Fatalf("%q validated", c.path)
				}
				return
			}
			res := runJSON(t, tgt, j)
			if res.OK != c.ok {
				t.Fatalf("ok = %v, want %v (cause %s: %s)", res.OK, c.ok, res.Cause, res.Err)
			}
			if a := res.Assertions; len(a) != 2 || a[1].Got != c.got {
				t.Errorf("assertions %+v, want got %s", res.Assertions, c.got)
			}
			if !c.ok && res.Cause != checks.CauseJSON {
				t.Errorf("cause %s, want json", res.Cause)
			}
		})
	}
}

// Every JSON path the README and the examples show validates, so the
// documentation never offers a path the validator rejects.
func TestJSONPathDocumentedExamples(t *testing.T) {
	var paths []string
	for _, file := range []string{"../README.md", "../examples/quickstart.yaml", "../examples/scripts/api-transaction.yaml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			// The expect table row: every `code` span in it is a path
			// example.
			if strings.HasPrefix(line, "| `json[].path`") {
				cols := strings.Split(line, "|")
				for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cols[len(cols)-2], -1) {
					paths = append(paths, m[1])
				}
			}
			// Paths in YAML: {path: x, ...} inside json: lists, and
			// "- path:" lines of a json list; extract: {json: x}.
			for _, m := range regexp.MustCompile(`json: \[\{path: ('[^']*'|"[^"]*"|[^,}]+)`).FindAllStringSubmatch(line, -1) {
				paths = append(paths, strings.Trim(m[1], `'"`))
			}
			for _, m := range regexp.MustCompile(`\{json: ('[^']*'|"[^"]*"|[^,}]+)\}`).FindAllStringSubmatch(line, -1) {
				paths = append(paths, strings.Trim(m[1], `'"`))
			}
			for _, m := range regexp.MustCompile("JSON path[^`]*`([^`]+)`").FindAllStringSubmatch(line, -1) {
				paths = append(paths, m[1])
			}
		}
	}
	if len(paths) < 5 {
		t.Fatalf("found only %d documented paths (%q): the README layout changed", len(paths), paths)
	}
	for _, p := range paths {
		if strings.Contains(p, "…") {
			continue
		}
		if err := compileJSON(p, checks.JSONExpect{}); err != nil && !strings.HasPrefix(p, "$.a[") && !strings.HasPrefix(p, "a.b[") {
			t.Errorf("documented path %q does not validate: %v", p, err)
		}
	}
	t.Logf("%d documented paths: %q", len(paths), paths)
}

// Every path the validator accepts is safe to hand to gjson.
func FuzzJSONPath(f *testing.F) {
	for _, s := range []string{`services.#(status=="down")`, `a.b.#(==99`, `$.a.b[1]`, `$['a']`, `{a,b:c}`, `@pretty:{"x":1}`, `a\.b`, `..0`, `!true`, `a.#(b%"x*")#.c`} {
		f.Add(s)
	}
	doc := []byte(`{"a":{"b":[1,2,{"c":"d"}]},"services":[{"status":"down"}]}`)
	f.Fuzz(func(t *testing.T, path string) {
		if err := compileJSON(path, checks.JSONExpect{}); err != nil {
			return
		}
		_ = gjson.GetBytes(doc, strings.TrimPrefix(path, "$."))
	})
}
