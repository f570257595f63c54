package scripts

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// serveOn starts h on 127.0.0.1 and returns the server.
func serveOn(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// xframeOrigins starts the frames' server, which serves formOrigin's /form
// and /console (a page that calls console.error and gets a 404 and a 500
// for its own requests), and the page's server, whose /host?f=PATH shows
// PATH in two iframes: #port from the frames' server as 127.0.0.1 (another
// origin of the same site: same process, its own JavaScript context) and
// #site from it as localhost (another site: Chromium runs it in a process
// of its own); &only=port or &only=site shows only that one. Both servers
// listen on 127.0.0.1.
func xframeOrigins(t testing.TB) (page *httptest.Server) {
	mux := http.NewServeMux()
	mux.Handle("/form", formOrigin(t).Config.Handler)
	mux.HandleFunc("/console", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><title>frame</title><p id="ok">frame</p>
<script>console.error('frame broke');
fetch('/missing').finally(() => fetch('/broken')).catch(() => {});</script>`)
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusNotFound) })
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	frames := serveOn(t, mux)
	_, port, _ := net.SplitHostPort(frames.Listener.Addr().String())
	return serveOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, only := r.URL.Query().Get("f"), r.URL.Query().Get("only")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><title>host</title>
<style>body { margin: 0 } iframe { width: 600px; height: 160px; border: 0; display: block }</style>`)
		if only != "site" {
			io.WriteString(w, `<iframe id="port" src="http://127.0.0.1:`+port+f+`"></iframe>`)
		}
		if only != "port" {
			io.WriteString(w, `<iframe id="site" src="http://localhost:`+port+f+`"></iframe>`)
		}
	}))
}

// TestBrowserScreenshotsHideSecretsInCrossOriginFrames: a secret typed
// into an iframe of another origin (same site, another port) and into one
// of another site shows in neither the screenshot step's PNG nor the
// failure screenshot: both are, pixel for pixel, the page with "•" typed
// in its place.
func TestBrowserScreenshotsHideSecretsInCrossOriginFrames(t *testing.T) {
	b := needChromium(t)
	o := xframeOrigins(t)
	const secret = "hunter2-s3cret"
	t.Setenv("VIGIL_TEST_SECRET", secret)
	dots := strings.Repeat("•", len(secret))
	run := func(text string) (checks.Result, string) {
		t.Helper()
		dir := t.TempDir()
		src := `
- browser: {navigate: "/host?f=/form"}
- browser: {type: {selector: "#u", text: "` + text + `"}, frame: "#port"}
- browser: {type: {selector: "#u", text: "` + text + `"}, frame: "#site"}
- browser: {eval: {js: "document.activeElement.blur(); true"}, frame: "#port"}
- browser: {eval: {js: "document.activeElement.blur(); true"}, frame: "#site"}
- browser: {screenshot: true}
- browser: {eval: {js: "false"}}
`
		res := browserRunner(t, b, dir, src, 30*time.Second).Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
		if res.OK || !strings.Contains(res.Err, "(browser.eval): eval: value false") {
			t.Fatalf("%s: %s, want the last eval step to fail", res.Cause, res.Err)
		}
		if len(res.Artifacts) != 2 {
			t.Fatalf("artifacts %v (%s), want the screenshot step's and the failure's", res.Artifacts, res.Err)
		}
		return res, dir
	}
	withSecret, dir := run("${env:VIGIL_TEST_SECRET}")
	masked, mdir := run(dots)
	plain, pdir := run(secret)
	want := decodePNG(t, mdir, masked.Artifacts[0])
	if samePixels(want, decodePNG(t, pdir, plain.Artifacts[0])) {
		t.Fatal("the page with the value in plain text looks like the masked one: the test cannot tell them apart")
	}
	for _, a := range withSecret.Artifacts {
		if !samePixels(want, decodePNG(t, dir, a)) {
			t.Errorf("%s does not show the frames with the secret replaced by •", a)
		}
	}
}

// TestBrowserConsoleErrorsOfCrossSiteFrames: no_console_errors and
// max_failed_requests count what runs in an iframe of another site (its
// own process) as they count the page's and a same-site frame's.
func TestBrowserConsoleErrorsOfCrossSiteFrames(t *testing.T) {
	b := needChromium(t)
	o := xframeOrigins(t)
	for _, frame := range []string{"site", "port"} {
		t.Run(frame, func(t *testing.T) {
			src := `
- browser: {navigate: "/host?f=/console&only=` + frame + `"}
- browser: {wait_visible: "#ok", frame: "#` + frame + `"}
- browser: {sleep: 500ms}
- name: console
  always: true
  browser: {no_console_errors: true}
- name: requests
  always: true
  browser: {max_failed_requests: 0}
`
			res := browserRunner(t, b, "", src, 30*time.Second).Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
			if res.OK || len(res.Steps) != 5 {
				t.Fatalf("run passed (%s), want the console and requests steps to fail: %+v", res.Err, res.Steps)
			}
			if s := res.Steps[3]; s.OK || !strings.Contains(s.Err, "console.error: frame broke") {
				t.Errorf("no_console_errors: ok=%v %q, want it to fail naming the frame's console.error", s.OK, s.Err)
			}
			want := "max_failed_requests: 2 failed requests, over 0; first: 404 http://"
			if s := res.Steps[4]; s.OK || !strings.HasPrefix(s.Err, want) || !strings.Contains(s.Err, "/missing") {
				t.Errorf("max_failed_requests: ok=%v %q, want %q…/missing", s.OK, s.Err, want)
			}
			if m := res.Steps[4].Metrics; m["console_errors"] != 1 || m["failed_requests"] != 2 {
				t.Errorf("metrics %v, want 1 console error and 2 failed requests", m)
			}
		})
	}
}

// TestBrowserScreenshotHidesFrameThatCannotBeMasked: an iframe of another
// site whose document does not answer (a script that never yields) cannot
// have the secret typed into it masked: the screenshot hides the iframe
// (its box shows the page behind it) rather than showing the secret.
func TestBrowserScreenshotHidesFrameThatCannotBeMasked(t *testing.T) {
	b := needChromium(t)
	o := xframeOrigins(t)
	t.Setenv("VIGIL_TEST_SECRET", "hunter2-s3cret")
	run := func(src string) (checks.Result, string) {
		t.Helper()
		dir := t.TempDir()
		res := browserRunner(t, b, dir, src, 30*time.Second).Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
		if len(res.Artifacts) < 1 {
			t.Fatalf("artifacts %v (%s: %s), want the screenshot step's", res.Artifacts, res.Cause, res.Err)
		}
		return res, dir
	}
	hung, dir := run(`
- browser: {navigate: "/host?f=/form&only=site"}
- browser: {type: {selector: "#u", text: "${env:VIGIL_TEST_SECRET}"}, frame: "#site"}
- browser: {eval: {js: "document.activeElement.blur(); setTimeout(() => { for (;;) {} }, 50); true"}, frame: "#site"}
- browser: {sleep: 300ms}
- browser: {screenshot: true}
`)
	hidden, hdir := run(`
- browser: {navigate: "/host?f=/form&only=site"}
- browser: {eval: {js: "document.getElementById('site').style.visibility = 'hidden'; true"}}
- browser: {screenshot: true}
`)
	shown, sdir := run(`
- browser: {navigate: "/host?f=/form&only=site"}
- browser: {screenshot: true}
`)
	want := decodePNG(t, hdir, hidden.Artifacts[0])
	if samePixels(want, decodePNG(t, sdir, shown.Artifacts[0])) {
		t.Fatal("the page with the iframe hidden looks like the page with it: the test cannot tell them apart")
	}
	if !samePixels(want, decodePNG(t, dir, hung.Artifacts[0])) {
		t.Errorf("%s does not show the page with the unmaskable iframe hidden (%s)", hung.Artifacts[0], hung.Err)
	}
}
