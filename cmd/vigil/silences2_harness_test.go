package main

import (
	"net/http"
	"strings"
	"testing"
)

// silenceCaller calls the API of the agent at base: a GET without a
// token, any other method with token as a bearer token and body. It
// returns the status and the body.
func silenceCaller(t *testing.T, base, token string) func(method, path, body string) (int, string) {
	return func(method, path, body string) (int, string) {
		t.Helper()
		if method == http.MethodGet {
			return do(t, method, base+path, "", nil)
		}
		return do(t, method, base+path, "Bearer "+token, strings.NewReader(body))
	}
}
