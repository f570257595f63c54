package checks_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// recorder is an origin that keeps the request URI, Authorization and
// Content-Type headers and body of the last request.
type recorder struct {
	*httptest.Server
	mu                  sync.Mutex
	uri, auth, ct, body string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.uri, r.auth, r.ct, r.body = req.RequestURI, req.Header.Get("Authorization"), req.Header.Get("Content-Type"), string(b)
		r.mu.Unlock()
		if u, p, ok := req.BasicAuth(); ok && (u != "probe" || p != "s&cret:1") {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func runHTTP(t *testing.T, spec checks.HTTPSpec, target string) checks.Result {
	t.Helper()
	return runHTTPWith(t, spec, checks.Expect{}, target)
}

// runHTTPWith runs one http check with spec and e against target (named
// "o") within 5s.
func runHTTPWith(t *testing.T, spec checks.HTTPSpec, e checks.Expect, target string) checks.Result {
	t.Helper()
	h, err := checks.NewHTTP(spec, e, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return h.Run(ctx, checks.Target{Name: "o", URL: target})
}

// http.query and http.form percent-encode names and values; basic_auth
// sends Basic credentials.
func TestHTTPQueryFormBasicAuth(t *testing.T) {
	o := newRecorder(t)
	res := runHTTP(t, checks.HTTPSpec{
		Method:    "POST",
		Path:      "/login?v=1",
		Query:     map[string]string{"q": "a b&c", "sku": "x+y%"},
		Form:      map[string]string{"user": "alice", "password": "a&b+c%d e#f"},
		BasicAuth: &checks.BasicAuth{Username: "probe", Password: "s&cret:1"},
	}, o.URL+"/?key=k")
	if !res.OK {
		t.Fatalf("run failed: %s: %s", res.Cause, res.Err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if want := "/login?v=1&key=k&q=a+b%26c&sku=x%2By%25"; o.uri != want {
		t.Errorf("request URI %q, want %q", o.uri, want)
	}
	if want := "password=a%26b%2Bc%25d+e%23f&user=alice"; o.body != want {
		t.Errorf("body %q, want %q", o.body, want)
	}
	if o.ct != "application/x-www-form-urlencoded" {
		t.Errorf("Content-Type %q", o.ct)
	}
	if want := "Basic cHJvYmU6cyZjcmV0OjE="; o.auth != want {
		t.Errorf("Authorization %q, want %q", o.auth, want)
	}
}

func TestHTTPParamErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct {
		name string
		spec checks.HTTPSpec
		want []string
	}{
		{"form and body", checks.HTTPSpec{Body: "x", Form: map[string]string{"a": "1"}},
			[]string{"http.form: set either body or form, not both"}},
		{"form and json", checks.HTTPSpec{JSON: map[string]any{"a": 1}, Form: map[string]string{"a": "1"}},
			[]string{"http.form: set either json or form, not both"}},
		{"space in the query of path", checks.HTTPSpec{Path: "/s?q=a b"},
			[]string{"http.path: the query contains a space, which cannot be sent in a request line; put the parameters in query: (they are percent-encoded)"}},
		{"non-ASCII in the query of url", checks.HTTPSpec{URL: "http://127.0.0.1/s?q=café"},
			[]string{"http.url: the query contains a non-ASCII character"}},
		{"lone percent", checks.HTTPSpec{Path: "/s?q=100%"},
			[]string{`http.path: the query contains a "%" that does not start a percent-escape (%XX)`}},
		{"basic_auth without username", checks.HTTPSpec{BasicAuth: &checks.BasicAuth{Password: "x"}},
			[]string{"http.basic_auth.username: required"}},
		{"basic_auth username with colon", checks.HTTPSpec{BasicAuth: &checks.BasicAuth{Username: "a:b"}},
			[]string{`http.basic_auth.username: must not contain ":" (RFC 7617)`}},
		{"basic_auth and Authorization", checks.HTTPSpec{BasicAuth: &checks.BasicAuth{Username: "a"}, Headers: map[string]string{"authorization": "Bearer x"}},
			[]string{"http.basic_auth: set either basic_auth or headers.authorization, not both"}},
		{"empty query name", checks.HTTPSpec{Query: map[string]string{"": "x"}},
			[]string{"http.query: empty parameter name"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := checks.NewHTTP(c.spec, checks.Expect{}, checks.Options{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nwant %q", err, w)
				}
			}
		})
	}
	// A percent-escape and a path with a space (escaped by the client) are fine.
	if _, err := checks.NewHTTP(checks.HTTPSpec{Path: "/a b?q=100%25&r=%C3%A9"}, checks.Expect{}, checks.Options{}); err != nil {
		t.Errorf("valid path refused: %v", err)
	}
}
