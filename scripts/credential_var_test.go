package scripts

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// A variable a step sends in a sensitive header (or as basic_auth's
// password) is a credential whatever its name or extractor: its value is a
// secret of the run from its extraction on, so an origin that echoes the
// header does not put the token into the verdict's error or assertions.
func TestVariableSentInSensitiveHeaderIsSecret(t *testing.T) {
	const token = "tok-SUPERSECRET-12345"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			fmt.Fprintf(w, `{"token": %q}`, token)
		default: // echoes the credentials it got
			u, p, _ := r.BasicAuth()
			seen := r.Header.Get("Authorization") + " " + r.Header.Get("X-Api-Key") + " " + u + ":" + p
			w.Header().Set("X-Seen", seen)
			io.WriteString(w, seen)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct{ name, use string }{
		{"authorization", `http: {path: /echo, headers: {Authorization: "Bearer ${bearer}"}}`},
		{"x-api-key", `http: {path: /echo, headers: {X-Api-Key: "${bearer}"}}`},
		{"basic_auth", `http: {path: /echo, basic_auth: {username: u, password: "${bearer}"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := apiScript(t, `
- name: login
  http: {path: /login}
  extract: {bearer: {regex: '"token": ?"([^"]+)"'}}
- name: peek
  always: true
  expr: 'vars.bearer == "nope"'
- name: me
  always: true
  `+tc.use+`
  expect: {headers: {X-Seen: nope}}
`).Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
			if res.OK || len(res.Steps) != 3 || res.Steps[1].Err == "" || res.Steps[2].Err == "" {
				t.Fatalf("want peek and me to fail: %q %+v", res.Err, res.Steps)
			}
			var shown []string
			shown = append(shown, res.Err)
			for _, s := range res.Steps {
				shown = append(shown, s.Err)
				for _, a := range s.Assertions {
					shown = append(shown, a.Got, a.Want)
				}
			}
			for _, s := range res.Assertions {
				shown = append(shown, s.Got, s.Want)
			}
			all := strings.Join(shown, "\n")
			if strings.Contains(all, "SUPERSECRET") {
				t.Errorf("the token sent as a credential is shown:\n%s", all)
			}
			if !strings.Contains(res.Steps[2].Err, "[redacted]") && !strings.Contains(res.Steps[2].Err, "***") {
				t.Errorf("me step's error does not show the redaction: %q", res.Steps[2].Err)
			}
			if !strings.Contains(res.Steps[1].Err, `vars.bearer = "[redacted]"`) && !strings.Contains(res.Steps[1].Err, "vars.bearer = ***") {
				t.Errorf("peek step's error does not show the redaction: %q", res.Steps[1].Err)
			}
		})
	}
}
