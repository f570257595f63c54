package scripts

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

const (
	// jarSid is the session cookie sessionOrigin's /login issues.
	jarSid = "IssuedSidGGGG7777zz"
	// elsewhereSid is the cookie /login-elsewhere sets for another
	// domain, which the jar does not keep, and /leak shows.
	elsewhereSid = "ElsewhereSidHHHH88"
)

// sessionOrigin is a login that sets a session cookie, and pages that
// echo the request's Cookie header: /text as text, /page in a page
// (/page?ref=1 shows the cookie's value as "•" instead).
func sessionOrigin(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: jarSid, Path: "/", HttpOnly: true})
		io.WriteString(w, `{"ok":true}`)
	})
	mux.HandleFunc("POST /login-elsewhere", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "sid2="+elsewhereSid+"; Domain=elsewhere.example; Path=/")
		io.WriteString(w, `{"ok":true}`)
	})
	mux.HandleFunc("GET /leak", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "your session: sid2="+elsewhereSid)
	})
	mux.HandleFunc("POST /prefs", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "consent", Value: "true", Path: "/"})
		io.WriteString(w, `{"ok":true}`)
	})
	mux.HandleFunc("GET /text", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "plain echo: cookie="+r.Header.Get("Cookie"))
	})
	mux.HandleFunc("GET /page", func(w http.ResponseWriter, r *http.Request) {
		c := r.Header.Get("Cookie")
		if r.URL.Query().Get("ref") != "" {
			c = "sid=" + strings.Repeat("•", len(jarSid))
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>p</title><style>body { font: 24px monospace; margin: 20px }</style><p id="c">cookie=%s</p><p id="ok">ok</p>`, c)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestJarCookiesAreSecrets: a session cookie the run's jar receives is a
// secret without an extractor: a later step's echo of the Cookie header
// shows it as [redacted]. The cookie inside an extracted Set-Cookie header
// is hidden too, also when the jar does not keep it.
func TestJarCookiesAreSecrets(t *testing.T) {
	srv := sessionOrigin(t)
	cases := []struct{ name, script, leak string }{
		{"jar", `
- http: {method: POST, path: /login, json: {user: demo}}
- http: {path: /text}
  expect: {body: {regex: "zzz\\d+"}}
`, jarSid},
		{"extracted set-cookie", `
- http: {method: POST, path: /login-elsewhere}
  extract: {ck: {header: Set-Cookie}}
- http: {path: /leak}
  expect: {body: {regex: "zzz\\d+"}}
`, elsewhereSid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := apiScript(t, tc.script).Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
			if res.OK || len(res.Steps) != 2 || len(res.Steps[1].Assertions) < 2 {
				t.Fatalf("want the second step's body regex to fail: %s %+v", res.Err, res.Steps)
			}
			got := res.Steps[1].Assertions[1].Got
			if strings.Contains(got, tc.leak) || strings.Contains(res.Err, tc.leak) {
				t.Errorf("the session cookie shows: got %q, error %q", got, res.Err)
			}
			if !strings.Contains(got, "[redacted]") {
				t.Errorf("got %q, want the cookie as [redacted]", got)
			}
		})
	}
}

// TestShortJarCookieIsNotASecret: a short cookie value (consent=true) is
// not made a secret: it would hide the word "true" in every message of the
// run.
func TestShortJarCookieIsNotASecret(t *testing.T) {
	srv := sessionOrigin(t)
	res := apiScript(t, `
- http: {method: POST, path: /prefs}
- http: {path: /text}
  expect: {body: {regex: "zzz\\d+"}}
`).Run(context.Background(), checks.Target{Name: "t", URL: srv.URL})
	if res.OK || len(res.Steps) != 2 || len(res.Steps[1].Assertions) < 2 {
		t.Fatalf("want the second step's body regex to fail: %s %+v", res.Err, res.Steps)
	}
	if got := res.Steps[1].Assertions[1].Got; !strings.Contains(got, "consent=true") {
		t.Errorf("got %q, want the short cookie shown as it is (consent=true)", got)
	}
}

// TestBrowserScreenshotHidesJarCookie: a session cookie an http step's
// login put in the jar, which the page then shows, is "•" in the failure
// screenshot: pixel for pixel the page with the value written as "•".
func TestBrowserScreenshotHidesJarCookie(t *testing.T) {
	b := needChromium(t)
	srv := sessionOrigin(t)
	run := func(src string) (checks.Result, string) {
		t.Helper()
		dir := t.TempDir()
		res := browserRunner(t, b, dir, src, 20*time.Second).Run(context.Background(), checks.Target{Name: "x", URL: srv.URL})
		if res.OK || len(res.Artifacts) != 1 || !strings.Contains(res.Err, "assert_text") {
			t.Fatalf("%s: %s %v, want the assert_text step to fail with a screenshot", res.Cause, res.Err, res.Artifacts)
		}
		return res, dir
	}
	got, gdir := run(`
- http: {method: POST, path: /login}
- browser: {navigate: /page}
- browser: {assert_text: {selector: "#ok", equals: "nomatch"}}
  timeout: 500ms
`)
	if strings.Contains(got.Err, jarSid) {
		t.Errorf("error shows the session cookie: %s", got.Err)
	}
	ref, rdir := run(`
- browser: {navigate: "/page?ref=1"}
- browser: {assert_text: {selector: "#ok", equals: "nomatch"}}
  timeout: 500ms
`)
	if !samePixels(decodePNG(t, rdir, ref.Artifacts[0]), decodePNG(t, gdir, got.Artifacts[0])) {
		t.Errorf("the failure screenshot is not the page with the session cookie as •")
	}
}
