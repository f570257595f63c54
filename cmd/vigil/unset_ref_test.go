package main

import (
	"os"
	"strings"
	"testing"
)

// TestUnsetReferenceInCredentialShown: a credential written as a
// reference to an unset variable (an Authorization header, a Cookie, a
// basic_auth password) is left as written while the file is validated on;
// the reference is no secret (its value would be), so the error names it,
// as it does for every other key, instead of showing "***".
func TestUnsetReferenceInCredentialShown(t *testing.T) {
	for _, name := range []string{"API_TOKEN", "SID_COOKIE", "BOB_PW"} {
		if v, ok := os.LookupEnv(name); ok {
			t.Setenv(name, v)
			os.Unsetenv(name)
		}
	}
	path := writeConfig(t, `checks:
  - name: api
    url: http://127.0.0.1:9/x
    http: {headers: {Authorization: "Bearer ${API_TOKEN}"}}
  - name: web
    url: http://127.0.0.1:9/y
    http:
      headers: {Cookie: "sid=${SID_COOKIE}; theme=darkmode"}
      basic_auth: {username: bob, password: "${BOB_PW}"}
`)
	out, code := runCLI(t, "validate", "-c", path)
	want := path + `:4:22: checks[0].http.headers.Authorization: ${API_TOKEN} is not set in the environment (use ${API_TOKEN:-default} for an optional value)
` + path + `:8:17: checks[1].http.headers.Cookie: ${SID_COOKIE} is not set in the environment (use ${SID_COOKIE:-default} for an optional value)
` + path + `:9:35: checks[1].http.basic_auth.password: ${BOB_PW} is not set in the environment (use ${BOB_PW:-default} for an optional value)
`
	if code != 2 || out != want {
		t.Fatalf("exit %d, output:\n%s\nwant exit 2 and:\n%s", code, out, want)
	}
	if strings.Contains(out, "***") {
		t.Fatalf("a reference was redacted:\n%s", out)
	}
}
