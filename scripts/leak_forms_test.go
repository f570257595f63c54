package scripts

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// encOrigin answers /enc with the request's Authorization header, without
// a "Bearer " prefix, as its ?f= turns it (plain, upper, lower, b64),
// followed by " ... end": an API error quoting the credential.
func encOrigin(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		switch r.URL.Query().Get("f") {
		case "upper":
			v = strings.ToUpper(v)
		case "lower":
			v = strings.ToLower(v)
		case "b64":
			v = base64.StdEncoding.EncodeToString([]byte(v))
		}
		io.WriteString(w, v+" ... end")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// encGot runs a one-step script whose body regex fails on /enc?f=f with
// the Authorization header auth, and returns the assertion's got.
func encGot(t *testing.T, srv *httptest.Server, f, auth string) string {
	t.Helper()
	res := apiScript(t, `
- http: {path: "/enc?f=`+f+`", headers: {Authorization: "`+auth+`"}}
  expect: {body: {regex: zzzq}}
`).Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
	if res.OK || len(res.Steps) != 1 || len(res.Steps[0].Assertions) < 2 {
		t.Fatalf("want the body regex to fail: %s %+v", res.Err, res.Steps)
	}
	return res.Steps[0].Assertions[1].Got
}

// TestEnvSecretCaseVariants: an ${env:…} secret an origin echoes
// upper- or lower-cased shows as *** in the run result, as a ${NAME}
// value does.
func TestEnvSecretCaseVariants(t *testing.T) {
	srv := encOrigin(t)
	t.Setenv("SCRIPT_PW", "ScriptPwEEEE5555")
	for _, f := range []string{"upper", "lower"} {
		t.Run(f, func(t *testing.T) {
			if got, want := encGot(t, srv, f, "Bearer ${env:SCRIPT_PW}"), `no match in "*** ... end"`; got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

// TestEnvHeaderValueCredentials: an ${env:…} variable that holds a whole
// header value ("Bearer <token>") is hidden by its token too, as written
// and base64-encoded, when the origin echoes the token without its scheme.
func TestEnvHeaderValueCredentials(t *testing.T) {
	srv := encOrigin(t)
	t.Setenv("AUTH_HEADER", "Bearer TokAfterBearerOOOO8181")
	for _, f := range []string{"plain", "b64"} {
		t.Run(f, func(t *testing.T) {
			if got, want := encGot(t, srv, f, "${env:AUTH_HEADER}"), `no match in "*** ... end"`; got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}
