package checks_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// body.not_regex fails a body that matches, quoting the match; a body cut
// at body_limit with no match in the part read cannot show absence.
func TestBodyNotRegex(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/err":
			w.Write([]byte("status: ERROR: db down\n"))
		case "/ok":
			w.Write([]byte("status: ok\n"))
		case "/long":
			w.Write([]byte(strings.Repeat("a", 2048) + " error"))
		case "/secret":
			w.Write([]byte(`{"token":"error-abc","status":"ok"}`))
		}
	}))
	defer srv.Close()
	for _, c := range []struct {
		name, path string
		limit      int64
		ok         bool
		err, got   string
	}{
		{"match fails", "/err", 0, false, `body matches ~(?i)error: "ERROR" at byte 8`, `matched "ERROR" at byte 8`},
		{"no match passes", "/ok", 0, true, "", "no match"},
		{"cut body without a match", "/long", 1024, false,
			"body not_regex ~(?i)error cannot be checked: body over body_limit 1KiB (1024 bytes read), so the absence of a match cannot be shown", ""},
		{"match in a masked JSON body", "/secret", 0, false,
			"body matches ~(?i)error: 5 bytes at byte 10 (not shown: the JSON body has sensitive keys)", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := checks.HTTPSpec{Path: c.path}
			if c.limit > 0 {
				spec.BodyLimit = 1024
			}
			res := runHTTPWith(t, spec, checks.Expect{Body: checks.BodyExpect{NotRegex: []string{"(?i)error"}}}, srv.URL)
			if res.OK != c.ok || (!c.ok && (res.Cause != checks.CauseBody || res.Err != c.err)) {
				t.Errorf("ok %v cause %s err %q\nwant ok %v err %q", res.OK, res.Cause, res.Err, c.ok, c.err)
			}
			var a *checks.AssertionResult
			for i := range res.Assertions {
				if res.Assertions[i].Name == "body not_regex ~(?i)error" {
					a = &res.Assertions[i]
				}
			}
			if a == nil || a.OK != c.ok || a.Want != "no match" || (c.got != "" && a.Got != c.got) {
				t.Errorf("assertion %+v, want got %q", a, c.got)
			}
			if strings.Contains(res.Err, "error-abc") {
				t.Errorf("error shows a masked value: %q", res.Err)
			}
		})
	}
}

func TestBodyNotRegexConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		expect checks.Expect
		tcp    bool
		want   string
	}{
		{"empty", checks.Expect{Body: checks.BodyExpect{NotRegex: []string{""}}}, false, "expect.body.not_regex[0]: empty string (it matches every body)"},
		{"lookahead", checks.Expect{Body: checks.BodyExpect{NotRegex: []string{"ok", "^(?!x)"}}}, false, `expect.body.not_regex[1]: bad regex "^(?!x)"`},
		{"tcp", checks.Expect{Body: checks.BodyExpect{NotRegex: []string{"x"}}}, true, "expect.body: tcp checks do not use it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.tcp {
				_, err = checks.NewTCP(checks.TCPSpec{}, c.expect, checks.Options{})
			} else {
				_, err = checks.NewHTTP(checks.HTTPSpec{}, c.expect, checks.Options{})
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant %q", err, c.want)
			}
		})
	}
}
