package checks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestTargetURLRequestedAsWritten: a check without `path` requests its
// target's URL as written (a health endpoint in the URL is not turned into
// "/healthz/"); a path is joined to it as to a base URL.
func TestTargetURLRequestedAsWritten(t *testing.T) {
	var mu sync.Mutex
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.URL.RequestURI()
		mu.Unlock()
	}))
	defer srv.Close()
	for _, tc := range []struct{ target, path, want string }{
		{srv.URL, "", "/"},
		{srv.URL + "/", "", "/"},
		{srv.URL + "/healthz", "", "/healthz"},
		{srv.URL + "/healthz/", "", "/healthz/"},
		{srv.URL + "/healthz?x=1", "", "/healthz?x=1"},
		{srv.URL + "/app", "/status", "/app/status"},
		{srv.URL + "/app/?k=v", "/status?a=b", "/app/status?a=b&k=v"},
	} {
		spec := checks.HTTPSpec{Path: tc.path}
		h, err := checks.NewHTTP(spec, checks.Expect{}, checks.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := h.Run(context.Background(), checks.Target{URL: tc.target})
		mu.Lock()
		g := got
		mu.Unlock()
		if !r.OK || g != tc.want {
			t.Errorf("target %s path %q: requested %q (ok %v, %s), want %q", tc.target, tc.path, g, r.OK, r.Err, tc.want)
		}
	}
}
