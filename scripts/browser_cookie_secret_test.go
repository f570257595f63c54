package scripts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// A session cookie the browser received in a browser-only flow (an
// HttpOnly Set-Cookie of the login page, never copied into the run's jar
// by an http step) is a secret of the run as a jar cookie is: a page that
// echoes it (a debug page showing the request's Cookie header) fails an
// assert_text whose got, the step's error and the failure note show it as
// ***.
func TestBrowserSessionCookieIsSecret(t *testing.T) {
	b := needChromium(t)
	const sid = "brsess-7f3a9c2e41d8"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/login":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: sid, Path: "/", HttpOnly: true})
			w.Write([]byte(`<!doctype html><title>in</title><p id="x">in</p>`))
		default:
			w.Write([]byte(`<!doctype html><title>debug</title><pre id="c">Cookie: ` + r.Header.Get("Cookie") + `</pre>`))
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	res := browserRunner(t, b, dir, `
- browser: {navigate: /login}
- browser: {navigate: /debug}
- browser: {assert_text: {selector: "#c", equals: "nope"}}
  timeout: 500ms
`, 20*time.Second).Run(context.Background(), checks.Target{Name: "local", URL: srv.URL})
	if res.OK || len(res.Steps) != 3 || res.Steps[1].Err != "" {
		t.Fatalf("want the assert_text step to fail: %s: %s", res.Cause, res.Err)
	}
	all := res.Err
	for _, a := range res.Steps[2].Assertions {
		all += "\n" + a.Got
	}
	for _, a := range res.Artifacts {
		if note, err := os.ReadFile(filepath.Join(ArtifactsDir(dir), strings.TrimSuffix(a, ".png")+".json")); err == nil {
			all += "\n" + string(note)
		}
	}
	if strings.Contains(all, sid) || strings.Contains(all, sid[:12]) {
		t.Errorf("the session cookie shows:\n%s", all)
	}
	if !strings.Contains(res.Err, `Cookie: sid=`) {
		t.Errorf("the message lacks the rest of the text:\n%s", res.Err)
	}
}
