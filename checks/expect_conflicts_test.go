package checks_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// Assertions that no answer can pass together are config errors naming
// the key, not checks that fail every run whatever the service does.
func TestExpectConflictsRejected(t *testing.T) {
	no := false
	for _, c := range []struct {
		name string
		e    checks.Expect
		want string
	}{
		{"contains and not_contains",
			checks.Expect{Body: checks.BodyExpect{Contains: []string{"ok"}, NotContains: []string{"ok"}}},
			`expect.body: "ok" is in both contains and not_contains: no answer can pass`},
		{"not_contains part of contains",
			checks.Expect{Body: checks.BodyExpect{Contains: []string{"status: ok"}, NotContains: []string{"ok"}}},
			`expect.body: not_contains "ok" is part of contains "status: ok": no answer can pass`},
		{"regex and not_regex",
			checks.Expect{Body: checks.BodyExpect{Regex: []string{"^ok"}, NotRegex: []string{"^ok"}}},
			`expect.body: "^ok" is in both regex and not_regex: no answer can pass`},
		{"not_regex matches contains",
			checks.Expect{Body: checks.BodyExpect{Contains: []string{"ERROR 42"}, NotRegex: []string{"(?i)error"}}},
			`expect.body: not_regex ~(?i)error matches contains "ERROR 42": no answer can pass`},
		{"two equals on one path",
			checks.Expect{JSON: []checks.JSONExpect{{Path: "count", Equals: 1}, {Path: "count", Equals: 2}}},
			`expect.json[1].equals: "count" cannot equal both 1 (json[0]) and 2: no answer can pass`},
		{"two equals, JSONPath spelling",
			checks.Expect{JSON: []checks.JSONExpect{{Path: "a.b", Equals: "up"}, {Path: "$.a.b", Equals: "down"}}},
			`expect.json[1].equals: "$.a.b" cannot equal both "up" (json[0]) and "down": no answer can pass`},
		{"bounds across entries",
			checks.Expect{JSON: []checks.JSONExpect{{Path: "n", GT: fp(5)}, {Path: "n", LT: fp(3)}}},
			`expect.json[1].lt: no number is > 5 (json[0]) and < 3`},
		{"exists false and equals",
			checks.Expect{JSON: []checks.JSONExpect{{Path: "err", Exists: &no}, {Path: "err", Equals: "x"}}},
			`expect.json[1].equals: "err" must be missing (json[0]) and present here: no answer can pass`},
		{"equals outside its own bound",
			checks.Expect{JSON: []checks.JSONExpect{{Path: "n", Equals: 1, GT: fp(5)}}},
			`expect.json[0].gt: "n" equals 1, which is not > 5: no answer can pass`},
		{"equals a string with a bound",
			checks.Expect{JSON: []checks.JSONExpect{{Path: "n", Equals: "7"}, {Path: "n", GTE: fp(5)}}},
			`expect.json[1].gte: "n" equals "7" (json[0]), not a number, and gte needs one: no answer can pass`},
		{"equals against a regex",
			checks.Expect{JSON: []checks.JSONExpect{{Path: "s", Regex: "^up$"}, {Path: "s", Equals: "down"}}},
			`expect.json[1].equals: "s" equals "down", which does not match ~^up$ (json[0]): no answer can pass`},
		{"header required and refused",
			checks.Expect{Headers: checks.HeaderMatchers{"x-a": "~^v"}, NotHeaders: checks.HeaderMatchers{"X-A": "present"}},
			`expect.not_headers.X-A: "present" refuses every answer that passes headers.X-A: "~^v": no answer can pass`},
		{"header value required and refused",
			checks.Expect{Headers: checks.HeaderMatchers{"X-A": "v1"}, NotHeaders: checks.HeaderMatchers{"X-A": "~^v[0-9]$"}},
			`expect.not_headers.X-A: "~^v[0-9]$" refuses every answer that passes headers.X-A: "v1": no answer can pass`},
		{"empty header value",
			checks.Expect{Headers: checks.HeaderMatchers{"X-A": ""}},
			`expect.headers.X-A: empty value: write present for any value, or "~^$" for an empty one`},
		{"empty exact header value",
			checks.Expect{Headers: checks.HeaderMatchers{"X-A": "="}},
			`expect.headers.X-A: empty value: write present for any value, or "~^$" for an empty one`},
		{"empty not_headers value",
			checks.Expect{NotHeaders: checks.HeaderMatchers{"X-A": ""}},
			`expect.not_headers.X-A: empty value: write present to fail when the header is sent, or "~^$" to fail when it is sent empty`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := checks.NewHTTP(checks.HTTPSpec{}, c.e, checks.Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v\nwant %q", err, c.want)
			}
			if strings.Contains(c.want, "no answer can pass") && !errors.Is(err, checks.ErrConflict) {
				t.Errorf("error %v does not wrap ErrConflict", err)
			}
		})
	}
}

// Assertions that a body can pass together stay accepted, and a body
// passing them does pass.
func TestExpectNoFalseConflicts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Empty", "")
		w.Write([]byte(`{"n":7,"s":"up","a":{"b":"up"},"msg":"all ok"}` + "\n"))
	}))
	defer srv.Close()
	for _, c := range []struct {
		name string
		e    checks.Expect
	}{
		{"different strings", checks.Expect{Body: checks.BodyExpect{Contains: []string{"ok"}, NotContains: []string{"error"}}}},
		// "$" also matches before the final newline for regex, not for not_regex.
		{"same regex ending in $", checks.Expect{Body: checks.BodyExpect{Regex: []string{`\}$`}, NotRegex: []string{`\}$`}}}},
		// An anchored not_regex may match a contains string and not the body.
		{"anchored not_regex", checks.Expect{Body: checks.BodyExpect{Contains: []string{"ok"}, NotRegex: []string{"^ok"}}}},
		{"same equals twice", checks.Expect{JSON: []checks.JSONExpect{{Path: "n", Equals: 7}, {Path: "n", Equals: 7.0}}}},
		{"bounds meeting across entries", checks.Expect{JSON: []checks.JSONExpect{{Path: "n", GTE: fp(7)}, {Path: "n", LTE: fp(7)}, {Path: "n", Equals: 7}}}},
		{"equals within a regex", checks.Expect{JSON: []checks.JSONExpect{{Path: "s", Regex: "^u"}, {Path: "$.s", Equals: "up"}}}},
		{"different paths", checks.Expect{JSON: []checks.JSONExpect{{Path: "s", Equals: "up"}, {Path: "a.b", Equals: "up"}}}},
		{"header required, another value refused", checks.Expect{Headers: checks.HeaderMatchers{"X-Empty": "present"}, NotHeaders: checks.HeaderMatchers{"X-Empty": "~debug"}}},
		{"header absent, not_headers present", checks.Expect{Headers: checks.HeaderMatchers{"X-Nope": "absent"}, NotHeaders: checks.HeaderMatchers{"X-Nope": "present"}}},
		{"empty header value as regex", checks.Expect{Headers: checks.HeaderMatchers{"X-Empty": "~^$"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := runHTTPWith(t, checks.HTTPSpec{}, c.e, srv.URL)
			if !res.OK {
				t.Errorf("cause %s: %s", res.Cause, res.Err)
			}
		})
	}
}
