package scripts

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/vigil-synthetics/vigil/checks"
)

// formOrigin serves a form whose text field's value the page also shows
// as text, and a page whose server takes 5s to answer.
func formOrigin(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><title>form</title>
<style>body { font: 32px monospace; margin: 20px } input { font: inherit; width: 90%; caret-color: transparent } input:focus { outline: none }</style>
<input id="u" type="text" autocomplete="off"><p id="echo">-</p>
<script>const u = document.getElementById('u');
u.oninput = () => { document.getElementById('echo').textContent = 'hello ' + u.value; };</script>`)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Second):
		}
		io.WriteString(w, `<!doctype html><title>late</title>`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func decodePNG(t *testing.T, dir, name string) image.Image {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ArtifactsDir(dir), name))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return img
}

func samePixels(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			r1, g1, b1, a1 := a.At(x, y).RGBA()
			r2, g2, b2, a2 := b.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 || a1 != a2 {
				return false
			}
		}
	}
	return true
}

// TestBrowserScreenshotsHideSecrets: a secret typed into a text field (and
// shown by the page as text) appears in neither the screenshot step's PNG
// nor the failure screenshot: both are, pixel for pixel, the page with
// "•" in its place, while the same value typed as plain text shows. The
// field holds the secret again after the screenshot step.
func TestBrowserScreenshotsHideSecrets(t *testing.T) {
	b := needChromium(t)
	o := formOrigin(t)
	const secret = "hunter2-s3cret"
	t.Setenv("VIGIL_TEST_SECRET", secret)
	dots := strings.Repeat("•", len(secret))
	run := func(src string) (checks.Result, string) {
		t.Helper()
		dir := t.TempDir()
		r := browserRunner(t, b, dir, src, 20*time.Second)
		res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
		if res.OK || !strings.Contains(res.Err, `step`) || !strings.Contains(res.Err, "(browser.eval): eval: value false") {
			t.Fatalf("%s: %s, want the last eval step to fail", res.Cause, res.Err)
		}
		return res, dir
	}
	withSecret, dir := run(`
- browser: {navigate: /form}
- browser: {type: {selector: "#u", text: "${env:VIGIL_TEST_SECRET}"}}
- browser: {eval: {js: "document.activeElement.blur(); true"}}
- browser: {screenshot: true}
- name: still typed
  browser: {eval: {js: "document.getElementById('u').value === '${env:VIGIL_TEST_SECRET}' && document.getElementById('echo').textContent === 'hello ${env:VIGIL_TEST_SECRET}'"}}
- browser: {eval: {js: "false"}}
`)
	if len(withSecret.Artifacts) != 2 {
		t.Fatalf("artifacts %v, want the screenshot step's and the failure's", withSecret.Artifacts)
	}
	if !withSecret.Steps[4].OK {
		t.Errorf("after the screenshot, the field does not hold the secret: %s", withSecret.Steps[4].Err)
	}
	masked, mdir := run(`
- browser: {navigate: /form}
- browser: {eval: {js: "(() => { const f = document.getElementById('u'); f.value = '` + dots + `'; f.dispatchEvent(new Event('input')); return true; })()"}}
- browser: {eval: {js: "false"}}
`)
	plain, pdir := run(`
- browser: {navigate: /form}
- browser: {type: {selector: "#u", text: "` + secret + `"}}
- browser: {eval: {js: "document.activeElement.blur(); false"}}
`)
	want := decodePNG(t, mdir, masked.Artifacts[0])
	if samePixels(want, decodePNG(t, pdir, plain.Artifacts[0])) {
		t.Fatal("the page with the value in plain text looks like the masked one: the test cannot tell them apart")
	}
	for _, a := range withSecret.Artifacts {
		if !samePixels(want, decodePNG(t, dir, a)) {
			t.Errorf("%s does not show the page with the secret replaced by •", a)
		}
	}
}

// TestBrowserFailureScreenshotOfSlowServer: a navigation whose server does
// not answer within the step's timeout, with time left in the check, still
// gets its failure screenshot (the tab as it was) instead of "the page did
// not answer within 250ms".
func TestBrowserFailureScreenshotOfSlowServer(t *testing.T) {
	b := needChromium(t)
	o := formOrigin(t)
	dir := t.TempDir()
	r := browserRunner(t, b, dir, `[{name: open, timeout: 1s, browser: {navigate: /slow}}]`, 20*time.Second)
	start := time.Now()
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	took := time.Since(start)
	want := `step 0 "open" (browser.navigate): navigate ` + o.URL + `/slow: no load event within 1s`
	if res.OK || res.Cause != checks.CauseTimeout || res.Err != want {
		t.Fatalf("cause %s: %q\nwant timeout: %q", res.Cause, res.Err, want)
	}
	if len(res.Artifacts) != 1 {
		t.Fatalf("artifacts %v, want the failure screenshot", res.Artifacts)
	}
	decodePNG(t, dir, res.Artifacts[0])
	if took > 4*time.Second {
		t.Errorf("the run took %s", took)
	}
}

// TestBrowserHungPageWithTimeLeft: a page busy in a script that never
// yields gets up to 2s of the check's time left to answer before the
// screenshot is given up, and the error says what held it.
func TestBrowserHungPageWithTimeLeft(t *testing.T) {
	b := needChromium(t)
	o := newPageOrigin(t)
	r := browserRunner(t, b, t.TempDir(), `[{name: open, timeout: 1s, browser: {navigate: /hang}}]`, 20*time.Second)
	start := time.Now()
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: o.URL})
	took := time.Since(start)
	want := `no failure screenshot: the page did not answer within 2s (a script that never yields)`
	if res.OK || !strings.HasSuffix(res.Err, want) {
		t.Fatalf("%s: %q\nwant it to end with %q", res.Cause, res.Err, want)
	}
	if took < 2*time.Second || took > 6*time.Second {
		t.Errorf("the run took %s, want about 1s + 2s", took)
	}
	// The hung tab goes away (its renderer may be shared with later tabs).
	root, err := b.running(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		infos, err := chromedp.Targets(root)
		if err != nil {
			t.Fatal(err)
		}
		left := 0
		for _, ti := range infos {
			if strings.HasSuffix(ti.URL, "/hang") {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d hung tabs still open 10s after the run", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
