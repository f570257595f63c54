package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCheckHidesLiteralRequestCredentials: vigil check against an origin
// that echoes the request shows a credential written as it is in a query
// string, a query, json or form field of a sensitive name as ***, in the
// text and JSON output alike.
func TestCheckHidesLiteralRequestCredentials(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<12))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"uri": r.URL.RequestURI(), "body": string(b)})
	}))
	defer origin.Close()
	cfg := writeConfig(t, fmt.Sprintf(`targets: [{name: o, url: %q}]
checks:
  - name: path
    targets: [o]
    http: {path: "/json?access_token=QueryTokLit3333", query: {api_key: LiteralQueryKey1234, x: "1"}}
    expect: {json: [{path: uri, equals: nothing}]}
  - name: json
    targets: [o]
    http: {method: POST, json: {password: LiteralJsonPw5678, client_secret: LiteralClientSecret99, user: {name: bob}}}
    expect: {json: [{path: body, equals: nothing}]}
  - name: form
    targets: [o]
    http: {method: POST, form: {password: LiteralFormPw4321, user: bob}}
    expect: {json: [{path: body, equals: nothing}]}
`, origin.URL))
	for _, args := range [][]string{{"check", "-c", cfg}, {"check", "-c", cfg, "--json"}} {
		out, code := runCLI(t, args...)
		if code == 0 || !strings.Contains(out, "***") || !strings.Contains(out, "x=1") {
			t.Errorf("%v: exit %d, want failures showing the echoes with the credentials as ***:\n%s", args, code, out)
		}
		for _, s := range []string{"QueryTokLit3333", "LiteralQueryKey1234", "LiteralJsonPw5678", "LiteralClientSecret99", "LiteralFormPw4321"} {
			if strings.Contains(out, s) {
				t.Errorf("%v: the output shows %q:\n%s", args, s, out)
			}
		}
	}
}
