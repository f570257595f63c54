package checks_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestRedirectDropsBasicAuthOffOrigin: basic_auth's Authorization reaches
// only the origin the check names. net/http keeps it on a redirect that
// changes only the port, or goes from https to http on the same host (in
// clear text); vigil drops it there, as it drops the configured headers
// (curl since CVE-2022-27776). A redirect back to the same origin keeps
// it.
func TestRedirectDropsBasicAuthOffOrigin(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{} // path → Authorization received
	// elsewhere echoes the Authorization it got in a header and the body,
	// as the origins of the review did.
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
		w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
		io.WriteString(w, "auth="+r.Header.Get("Authorization"))
	}))
	defer elsewhere.Close()
	redirector := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, elsewhere.URL+"/landed"+r.URL.Query().Get("tag"), http.StatusFound)
		case "/stay":
			http.Redirect(w, r, "/here", http.StatusFound)
		default:
			w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
		}
	}
	plain := httptest.NewServer(http.HandlerFunc(redirector))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(redirector))
	defer tlsSrv.Close()
	ca := httptestCAFile(t, tlsSrv)

	for _, tc := range []struct {
		name, url string
		landed    string
	}{
		{"other port", plain.URL + "/away?tag=-port", "/landed-port"},
		{"https to http", tlsSrv.URL + "/away?tag=-downgrade", "/landed-downgrade"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := checks.HTTPSpec{URL: tc.url, FollowRedirects: true,
				BasicAuth: &checks.BasicAuth{Username: "bob", Password: "RedirPw-4242"},
				Headers:   map[string]string{"X-Api-Key": "k1"}}
			spec.TLS.CAFile = ca
			res := runHTTPWith(t, spec, checks.Expect{Headers: checks.HeaderMatchers{"X-Echo-Auth": "~^$"}}, "")
			mu.Lock()
			first, landed := got["/away"], got[tc.landed]
			mu.Unlock()
			if !strings.HasPrefix(first, "Basic ") {
				t.Fatalf("the origin the check names got Authorization %q, want basic_auth's", first)
			}
			if landed != "" {
				t.Errorf("the redirect's other origin got Authorization %q, want none", landed)
			}
			if !res.OK {
				t.Errorf("the other origin echoed Authorization: %s %s %+v", res.Cause, res.Err, res.Assertions)
			}
		})
	}

	// Same origin: kept.
	spec := checks.HTTPSpec{URL: plain.URL + "/stay", FollowRedirects: true,
		BasicAuth: &checks.BasicAuth{Username: "bob", Password: "RedirPw-4242"}}
	if res := runHTTPWith(t, spec, checks.Expect{Headers: checks.HeaderMatchers{"X-Echo-Auth": "~^Basic "}}, ""); !res.OK {
		t.Errorf("same-origin redirect: %s %s %+v", res.Cause, res.Err, res.Assertions)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.HasPrefix(got["/here"], "Basic ") {
		t.Errorf("same-origin redirect got Authorization %q, want basic_auth's", got["/here"])
	}
}
