package scripts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// A false expr step that compared a header holding a URL (Location,
// Content-Location, Refresh, Link, or any header whose value is one),
// last.url, a value that is a URL, or JSON holding one shows it as header assertions and
// step URLs show URLs: without userinfo, query values as "…", no
// fragment. The parts that are not secrets (the path, the query's names)
// still show.
func TestExprFailureHidesURLQueryAndUserinfo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/final" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"next":"https://ann:pw-JSONPW1@127.0.0.1/cb?code=JSONCODE9&state=st8","plain":"/p?x=1"}`))
			return
		}
		w.Header().Set("Location", "/landing?auth=AUTHSECRET1&token=TOKSECRET2")
		w.Header().Set("Content-Location", "https://bob:hunter22@127.0.0.1/x?sig=SIGSECRET3#FRAGSECRET4")
		w.Header().Set("Refresh", "5; url=/next?t=REFRESHSECRET5")
		w.Header().Set("Link", `<http://127.0.0.1/p?api=LINKSECRET6>; rel="next"`)
		w.Header().Set("X-Redirect-To", "https://127.0.0.1/next?code=CODESECRET7")
		w.WriteHeader(http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	secrets := []string{"AUTHSECRET1", "TOKSECRET2", "hunter22", "SIGSECRET3", "FRAGSECRET4", "REFRESHSECRET5",
		"LINKSECRET6", "CODESECRET7", "URLCODE8", "JSONCODE9", "pw-JSONPW1", "st8"}
	cases := []struct{ expr, want string }{
		{`last.headers.location == "/landing"`, `last.headers.location = "/landing?auth=…&token=…"`},
		{`last.headers["location"] startsWith "/x"`, `last.headers.location = "/landing?auth=…&token=…"`},
		{`last.headers["content-location"] == "x"`, `last.headers["content-location"] = "https://127.0.0.1/x?sig=…"`},
		{`last.headers.refresh == "x"`, `last.headers.refresh = "5; url=/next?t=…"`},
		{`last.headers.link contains "zzz"`, `last.headers.link = "<http://127.0.0.1/p?api=…>; rel=\"next\""`},
		{`last.headers["x-redirect-to"] == "x"`, `last.headers["x-redirect-to"] = "https://127.0.0.1/next?code=…"`},
		{`"nope" in last.headers`, `"content-location":"https://127.0.0.1/x?sig=…"`},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			r := apiScript(t, `
- http: {path: /login, follow_redirects: false}
  expect: {status: 302}
- expr: '`+tc.expr+`'
`)
			res := r.Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
			checkExprURLMessage(t, res, tc.want, secrets)
		})
	}
	for _, tc := range []struct{ expr, want string }{
		{`last.url == "x"`, `last.url = "` + srv.URL + `/final?code=…"`},
		{`last.json.next == "x"`, `last.json.next = "https://127.0.0.1/cb?code=…&state=…"`},
		{`last.json.plain == "x"`, `last.json.plain = "/p?x=1"`}, // a path, not a URL: as it is
		// JSON shown whole: its string values that are URLs (a presigned
		// download link, a callback) too.
		{`last.json == nil`, `last.json = {"next":"https://127.0.0.1/cb?code=…\u0026state=…","plain":"/p?x=1"}`},
		{`last.body == ""`, `last.body = "{\"next\":\"https://127.0.0.1/cb?code=…&state=…\",`}, // cut at 80 bytes
	} {
		t.Run(tc.expr, func(t *testing.T) {
			r := apiScript(t, `
- http: {path: "/final?code=URLCODE8"}
- expr: '`+tc.expr+`'
`)
			res := r.Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
			checkExprURLMessage(t, res, tc.want, secrets)
		})
	}
}

// checkExprURLMessage checks that res failed in its expr step (the last)
// with a message holding want and none of secrets.
func checkExprURLMessage(t *testing.T, res checks.Result, want string, secrets []string) {
	t.Helper()
	if res.OK || len(res.Steps) != 2 || res.Steps[0].Err != "" || res.Steps[1].OK {
		t.Fatalf("want only the expr step to fail: %s", res.Err)
	}
	all := res.Err + "\n" + res.Steps[1].Err
	for _, a := range res.Steps[1].Assertions {
		all += "\n" + a.Got + "\n" + a.Want
	}
	for _, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("the message shows %q:\n%s", s, all)
		}
	}
	if !strings.Contains(res.Err, want) {
		t.Errorf("the message lacks %s:\n%s", want, res.Err)
	}
}
