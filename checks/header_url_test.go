package checks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestHeaderURLGotRedacted: a failed assertion on a Location,
// Content-Location or Refresh header shows the URL as vigil shows every
// URL: query values as "…", no fragment (an OAuth access_token), no
// userinfo. The assertion still judges the real value.
func TestHeaderURLGotRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/created":
			w.Header().Set("Location", "/landing?token=IssuedTokFFFF6666zz&auth=Bearer%20x")
			w.WriteHeader(http.StatusCreated)
		case "/oauth":
			w.Header().Set("Location", "/cb#access_token=FragTokPPPP9191&token_type=bearer&state=xyz")
			w.WriteHeader(http.StatusCreated)
		case "/abs":
			w.Header().Set("Location", "https://u:PwInUrl99@example.test/x?sid=SidInQuery77")
			w.WriteHeader(http.StatusCreated)
		case "/content":
			w.Header().Set("Content-Location", "/doc?session=ContentSess55")
		case "/refresh":
			w.Header().Set("Refresh", "0; url='/next?code=RefreshCode44'")
		}
	}))
	defer srv.Close()
	cases := []struct{ path, header, want, got string }{
		{"/created", "Location", "nope", "/landing?auth=…&token=…"},
		{"/oauth", "Location", "~^/nomatch", "/cb"},
		{"/abs", "Location", "nope", "https://example.test/x?sid=…"},
		{"/content", "Content-Location", "nope", "/doc?session=…"},
		{"/refresh", "Refresh", "nope", "0; url='/next?code=…'"},
		// Judged on the real value: a regex on the query passes.
		{"/created", "Location", "~token=IssuedTok", "/landing?auth=…&token=…"},
	}
	for _, tc := range cases {
		t.Run(tc.path+" "+tc.want, func(t *testing.T) {
			h, err := checks.NewHTTP(checks.HTTPSpec{Path: tc.path},
				checks.Expect{Status: checks.StatusList{"200", "201"}, Headers: map[string]string{tc.header: tc.want}}, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r := h.Run(context.Background(), checks.Target{URL: srv.URL})
			var a *checks.AssertionResult
			for i := range r.Assertions {
				if r.Assertions[i].Name == "header "+tc.header {
					a = &r.Assertions[i]
				}
			}
			if a == nil {
				t.Fatalf("no header assertion in %+v", r.Assertions)
			}
			if a.Got != tc.got {
				t.Errorf("got %q, want %q", a.Got, tc.got)
			}
			if pass := tc.want[0] == '~' && tc.path == "/created"; a.OK != pass || r.OK != pass {
				t.Errorf("assertion ok %v, run ok %v (%s), want %v", a.OK, r.OK, r.Err, pass)
			}
		})
	}
}
