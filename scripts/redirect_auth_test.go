package scripts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestStepRedirectDropsBasicAuthOffOrigin: a script http step's
// basic_auth reaches only the origin it names, also through the run's
// cookie jar: a redirect to another port of the same host gets no
// Authorization, the jar's cookies for that host still go.
func TestStepRedirectDropsBasicAuthOffOrigin(t *testing.T) {
	var mu sync.Mutex
	var landedAuth, landedCookie string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		landedAuth, landedCookie = r.Header.Get("Authorization"), r.Header.Get("Cookie")
		mu.Unlock()
		w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization"))
	}))
	defer elsewhere.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			// No port in a cookie's scope: the jar sends it to elsewhere too.
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "JarSid-5151", Path: "/"})
		case "/away":
			if !strings.HasPrefix(r.Header.Get("Authorization"), "Basic ") {
				http.Error(w, "no credentials", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, elsewhere.URL+"/landed", http.StatusFound)
		}
	}))
	defer origin.Close()
	res := apiScript(t, `
- http: {method: POST, path: /login}
- http: {path: /away, follow_redirects: true, basic_auth: {username: bob, password: StepRedirPw-77}}
  expect: {headers: {X-Echo-Auth: "~^$"}}
`).Run(context.Background(), checks.Target{Name: "t", URL: origin.URL})
	mu.Lock()
	defer mu.Unlock()
	if landedAuth != "" {
		t.Errorf("the other port got Authorization %q, want none", landedAuth)
	}
	if landedCookie != "sid=JarSid-5151" {
		t.Errorf("the other port got Cookie %q, want the jar's sid", landedCookie)
	}
	if !res.OK {
		t.Errorf("run failed: %s %+v", res.Err, res.Steps)
	}
}
