package scripts

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// echoOrigin answers every request with a JSON echo of what it got (its
// headers, the posted JSON under "got"), a token, and a session cookie:
// what a login endpoint that fails with a 4xx often sends back.
func echoOrigin(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var got any
		_ = json.Unmarshal(body, &got)
		hs := map[string]string{}
		for k := range r.Header {
			hs[k] = r.Header.Get(k)
		}
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "faf0cadc5e55104d0000feedbeef", Path: "/", HttpOnly: true})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		// Python's json.dumps default: non-ASCII as \uXXXX.
		out, _ := json.Marshal(map[string]any{"headers": hs, "got": got, "token": "14169e4d621c919aa2b29aef23ec83f7", "plain": "visible-value",
			"zecho": r.Header.Get("Authorization")})
		w.Write([]byte(asciiJSON(string(out))))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// asciiJSON writes the non-ASCII runes of s as \uXXXX.
func asciiJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
			continue
		}
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

// A false expr step shows the values it compared, with the run's secrets
// hidden in every form (base64 in a Basic Authorization header, JSON
// escaping of quotes and accents) and values under sensitive keys and
// headers masked, as expect.json masks them: the message goes to the API,
// the status page and alerts. A masked value that holds one of the run's
// secrets (the password echoed back, the jar's session cookie in
// Set-Cookie) is *** without its length or digest.
func TestExprFailureMasksSecrets(t *testing.T) {
	srv := echoOrigin(t)
	cases := []struct {
		name, pw, expr string
		leaks          []string // none may appear in the run's messages
		want           string   // the message still says this
	}{
		{"basic auth header", "S3cretPassw0rd!", `last.json.headers.Authorization == "x"`,
			[]string{base64.StdEncoding.EncodeToString([]byte("alice:S3cretPassw0rd!")), "S3cretPassw0rd"},
			`last.json.headers.Authorization = ***;`},
		{"basic auth in the whole headers", "S3cretPassw0rd!", `last.json.headers == nil`,
			[]string{base64.StdEncoding.EncodeToString([]byte("alice:S3cretPassw0rd!"))},
			`last.json.headers = `},
		{"basic auth echoed under another key", "S3cretPassw0rd!", `last.json.zecho == "x"`,
			[]string{base64.StdEncoding.EncodeToString([]byte("alice:S3cretPassw0rd!")), "YWxpY2U6UzNjcmV0UGFzc3cwcmQ"},
			`last.json.zecho = "Basic `},
		{"quote in an echoed value", `pa"ssword12`, `last.json.got.note == "x"`,
			[]string{`ssword12`}, `last.json.got.note = "`},
		{"accents json-escaped in a body without sensitive keys", "pässwörd12", `last.json.got.note == "x" && last.body contains "zzz"`,
			[]string{`p\u00e4ssw\u00f6rd12`, `\u00f6rd12`, "pässwörd12", "rd12"}, `last.json.got.note = "`},
		{"quote in password", `pa"ssword12`, `last.json.got.password == "x"`,
			[]string{`ssword12`}, `last.json.got.password = ***;`},
		{"accents json-escaped in body", "pässwörd12", `last.body contains "zzz"`,
			[]string{`p\u00e4ssw\u00f6rd12`, `p\\u00e4ssw\\u00f6rd12`, "pässwörd12"}, `last.body = `},
		{"token key", "S3cretPassw0rd!", `last.json.token == "x"`,
			[]string{"14169e4d621c919aa2b29aef23ec83f7"}, `last.json.token = [masked: 32 bytes, sha256:`},
		{"set-cookie header", "S3cretPassw0rd!", `last.headers["set-cookie"] contains "nope"`,
			[]string{"faf0cadc5e55104d0000feedbeef"}, `last.headers["set-cookie"] = ***;`},
		{"extracted session cookie", "S3cretPassw0rd!", `vars.s == "x" && last.json.plain == "y"`,
			[]string{"faf0cadc5e55104d0000feedbeef"}, `last.json.plain = "visible-value"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ODD_PW", tc.pw)
			r := apiScript(t, `
- name: login
  http:
    method: POST
    path: /api/login
    basic_auth: {username: alice, password: "${env:ODD_PW}"}
    json: {user: alice, password: "${env:ODD_PW}", note: "${env:ODD_PW}"}
  expect: {status: 401}
  extract: {s: {cookie: sid}}
- name: check
  expr: '`+tc.expr+`'
`)
			res := r.Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
			if res.OK || len(res.Steps) != 2 || res.Steps[1].OK {
				t.Fatalf("want the expr step to fail: %s %+v", res.Err, res.Steps)
			}
			msgs := []string{res.Err, res.Steps[1].Err}
			for _, a := range append(res.Assertions, res.Steps[1].Assertions...) {
				msgs = append(msgs, a.Got, a.Want)
			}
			all := strings.Join(msgs, "\n")
			for _, leak := range tc.leaks {
				if strings.Contains(all, leak) {
					t.Errorf("message shows %q:\n%s", leak, all)
				}
			}
			t.Log(res.Err)
			if !strings.Contains(res.Err, tc.want) {
				t.Errorf("message lacks %q:\n%s", tc.want, res.Err)
			}
		})
	}
}

// An extracted value marked `secret: true` is hidden like an ${env:…}
// value in every message, also when it comes back encoded; an unmarked
// one under a plain name is shown.
func TestExtractSecretIsHidden(t *testing.T) {
	srv := echoOrigin(t)
	for _, tc := range []struct {
		secret bool
		want   string
	}{
		{true, `vars.code = ***`},
		{false, `vars.code = "visible-value"`},
	} {
		mark := ""
		if tc.secret {
			mark = ", secret: true"
		}
		res := apiScript(t, `
- http: {method: POST, path: /api/login}
  expect: {status: 401}
  extract: {code: {json: plain`+mark+`}}
- expr: 'vars.code == "x"'
`).Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
		if res.OK || !strings.Contains(res.Err, tc.want) {
			t.Errorf("secret %v: %q, want it to contain %q", tc.secret, res.Err, tc.want)
		}
	}
}
