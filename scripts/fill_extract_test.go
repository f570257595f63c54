package scripts

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// fillPage is a form with prefilled fields. Every input and change event
// is logged into the hidden field "events" as "<id>:<type>:<isTrusted>",
// so the server sees which events the page got. On submit the
// contenteditable's text goes into the hidden field "ed".
const fillPage = `<!doctype html><title>form</title>
<form id="f" method="post" action="/submit">
<input id="name" name="name" value="prefilled name">
<input id="email" name="email" type="email" value="old@example.com">
<input id="city" name="city" value="Bos">
<input id="when" name="when" type="date" value="2020-01-01">
<textarea id="note" name="note">old note</textarea>
<div id="ed" contenteditable="true">old text</div>
<input id="events" name="events" type="hidden">
<input id="edv" name="ed" type="hidden">
<select id="size" name="size"><option>41</option><option>42</option></select>
<input id="agree" name="agree" type="checkbox">
<input id="ro" name="ro" readonly value="fixed">
<input id="off" name="off" disabled value="off">
<input id="upload" type="file">
<p id="para">text</p>
<button id="go" type="submit">Send</button>
</form>
<script>
const ev = document.getElementById('events');
for (const id of ['name', 'email', 'city', 'when', 'note', 'ed']) {
  const el = document.getElementById(id);
  for (const type of ['input', 'change']) {
    el.addEventListener(type, (e) => { ev.value += id + ':' + type + ':' + e.isTrusted + ' '; });
  }
}
document.getElementById('f').addEventListener('submit', () => {
  document.getElementById('edv').value = document.getElementById('ed').innerText;
});
</script>`

// formServer serves fillPage at /form and records the form posted to
// /submit.
type formServer struct {
	*httptest.Server
	formSink
}

func newFormServer(t testing.TB) *formServer {
	s := &formServer{}
	mux := http.NewServeMux()
	s.route(mux, "/form", fillPage, "/submit", func(url.Values) string {
		return `<!doctype html><title>sent</title><p id="done">ok</p>`
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TestBrowserFillReplacesValues: fill replaces the prefilled values of a
// text input, an email input, a date input, a textarea and a
// contenteditable element (what the server receives on submit), with the
// page getting trusted input events and a change event; type still adds
// to what a field holds; fill with an empty text clears.
func TestBrowserFillReplacesValues(t *testing.T) {
	b := needChromium(t)
	o := newFormServer(t)
	t.Setenv("VIGIL_TEST_FILL_SECRET", "fill-s3cret-77")
	r := browserRunner(t, b, "", `
- browser: {navigate: /form}
- browser: {fill: {selector: "#name", text: "Ada Lovelace"}}
- browser: {fill: {selector: "#email", text: "${env:VIGIL_TEST_FILL_SECRET}@example.com"}}
- browser: {fill: {selector: "#when", text: "2024-05-31"}}
- browser: {fill: {selector: "#note", text: "line one\nline two"}}
- browser: {fill: {selector: "#ed", text: "new text"}}
- browser: {type: {selector: "#city", text: "ton"}}
- browser: {click: "#go"}
- browser: {wait_text: {selector: "#done", equals: ok}}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	if !res.OK {
		t.Fatalf("%s: %s\n%+v", res.Cause, res.Err, res.Steps)
	}
	o.checkPosted(t, map[string]string{
		"name":  "Ada Lovelace",
		"email": "fill-s3cret-77@example.com",
		"when":  "2024-05-31",
		"note":  "line one\r\nline two", // a form submits a textarea's newlines as CRLF
		"ed":    "new text",
		// type keeps what the field holds and types at the caret, which
		// focusing an input that never had it puts at the start.
		"city": "tonBos",
	})
	got := o.posted()
	events := got.Get("events")
	for _, want := range []string{
		"name:input:true name:change:false",
		"email:input:true email:change:false",
		"note:input:true note:change:false",
		"ed:input:true",
		"when:input:false when:change:false",
	} {
		if !strings.Contains(events, want) {
			t.Errorf("events %q lack %q", events, want)
		}
	}

	// An empty text clears the field.
	r = browserRunner(t, b, "", `
- browser: {navigate: /form}
- browser: {fill: {selector: "#name", text: ""}}
- browser: {fill: {selector: "#note"}}
- browser: {click: "#go"}
- browser: {wait_text: {selector: "#done", equals: ok}}
`, 20*time.Second)
	if res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL}); !res.OK {
		t.Fatalf("%s: %s", res.Cause, res.Err)
	}
	got = o.posted()
	if got.Get("name") != "" || got.Get("note") != "" || !got.Has("name") {
		t.Errorf("after filling with an empty text the server received name=%q note=%q", got.Get("name"), got.Get("note"))
	}
	if ev := got.Get("events"); !strings.Contains(ev, "name:input:true") {
		t.Errorf("clearing fired no input event: %q", ev)
	}
}

// TestBrowserFillSecretIsRedacted: a secret filled into a field never shows
// in the step's error, assertions or the run's error, as with type.
func TestBrowserFillSecretIsRedacted(t *testing.T) {
	b := needChromium(t)
	o := newFormServer(t)
	const secret = "fill-s3cret-88"
	t.Setenv("VIGIL_TEST_FILL_SECRET", secret)
	r := browserRunner(t, b, "", `
- browser: {navigate: /form}
- browser: {fill: {selector: "#name", text: "${env:VIGIL_TEST_FILL_SECRET}"}}
- browser: {eval: {js: "document.getElementById('name').value", equals: "nope"}}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	if res.OK || !strings.Contains(res.Err, `eval: value "[redacted]", want "nope"`) {
		t.Fatalf("%s: %q, want the eval to fail on the redacted value", res.Cause, res.Err)
	}
	all := res.Err
	for _, s := range res.Steps {
		all += s.Err
		for _, a := range s.Assertions {
			all += a.Got + a.Want
		}
	}
	if strings.Contains(all, secret) {
		t.Errorf("the secret shows in the result: %s", all)
	}
}

// TestBrowserFillScreenshotHidesSecret: a secret filled into a text field
// (and echoed by the page) shows as • in the failure screenshot, pixel for
// pixel as the page with the dots typed in its place.
func TestBrowserFillScreenshotHidesSecret(t *testing.T) {
	b := needChromium(t)
	o := formOrigin(t)
	const secret = "hunter2-f1ll"
	t.Setenv("VIGIL_TEST_SECRET", secret)
	dots := strings.Repeat("•", len(secret))
	run := func(src string) (checks.Result, string) {
		t.Helper()
		dir := t.TempDir()
		res := browserRunner(t, b, dir, src, 20*time.Second).Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
		if res.OK || len(res.Artifacts) != 1 {
			t.Fatalf("%s: %s, artifacts %v: want the last step to fail with a screenshot", res.Cause, res.Err, res.Artifacts)
		}
		return res, dir
	}
	filled, fdir := run(`
- browser: {navigate: /form}
- browser: {eval: {js: "document.getElementById('u').value = 'prefilled'; true"}}
- browser: {fill: {selector: "#u", text: "${env:VIGIL_TEST_SECRET}"}}
- browser: {eval: {js: "document.activeElement.blur(); false"}}
`)
	masked, mdir := run(`
- browser: {navigate: /form}
- browser: {eval: {js: "(() => { const f = document.getElementById('u'); f.value = '` + dots + `'; f.dispatchEvent(new Event('input')); return false; })()"}}
`)
	plain, pdir := run(`
- browser: {navigate: /form}
- browser: {fill: {selector: "#u", text: "` + secret + `"}}
- browser: {eval: {js: "document.activeElement.blur(); false"}}
`)
	want := decodePNG(t, mdir, masked.Artifacts[0])
	if samePixels(want, decodePNG(t, pdir, plain.Artifacts[0])) {
		t.Fatal("the page with the value in plain text looks like the masked one: the test cannot tell them apart")
	}
	if !samePixels(want, decodePNG(t, fdir, filled.Artifacts[0])) {
		t.Error("the failure screenshot does not show the filled secret as •")
	}
}

// TestBrowserFillErrors: fill waits for its element as type does, with the
// same messages, and refuses elements it cannot fill, pointing to the
// action that can.
func TestBrowserFillErrors(t *testing.T) {
	b := needChromium(t)
	o := newFormServer(t)
	for _, tc := range []struct{ sel, want string }{
		{"#off", "fill #off: not enabled within 1s"},
		{"#nope", "fill #nope: no element within 1s"},
		{"#size", "fill #size: a <select> cannot be filled: use select: {selector, value} to choose its option"},
		{"#agree", "fill #agree: a checkbox cannot be filled: use click to check it"},
		{"#ro", "fill #ro: the field is read-only"},
		{"#upload", "fill #upload: an input of type file cannot be filled"},
		{"#para", "fill #para: a <p> cannot be filled (want an input, a textarea or a contenteditable element)"},
	} {
		t.Run(tc.sel, func(t *testing.T) {
			r := browserRunner(t, b, "", `
- browser: {navigate: /form}
- {name: f, timeout: 1s, browser: {fill: {selector: "`+tc.sel+`", text: "x"}}}
`, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
			want := `step 1 "f" (browser.fill): ` + tc.want
			if res.OK || res.Cause != checks.CauseScript || res.Err != want {
				t.Fatalf("%s: %q\nwant script: %q", res.Cause, res.Err, want)
			}
		})
	}
	// type on the disabled field says the same.
	r := browserRunner(t, b, "", `
- browser: {navigate: /form}
- {name: f, timeout: 1s, browser: {type: {selector: "#off", text: "x"}}}
`, 20*time.Second)
	if res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL}); res.Err != `step 1 "f" (browser.type): type #off: not enabled within 1s` {
		t.Errorf("type: %q", res.Err)
	}
}

// extractPage holds values to read: text (one of them rendered late), an
// attribute, an input's value, and JavaScript state.
const extractPage = `<!doctype html><title>data</title>
<head><meta name="csrf-token" content="csrf-123"></head>
<p>Order: <span id="order-id">
   A-4711
</span></p>
<input id="email" value="ada@example.com">
<a id="next" href="/api/items?page=2">next</a>
<div id="slot"></div>
<script>
window.cart = {total: 3, items: [{sku: 'w'}]};
setTimeout(() => { document.getElementById('slot').innerHTML = '<b id="late">arrived</b>'; }, 300);
</script>`

// apiRecorder serves extractPage at /data and records the last request
// to /api/.
type apiRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	last *http.Request
}

func newAPIRecorder(t testing.TB) *apiRecorder {
	s := &apiRecorder{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /data", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, extractPage)
	})
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.last = r.Clone(context.Background())
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *apiRecorder) lastRequest() *http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// TestBrowserExtractFeedsLaterSteps: extract reads an element's trimmed
// text (also of one rendered late), an attribute, an input's value and
// JavaScript values into variables that a later http step sends in its
// path, query and headers, and later browser and expr steps use.
func TestBrowserExtractFeedsLaterSteps(t *testing.T) {
	b := needChromium(t)
	o := newAPIRecorder(t)
	r := browserRunner(t, b, "", `
- browser: {navigate: /data}
- name: read
  timeout: 3s
  browser:
    extract:
      order: {text: "#order-id"}
      csrf: {attr: {selector: 'meta[name="csrf-token"]', name: content}}
      next: {attr: {selector: "#next", name: href}}
      Email: {value: "#email"}
      total: {eval: "window.cart.total * 2"}
      items: {eval: "window.cart.items"}
      label: {eval: "new Promise(r => setTimeout(() => r('p' + 'q'), 10))"}
      late: {text: "#late"}
- http:
    path: "/api/orders/${order}?total=${TOTAL}&late=${late}"
    headers: {X-CSRF-Token: "${csrf}", X-Email: "${email}", X-Items: "${items}", X-Next: "${next}"}
- expr: 'vars.order == "A-4711" && vars.label == "pq"'
- browser: {fill: {selector: "#email", text: "${label}-${order}"}}
- browser: {extract: {again: {value: "#email"}}}
- browser: {eval: {js: "'${again}'", equals: "pq-A-4711"}}
`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	if !res.OK {
		t.Fatalf("%s: %s\n%+v", res.Cause, res.Err, res.Steps)
	}
	req := o.lastRequest()
	if req == nil {
		t.Fatal("the http step did not reach the server")
	}
	if req.URL.Path != "/api/orders/A-4711" || req.URL.Query().Get("total") != "6" || req.URL.Query().Get("late") != "arrived" {
		t.Errorf("server received %s", req.URL)
	}
	for h, want := range map[string]string{
		"X-CSRF-Token": "csrf-123",
		"X-Email":      "ada@example.com",
		"X-Items":      `[{"sku":"w"}]`,
		"X-Next":       "/api/items?page=2",
	} {
		if got := req.Header.Get(h); got != want {
			t.Errorf("server received %s: %q, want %q", h, got, want)
		}
	}
}

// TestBrowserExtractErrors: a value extract cannot read fails the step
// (cause script) naming the variable and the selector.
func TestBrowserExtractErrors(t *testing.T) {
	b := needChromium(t)
	o := newAPIRecorder(t)
	for _, tc := range []struct{ name, extract, want string }{
		{"missing element", `{order: {text: "#nope"}}`, "extract order from #nope: no element within 1s"},
		{"missing attribute", `{csrf: {attr: {selector: "#order-id", name: data-x}}}`, "extract csrf from #order-id: no attribute data-x within 1s"},
		{"value of a span", `{v: {value: "#order-id"}}`, "extract v from #order-id: a <span> has no value (want an input, a textarea or a select; for other elements use text)"},
		{"eval undefined", `{v: {eval: "window.nothing"}}`, "extract v: eval: the value is undefined"},
		{"eval null", `{v: {eval: "null"}}`, "extract v: eval: the value is null"},
		{"invalid selector", `{v: {text: "#a:nope"}}`, `extract v: invalid CSS selector "#a:nope": `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := browserRunner(t, b, "", `
- browser: {navigate: /data}
- {name: read, timeout: 1s, browser: {extract: `+tc.extract+`}}
- http: {path: /api/after}
`, 20*time.Second)
			res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
			want := `step 1 "read" (browser.extract): ` + tc.want
			if res.OK || res.Cause != checks.CauseScript || !strings.HasPrefix(res.Err, want) {
				t.Fatalf("%s: %q\nwant script: %q", res.Cause, res.Err, want)
			}
			if !res.Steps[2].Skipped || o.lastRequest() != nil {
				t.Errorf("the step after the failed extract ran: %+v", res.Steps[2])
			}
		})
	}
	r := browserRunner(t, b, "", `
- browser: {navigate: /data}
- {name: read, browser: {extract: {v: {eval: "nope()"}}}}
`, 20*time.Second)
	if res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL}); !strings.Contains(res.Err, "extract v: eval: ") || !strings.Contains(res.Err, "nope is not defined") {
		t.Errorf("eval exception: %q", res.Err)
	}
}

// TestValidateFillAndExtract: config errors of fill and extract name their
// key; extracted names are defined for later steps only.
func TestValidateFillAndExtract(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
		is        error
	}{
		{"valid", `
- browser: {navigate: /}
- browser: {fill: {selector: "#q", text: "${env:HOME}"}}
- browser: {extract: {Order: {text: "#o"}, csrf: {attr: {selector: "meta[name=csrf]", name: content}}, v: {value: "#q"}, n: {eval: "1"}}}
- browser: {fill: {selector: "#q-${ORDER}", text: "${csrf}${v}"}}
- http: {path: "/x/${n}"}
- expr: 'vars.order != ""'`, nil, nil},
		{"fill without selector", `[{browser: {fill: {text: x}}}]`,
			[]string{"script[0].browser.fill.selector: selector is empty"}, ErrEmptySelector},
		{"fill Playwright and XPath selectors", `
- browser: {fill: {selector: "role=textbox", text: x}}
- browser: {fill: {selector: "//input[@name='q']", text: x}}
- browser: {fill: {selector: "#q[[", text: x}}`,
			[]string{
				`script[0].browser.fill.selector: "role=textbox": a Playwright role selector; vigil takes CSS selectors and text=… (in CSS, match the element or its role attribute, e.g. button or [role="button"])`,
				`script[1].browser.fill.selector: "//input[@name='q']": an XPath selector; vigil takes CSS selectors and text=…`,
				`script[2].browser.fill.selector: invalid CSS selector "#q[[": unclosed "[" at offset 2`,
			}, nil},
		{"fill with an undefined variable", `[{browser: {fill: {selector: "#q", text: "${nope}"}}}]`,
			[]string{"script[0].browser.fill.text: undefined variable ${nope}: no earlier step extracts it"}, ErrUndefinedVar},
		{"fill and click", `[{browser: {fill: {selector: "#q", text: x}, click: "#b"}}]`,
			[]string{"script[0].browser: more than one action: click, fill"}, nil},
		{"extract nothing", `[{browser: {extract: {}}}]`,
			[]string{`script[0].browser.extract: want at least one variable, e.g. extract: {order_id: {text: "#order-id"}}`}, nil},
		{"extractor errors", `
- browser:
    extract:
      a: {}
      b: {text: "#b", eval: "1"}
      bad-name: {text: "#c"}
      d: {attr: {selector: "#d"}}
      e: {attr: {selector: "id=e", name: href}}
      f: {value: "xpath=//input"}
      g: {text: "  "}
      h: {eval: "  "}`,
			[]string{
				"script[0].browser.extract.a: want one of text, value, attr, eval",
				"script[0].browser.extract.b: more than one of text, value, attr, eval: text, eval",
				"script[0].browser.extract.bad-name: not a variable name (letters, digits, _)",
				"script[0].browser.extract.d.attr.name: attribute name is empty",
				`script[0].browser.extract.e.attr.selector: "id=e": a Playwright id= selector; vigil takes CSS selectors and text=… (in CSS: [id="e"])`,
				`script[0].browser.extract.f.value: "xpath=//input": an XPath selector; vigil takes CSS selectors and text=…`,
				"script[0].browser.extract.g.text: selector is empty",
				"script[0].browser.extract.h.eval: script is empty",
			}, nil},
		{"extract uses only earlier variables", `
- browser: {fill: {selector: "#q", text: "${order}"}}
- browser: {extract: {order: {text: "#o"}, other: {text: "#${order}"}}}`,
			[]string{
				"script[0].browser.fill.text: undefined variable ${order}: no earlier step extracts it",
				"script[1].browser.extract.other.text: undefined variable ${order}: no earlier step extracts it",
			}, ErrUndefinedVar},
		{"browser-extracted variable in expect", `
- browser: {extract: {order: {text: "#o"}}}
- http: {path: /}
  expect: {body: {contains: ["${order}"]}}`,
			[]string{`script[1].expect.body.contains[0]: variables are not expanded in expect (step "1 http"): ${order} would be matched as literal text; compare the variable in an expr step instead, e.g. expr: 'last.body contains vars.order'`}, ErrVarInExpect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := decodeScript(tc.src)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			err = units.Prefix("script", sc.ValidateAndSetDefaults(0))
			var got []string
			for _, e := range units.Errors(err) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%v is not %v", err, tc.is)
			}
		})
	}
}
