package scripts

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// payPage is the form an iframe shows; it posts to its own origin.
const payPage = `<!doctype html><title>pay</title>
<form method="post" action="/paid">
<label for="name">Name on card</label> <input id="name" name="name">
<input id="card" name="card">
<button type="submit">Pay</button>
</form>`

// payServer serves payPage at /pay and records the form posted to /paid.
type payServer struct {
	*httptest.Server
	formSink
}

// newPayServer starts a payServer listening on host (127.0.0.1, or
// 127.0.0.2 for another site), with mux's other routes.
func newPayServer(t testing.TB, host string, mux *http.ServeMux) *payServer {
	t.Helper()
	s := &payServer{}
	if mux == nil {
		mux = http.NewServeMux()
	}
	s.route(mux, "/pay", payPage, "/paid", func(url.Values) string {
		return `<!doctype html><title>paid</title><p id="done">Paid</p>`
	})
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", host, err)
	}
	s.Server = httptest.NewUnstartedServer(mux)
	s.Server.Listener.Close()
	s.Server.Listener = ln
	s.Server.Start()
	t.Cleanup(s.Close)
	return s
}

// frameServers starts the page's server (127.0.0.1), which serves /host:
// a page with a "Pay" button of its own and three iframes showing
// payPage: #same from its own origin, #other-port from another port of
// 127.0.0.1 (another origin, same site) and #other-site from 127.0.0.2
// (another site, which Chromium runs in another process).
func frameServers(t testing.TB) (host, port, site *payServer) {
	port = newPayServer(t, "127.0.0.1", nil)
	site = newPayServer(t, "127.0.0.2", nil)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /host", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		veil := ""
		if r.URL.Query().Has("veil") {
			veil = `<div id="veil" style="position: fixed; inset: 0; background: rgba(0,0,0,.3)"></div>`
		}
		io.WriteString(w, `<!doctype html><title>host</title>`+veil+`
<button id="decoy" type="button" onclick="document.title = 'decoy clicked'">Pay</button>
<div style="height: 900px">tall</div>
<iframe id="same" src="/pay"></iframe>
<iframe id="other-port" src="`+port.URL+`/pay"></iframe>
<iframe id="other-site" src="`+site.URL+`/pay"></iframe>`)
		switch {
		case r.URL.Query().Has("hang"):
			io.WriteString(w, hangAfterFrameHit)
		case r.URL.Query().Has("slow"):
			io.WriteString(w, slowFrameQuestions)
		}
	})
	host = newPayServer(t, "127.0.0.1", mux)
	return host, port, site
}

// TestBrowserFrameForm: with frame, fill (by a label's text), type, click
// (by text, below the fold), wait_text, eval and assert_url act in the
// iframe's document, for an iframe of the page's origin, of another
// origin and of another site; the iframe's server receives the form.
func TestBrowserFrameForm(t *testing.T) {
	b := needChromium(t)
	host, port, site := frameServers(t)
	for _, tc := range []struct {
		frame string
		srv   *payServer
	}{
		{"#same", host},
		{"#other-port", port},
		{"#other-site", site},
	} {
		t.Run(tc.frame, func(t *testing.T) {
			f := `, frame: "` + tc.frame + `"}`
			r := browserRunner(t, b, "", `
- browser: {navigate: /host}
- browser: {fill: {selector: "text=Name on card", text: "Ada Lovelace"}`+f+`
- browser: {type: {selector: "#card", text: "4242"}`+f+`
- browser: {click: 'text="Pay"'`+f+`
- browser: {wait_text: {selector: "#done", equals: "Paid"}`+f+`
- browser: {assert_url: "~/paid$"`+f+`
- browser: {eval: {js: "document.title", equals: "paid"}`+f+`
- browser: {assert_title: "host"}
`, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "x", URL: host.URL})
			if !res.OK {
				t.Fatalf("%s: %s\n%+v", res.Cause, res.Err, res.Steps)
			}
			got := tc.srv.posted()
			if got.Get("name") != "Ada Lovelace" || got.Get("card") != "4242" {
				t.Errorf("the frame's server received %v, want name=Ada Lovelace card=4242", got)
			}
		})
	}
}

// TestBrowserFrameErrors: a frame that is not there, or not an iframe,
// fails the step (cause script) naming the frame selector; without frame
// the iframe's elements are not found.
func TestBrowserFrameErrors(t *testing.T) {
	b := needChromium(t)
	host, _, _ := frameServers(t)
	for _, tc := range []struct{ page, step, want string }{
		{"", `{click: "text=Pay", frame: "#nope"}`, `click text=Pay: frame #nope: no element within 1s`},
		// The page's own element over the iframe takes the click (the
		// frame's document is loaded first, and the step has 3s: on a
		// loaded machine the frame's load took longer than 1s).
		{"?veil", `{click: "text=Pay", frame: "#same"}`, `click text=Pay: covered by div#veil within 3s`},
		{"", `{wait_text: {selector: "#done", contains: x}, frame: "#nope"}`, `wait_text #done: frame #nope: no element within 1s`},
		{"", `{eval: {js: "1"}, frame: "text=Nowhere"}`, `eval: frame text=Nowhere: no element within 1s`},
		{"", `{extract: {v: {text: "#card"}}, frame: "#nope"}`, `extract v from #card: frame #nope: no element within 1s`},
		{"", `{click: "text=Pay", frame: "#decoy"}`, `click text=Pay: frame #decoy: a <button>, not an iframe`},
		{"", `{type: {selector: "#card", text: "1"}}`, `type #card: no element within 1s`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			loaded, timeout := "", "1s"
			if tc.page == "?veil" {
				loaded = `- browser: {wait_text: {selector: "text=Pay", contains: "Pay"}, frame: "#same"}
`
				timeout = "3s"
			}
			r := browserRunner(t, b, "", `
- browser: {navigate: "/host`+tc.page+`"}
`+loaded+`- {name: s, timeout: `+timeout+`, browser: `+tc.step+`}
`, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "x", URL: host.URL})
			if res.OK || res.Cause != checks.CauseScript || !strings.HasSuffix(res.Err, "): "+tc.want) {
				t.Fatalf("%s: %q\nwant script: …%q", res.Cause, res.Err, tc.want)
			}
		})
	}
}

// hangAfterFrameHit, in the host page, blocks the page's main thread for
// 4s at the moment a click in #same has found its element ready in the
// frame's document (the frame's elementFromPoint answered) and asks the
// page where the iframe is now (its getBoundingClientRect): the step's
// time runs out during that question.
const hangAfterFrameHit = `<script>
const f = document.getElementById('same');
let asked = false;
const hook = () => {
  const d = f.contentDocument, orig = d && d.elementFromPoint;
  if (!orig || orig.hooked) return;
  d.elementFromPoint = function (x, y) { asked = true; return orig.call(this, x, y); };
  d.elementFromPoint.hooked = true;
};
f.addEventListener('load', hook);
hook();
f.getBoundingClientRect = function () {
  if (asked) {
    asked = false;
    const end = Date.now() + 4000;
    while (Date.now() < end) {}
  }
  return Element.prototype.getBoundingClientRect.call(this);
};
</script>`

// slowFrameQuestions, in the host page, makes each question about #same
// take 170ms of the page's main thread (well under stallAfter): where the
// iframe is (its getBoundingClientRect), the element at a point in its
// document and in the page (elementFromPoint), as a busy page on a loaded
// machine answers.
const slowFrameQuestions = `<script>
const f = document.getElementById('same');
const slow = (fn) => { const s = function (...a) { const end = Date.now() + 170; while (Date.now() < end) {} return fn.apply(this, a); }; s.slow = true; return s; };
const hook = () => {
  const d = f.contentDocument;
  if (d && !d.elementFromPoint.slow) d.elementFromPoint = slow(d.elementFromPoint);
};
f.addEventListener('load', hook);
hook();
f.getBoundingClientRect = slow(f.getBoundingClientRect);
document.elementFromPoint = slow(document.elementFromPoint);
</script>`

// TestBrowserFrameClickCutShort: a click in a frame whose document is
// there fails for what the page showed when its time runs out during one
// of the questions a poll asks (where the frame is, what a click there
// would reach): not as a frame whose document did not load, nor as a page
// that stopped answering while it answered each question within 170ms
// (a poll in a frame asks several, and the step counted the time since
// the poll before's answer); and as a page that stopped answering (cause
// timeout) when it did.
func TestBrowserFrameClickCutShort(t *testing.T) {
	b := needChromium(t)
	host, _, _ := frameServers(t)
	for _, tc := range []struct {
		page, timeout, want string
		cause               checks.Cause
		runs                int
	}{
		// The time runs out at any point of a poll: several runs.
		{"?veil&slow", "1500ms", `click text=Pay: covered by div#veil within 1.5s`, checks.CauseScript, 3},
		{"?hang", "2s", `click text=Pay: the page stopped answering (a script that never yields) and did not answer again within 2s, so text=Pay could not be checked`, checks.CauseTimeout, 1},
	} {
		t.Run(tc.page, func(t *testing.T) {
			r := browserRunner(t, b, "", `
- browser: {navigate: "/host`+tc.page+`"}
- browser: {wait_text: {selector: "text=Pay", contains: "Pay"}, frame: "#same"}
- {name: s, timeout: `+tc.timeout+`, browser: {click: "text=Pay", frame: "#same"}}
`, 20*time.Second)
			want := `step 2 "s" (browser.click): ` + tc.want
			for i := range tc.runs {
				res := r.Run(context.Background(), checks.Target{Name: "x", URL: host.URL})
				// A page that does not answer cannot be screenshot
				// either: the reason follows.
				if got, _, _ := strings.Cut(res.Err, "; no failure screenshot"); res.Cause != tc.cause || got != want {
					t.Fatalf("run %d: got %s: %q\nwant %s: %q", i+1, res.Cause, res.Err, tc.cause, want)
				}
			}
		})
	}
}

// frame is checked as the selectors are, at its key, and only goes with
// actions that look into a document.
func TestValidateFrame(t *testing.T) {
	sc := mustScript(t, `
- browser: {navigate: /, frame: "#pay"}
- browser: {click: "#go", frame: ""}
- browser: {click: "#go", frame: "//iframe"}
- browser: {click: "#go", frame: "iframe[[", }
- browser: {sleep: 1s, frame: "#pay"}
- browser: {click: "text=Pay", frame: "text=\"Payment\""}
- browser: {eval: {js: "1"}, frame: "iframe[name=pay]"}
`)
	err := units.Prefix("script", sc.ValidateAndSetDefaults(0))
	want := []string{
		"script[0].browser.frame: navigate acts on the page, not in a frame",
		"script[1].browser.frame: selector is empty",
		`script[2].browser.frame: "//iframe": an XPath selector; vigil takes CSS selectors and text=…`,
		`script[3].browser.frame: invalid CSS selector "iframe[[": unclosed "[" at offset 6`,
		"script[4].browser.frame: sleep acts on the page, not in a frame",
	}
	var got []string
	for _, e := range units.Errors(err) {
		got = append(got, e.Error())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !errors.Is(err, ErrEmptySelector) || !errors.Is(err, ErrNotCSSSelector) {
		t.Errorf("%v: want ErrEmptySelector and ErrNotCSSSelector", err)
	}
}
