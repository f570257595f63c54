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

// appOrigin is a small web app as a Checkly user would monitor it: a login
// form whose POST takes a while before it redirects to /dashboard and sets
// an HttpOnly session cookie, an API that needs that cookie, a page that
// renders its greeting from a slow fetch(), a page with a slow third-party
// script, and a page with several elements of one class.
func appOrigin(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	html := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	}
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<!doctype html><title>Log in</title>
<form method="post" action="/login"><input id="u" name="u"><button type="submit">Log in</button></form>`)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		// The server takes its time: the click returns long before the
		// new page arrives.
		time.Sleep(400 * time.Millisecond)
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "sess-" + r.FormValue("u"), Path: "/", HttpOnly: true})
		http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /dashboard", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<!doctype html><title>Dashboard</title><h1 id="welcome">Welcome</h1>`)
	})
	mux.HandleFunc("GET /go", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/dashboard", http.StatusFound)
	})
	mux.HandleFunc("GET /logout", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "sid", Path: "/", MaxAge: -1})
		html(w, `<!doctype html><title>Bye</title><p id="bye">Logged out</p>`)
	})
	mux.HandleFunc("GET /api/me", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("sid")
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"no session"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"sid":%q}`, c.Value)
	})
	mux.HandleFunc("GET /fetched", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<!doctype html><title>Loading</title><div id="greeting">Loading…</div>
<script>fetch('/api/greeting').then(r => r.text()).then(t => {
  document.getElementById('greeting').textContent = t; document.title = 'Ready'; });</script>`)
	})
	mux.HandleFunc("GET /api/greeting", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(500 * time.Millisecond)
		io.WriteString(w, "Welcome back")
	})
	mux.HandleFunc("GET /slow3p", func(w http.ResponseWriter, r *http.Request) {
		// A tag manager's script: async, or (?sync) one that blocks the
		// parser.
		async := " async"
		if r.URL.Query().Has("sync") {
			async = ""
		}
		html(w, `<!doctype html><title>Slow tag</title><h1 id="main">Main content</h1>
<script`+async+` src="/thirdparty.js"></script><p id="after">after</p>`)
	})
	mux.HandleFunc("GET /thirdparty.js", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(4 * time.Second):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, "window.tag = 1;")
	})
	mux.HandleFunc("GET /items", func(w http.ResponseWriter, r *http.Request) {
		html(w, `<!doctype html><title>Items</title><div class="item">a</div><div class="item">b</div><div class="item">c</div>
<div id="hid" style="display:none">hidden</div>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserAssertionsRetryUntilTheyHold: assert_url and assert_title right
// after a click that starts a navigation, and assert_text on text that a
// fetch() renders after the load event, pass once the page gets there,
// as Playwright's web-first assertions do; they no longer pass or fail by
// timing.
func TestBrowserAssertionsRetryUntilTheyHold(t *testing.T) {
	b := needChromium(t)
	o := appOrigin(t)
	for _, tc := range []struct{ name, script string }{
		{"url after click", `
- browser: {navigate: /login}
- browser: {fill: {selector: "#u", text: alice}}
- browser: {click: 'button[type=submit]'}
- browser: {assert_url: "~/dashboard$"}
- browser: {assert_title: Dashboard}`},
		{"title after click", `
- browser: {navigate: /login}
- browser: {click: 'button[type=submit]'}
- browser: {assert_title: "~^Dash"}`},
		{"text from fetch", `
- browser: {navigate: /fetched}
- browser: {assert_text: {selector: "#greeting", contains: "Welcome"}}
- browser: {assert_title: Ready}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := browserRunner(t, b, "", tc.script, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
			if !res.OK {
				t.Fatalf("%s: %s", res.Cause, res.Err)
			}
		})
	}
}

// TestBrowserAssertionFailuresSayWhatWasSeen: an assertion that never holds
// fails with cause script at the end of its step's timeout, with the last
// value seen and how long it waited; a regex is shown quoted, without
// delimiters doubled by a pattern that starts with a slash.
func TestBrowserAssertionFailuresSayWhatWasSeen(t *testing.T) {
	b := needChromium(t)
	o := appOrigin(t)
	for _, tc := range []struct{ name, step, err, got string }{
		{"url regex", `{assert_url: "~/nowhere$"}`,
			`step 1 "check" (browser.assert_url): assert_url: got "` + o.URL + `/dashboard", want matches regex "/nowhere$", within 700ms`, o.URL + "/dashboard"},
		{"url exact", `{assert_url: /other}`,
			`step 1 "check" (browser.assert_url): assert_url: got "` + o.URL + `/dashboard", want "` + o.URL + `/other", within 700ms`, o.URL + "/dashboard"},
		{"title", `{assert_title: Home}`,
			`step 1 "check" (browser.assert_title): assert_title: got "Dashboard", want "Home", within 700ms`, "Dashboard"},
		{"text", `{assert_text: {selector: "#welcome", equals: "Bye"}}`,
			`step 1 "check" (browser.assert_text): assert_text #welcome: text "Welcome", want equals "Bye", within 700ms`, "Welcome"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := browserRunner(t, b, "", `
- browser: {navigate: /dashboard}
- name: check
  timeout: 700ms
  browser: `+tc.step, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
			if res.OK || res.Cause != checks.CauseScript || res.Err != tc.err {
				t.Fatalf("got %s: %q\nwant script: %q", res.Cause, res.Err, tc.err)
			}
			s := res.Steps[1]
			if s.Duration < 650*time.Millisecond {
				t.Errorf("the assertion gave up after %s, before its 700ms", s.Duration)
			}
			if len(s.Assertions) != 1 || s.Assertions[0].OK || s.Assertions[0].Got != tc.got {
				t.Errorf("assertions %+v, want one failed with got %q", s.Assertions, tc.got)
			}
		})
	}
}

// TestBrowserCookiesReachLaterHTTPSteps: a session cookie the page got in
// a browser login (HttpOnly, so no script can read it) is sent by the http
// steps after it, so a UI login can be followed by API calls; once a
// logout in the page deleted it, they no longer send it.
func TestBrowserCookiesReachLaterHTTPSteps(t *testing.T) {
	b := needChromium(t)
	o := appOrigin(t)
	r := browserRunner(t, b, "", `
- browser: {navigate: /login}
- browser: {fill: {selector: "#u", text: alice}}
- browser: {click: 'button[type=submit]'}
- browser: {wait_visible: "#welcome"}
- name: api
  http: {path: /api/me}
  expect: {status: 200, json: [{path: sid, equals: sess-alice}]}
- browser: {navigate: /logout}
- name: api after logout
  http: {path: /api/me}
  expect: {status: 401}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
	if !res.OK {
		t.Fatalf("%s: %s", res.Cause, res.Err)
	}
}

// TestBrowserNavigateWaitUntil: navigate: {url, wait_until:
// domcontentloaded} passes on a page whose async third-party script never
// comes in time, and wait_until: commit on one whose script blocks the
// parser; with the load event (the default) the step fails with cause
// timeout, keeping the document's status and TTFB and naming the request
// still pending.
func TestBrowserNavigateWaitUntil(t *testing.T) {
	b := needChromium(t)
	o := appOrigin(t)
	for _, tc := range []struct{ name, nav string }{
		{"domcontentloaded", `{url: /slow3p, wait_until: domcontentloaded}`},
		{"commit", `{url: "/slow3p?sync", wait_until: commit}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The first step opens the run's tab, which on a loaded
			// machine can take most of a second: the navigation timed is
			// the second step's.
			r := browserRunner(t, b, "", `
- browser: {navigate: /items}
- browser: {navigate: `+tc.nav+`}
  timeout: 2s
- browser: {assert_text: {selector: "#main", equals: "Main content"}}
  timeout: 1s
`, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
			if !res.OK {
				t.Fatalf("%s: %s", res.Cause, res.Err)
			}
			if s := res.Steps[1]; s.StatusCode != 200 || s.TTFB <= 0 || s.Duration > 1500*time.Millisecond {
				t.Errorf("navigate step %+v: want status 200, a TTFB, well within 2s", s)
			}
		})
	}

	r := browserRunner(t, b, "", `
- name: open
  browser: {navigate: /slow3p}
  timeout: 1s
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
	want := `step 0 "open" (browser.navigate): navigate ` + o.URL + `/slow3p: document status 200 (ttfb `
	if res.OK || res.Cause != checks.CauseTimeout || !strings.HasPrefix(res.Err, want) ||
		!strings.Contains(res.Err, "no load event within 1s; still loading: "+o.URL+"/thirdparty.js") {
		t.Fatalf("load: %s: %q\nwant timeout: %q… no load event within 1s; still loading: %s/thirdparty.js", res.Cause, res.Err, want, o.URL)
	}
	if s := res.Steps[0]; s.StatusCode != 200 || s.TTFB <= 0 || res.StatusCode != 200 || res.Phases.TTFB <= 0 {
		t.Errorf("step %+v, result status %d ttfb %s: want the document's status 200 and its TTFB", s, res.StatusCode, res.Phases.TTFB)
	}
}

// TestNavigateConfig: the string form and the mapping form of navigate,
// and the errors of a bad mapping, at their keys.
func TestNavigateConfig(t *testing.T) {
	for _, tc := range []struct{ src, err string }{
		{`[{browser: {navigate: /a}}]`, ""},
		{`[{browser: {navigate: {url: /a}}}]`, ""},
		{`[{browser: {navigate: {url: /a, wait_until: load}}}]`, ""},
		{`[{browser: {navigate: {url: /a, wait_until: commit}}}]`, ""},
		{`[{browser: {navigate: {url: /a, wait_until: DOMContentLoaded}}}]`, ""},
		{`[{browser: {navigate: {url: /a, wait_until: networkidle}}}]`, `script[0].browser.navigate.wait_until: "networkidle": want load, domcontentloaded or commit`},
		{`[{browser: {navigate: {wait_until: load}}}]`, `script[0].browser.navigate.url: URL is empty`},
		{`[{browser: {navigate: {url: /a, timeout: 3s}}}]`, `script[0].browser.navigate.timeout: unknown key (want url, wait_until)`},
		{`[{browser: {navigate: [/a]}}]`, `script[0].browser.navigate: want a URL or a mapping {url, wait_until}, got a list`},
		{`[{browser: {navigate: {url: "file:///etc/passwd"}}}]`, `script[0].browser.navigate.url: scheme file: ` + ErrNavigateScheme.Error()},
	} {
		_, err := New(mustScript(t, tc.src), Options{Timeout: 10 * time.Second})
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%s: error %v, want %s", tc.src, err, tc.err)
		}
	}
}

// TestBrowserWaitVisibleNamesAMissingElement: wait_visible on a selector
// that matches nothing says so, as click does, rather than "not visible";
// an element that is there but hidden is "not visible".
func TestBrowserWaitVisibleNamesAMissingElement(t *testing.T) {
	b := needChromium(t)
	o := appOrigin(t)
	for _, tc := range []struct{ step, err string }{
		{`{wait_visible: "#doesnotexist"}`, `step 1 "wait" (browser.wait_visible): wait_visible #doesnotexist: no element within 500ms`},
		{`{wait_visible: "#hid"}`, `step 1 "wait" (browser.wait_visible): wait_visible #hid: not visible within 500ms`},
	} {
		r := browserRunner(t, b, "", `
- browser: {navigate: /items}
- name: wait
  timeout: 500ms
  browser: `+tc.step, 20*time.Second)
		res := r.Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
		if res.OK || res.Cause != checks.CauseScript || res.Err != tc.err {
			t.Errorf("got %s: %q\nwant script: %q", res.Cause, res.Err, tc.err)
		}
	}
}

// TestBrowserFailedNavigationScreenshot: after a navigation that failed at
// once (connection refused, a certificate of an unknown authority), the
// failure screenshot shows Chromium's error page, and the error does not
// claim a wait that never happened ("the tab did not answer within 2s").
func TestBrowserFailedNavigationScreenshot(t *testing.T) {
	b := needChromium(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(tlsSrv.Close)
	for _, tc := range []struct {
		name, url, text string
		cause           checks.Cause
	}{
		{"refused", deadURL, "net::ERR_CONNECTION_REFUSED", checks.CauseConnectRefused},
		{"unknown CA", tlsSrv.URL, "net::ERR_CERT_AUTHORITY_INVALID", checks.CauseScript},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := browserRunner(t, b, t.TempDir(), `[{name: open, browser: {navigate: /}}]`, 8*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "app", URL: tc.url})
			if want := `step 0 "open" (browser.navigate): navigate ` + tc.url + `/: ` + tc.text; res.Cause != tc.cause || res.Err != want {
				t.Fatalf("got %s: %q\nwant %s: %q", res.Cause, res.Err, tc.cause, want)
			}
			if len(res.Artifacts) != 1 {
				t.Errorf("artifacts %v, want the screenshot of the error page", res.Artifacts)
			}
		})
	}
}

// TestBrowserTextAssertionNamesSeveralMatches: a CSS selector that matches
// several elements is read from the first; a failing text assertion says
// how many matched, and one on the first passes.
func TestBrowserTextAssertionNamesSeveralMatches(t *testing.T) {
	b := needChromium(t)
	o := appOrigin(t)
	r := browserRunner(t, b, "", `
- browser: {navigate: /items}
- browser: {assert_text: {selector: ".item", equals: "a"}}
- name: second
  timeout: 500ms
  browser: {assert_text: {selector: ".item", equals: "b"}}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
	want := `step 2 "second" (browser.assert_text): assert_text .item: text "a", want equals "b", within 500ms (.item matched 3 elements; the first is used)`
	if res.OK || res.Cause != checks.CauseScript || res.Err != want || !res.Steps[1].OK {
		t.Fatalf("got %s: %q\nwant script: %q", res.Cause, res.Err, want)
	}
}

// TestBrowserNavigateFollowsRedirectsAndSites: navigate reports the final
// document of a redirect (its status and URL), and a navigation to another
// site (which Chromium runs in another renderer) loads as any other.
func TestBrowserNavigateFollowsRedirectsAndSites(t *testing.T) {
	b := needChromium(t)
	o := appOrigin(t)
	other := strings.Replace(o.URL, "127.0.0.1", "localhost", 1)
	r := browserRunner(t, b, "", `
- browser: {navigate: /go}
- browser: {assert_title: Dashboard}
- browser: {navigate: "`+other+`/items"}
- browser: {assert_title: Items}
- browser: {navigate: {url: /dashboard, wait_until: domcontentloaded}}
- browser: {assert_text: {selector: "#welcome", equals: Welcome}}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "app", URL: o.URL})
	if !res.OK {
		t.Fatalf("%s: %s", res.Cause, res.Err)
	}
	if s := res.Steps[0]; s.StatusCode != 200 || s.URL != o.URL+"/dashboard" || s.TTFB <= 0 {
		t.Errorf("redirected navigate: %+v, want status 200 of %s/dashboard", s, o.URL)
	}
	if s := res.Steps[2]; s.StatusCode != 200 || s.URL != other+"/items" {
		t.Errorf("navigate to another site: %+v", s)
	}
}
