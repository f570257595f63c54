package scripts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"go.yaml.in/yaml/v3"
)

// decodeScript decodes a YAML `script:` list the way the config loader
// does: keys lower-cased, weakly typed input, unknown keys rejected,
// durations from strings.
func decodeScript(src string) (Script, error) {
	var raw any
	if err := yaml.Unmarshal([]byte(src), &raw); err != nil {
		return nil, err
	}
	raw = lowerKeys(raw)
	var sc Script
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           &sc,
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.TextUnmarshallerHookFunc(),
		),
	})
	if err != nil {
		return nil, err
	}
	if err := dec.Decode(raw); err != nil {
		return nil, err
	}
	return sc, nil
}

func lowerKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, v := range x {
			m[strings.ToLower(k)] = lowerKeys(v)
		}
		return m
	case map[any]any:
		// viper turns every key into a string.
		m := make(map[string]any, len(x))
		for k, v := range x {
			m[strings.ToLower(fmt.Sprint(k))] = lowerKeys(v)
		}
		return m
	case []any:
		for i := range x {
			x[i] = lowerKeys(x[i])
		}
	}
	return v
}

func mustScript(t testing.TB, src string) Script {
	t.Helper()
	sc, err := decodeScript(src)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return sc
}

// apiOrigin is a small API: POST /login {user,password} → {"token"} and a
// sid cookie; GET /api/me needs the bearer token; DELETE /cart counts
// cleanups; /fail answers 500.
type apiOrigin struct {
	*httptest.Server
	cleanups atomic.Int64
	lastAuth atomic.Value
}

const (
	demoUser     = "demo"
	demoPassword = "s3cr3t-Pa55"
	demoToken    = "tok-4711"
)

func newAPIOrigin(t testing.TB) *apiOrigin {
	o := &apiOrigin{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ User, Password string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.User != demoUser || in.Password != demoPassword {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":"bad credentials for %s"}`, in.Password)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "sess-1", Path: "/"})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", `"v1"`)
		fmt.Fprintf(w, `{"token":%q,"order":"order=42"}`, demoToken)
	})
	mux.HandleFunc("GET /api/me", func(w http.ResponseWriter, r *http.Request) {
		o.lastAuth.Store(r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer "+demoToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		c, err := r.Cookie("sid")
		sid := ""
		if err == nil {
			sid = c.Value
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"user":%q,"sid":%q}`, demoUser, sid)
	})
	mux.HandleFunc("DELETE /cart", func(w http.ResponseWriter, r *http.Request) {
		o.cleanups.Add(1)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "boom")
	})
	o.Server = httptest.NewServer(mux)
	t.Cleanup(o.Close)
	return o
}

// shopPage renders its content with JavaScript after a delay: a button that
// increments a cart counter.
const shopPage = `<!doctype html>
<html><head><title>Shop</title></head>
<body><div id="app">loading…</div>
<script>
setTimeout(() => {
  document.getElementById('app').innerHTML =
    '<h1 class="item">Shoes</h1><h1 class="item">Socks</h1><h1 class="item">Hats</h1>' +
    '<button id="add-to-cart">Add to cart</button> Cart: <span id="cart-count">0</span>' +
    '<form><input id="q"><select id="size"><option value="41">41</option><option value="42">42</option></select></form>' +
    '<p id="echo"></p><div id="cart" style="display:none">in cart</div>';
  let n = 0;
  document.getElementById('add-to-cart').addEventListener('click', () => {
    n++;
    setTimeout(() => {
      document.getElementById('cart-count').textContent = String(n);
      document.getElementById('cart').style.display = 'block';
    }, 100);
  });
  const echo = () => { document.getElementById('echo').textContent =
    document.getElementById('q').value + '/' + document.getElementById('size').value; };
  document.getElementById('q').addEventListener('input', echo);
  document.getElementById('size').addEventListener('change', echo);
}, 150);
</script></body></html>`

const errorsPage = `<!doctype html><html><head><title>Errors</title></head><body>
<img src="/missing.png">
<script>console.error('kaboom', 42); setTimeout(() => { throw new Error('uncaught!'); }, 0);</script>
</body></html>`

// pageOrigin serves the browser test pages.
type pageOrigin struct {
	*httptest.Server
	hits atomic.Int64
}

func newPageOrigin(t testing.TB) *pageOrigin {
	o := &pageOrigin{}
	mux := http.NewServeMux()
	html := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			o.hits.Add(1)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, body)
		}
	}
	mux.HandleFunc("/shop", html(shopPage))
	mux.HandleFunc("/errors", html(errorsPage))
	mux.HandleFunc("/dialog", html(`<!doctype html><title>d</title><button id="b">go</button><p id="out"></p>
<script>document.getElementById('b').onclick = () => { alert('hi');
document.getElementById('out').textContent = confirm('sure?') ? 'yes' : 'no'; };</script>`))
	mux.HandleFunc("/tiny", html(`<!doctype html><title>t</title><p id="x">ok</p>`))
	// A page that hangs its renderer: an alert, then a loop that never ends.
	mux.HandleFunc("/hang", html(`<!doctype html><title>hang</title><script>alert("hi"); while (true) {}</script>`))
	// A page whose load never finishes: the document arrives, a script it
	// needs never does (until the test ends).
	mux.HandleFunc("/stuck", html(`<!doctype html><title>stuck</title><p id="x">x</p><script src="/never.js"></script>`))
	mux.HandleFunc("/never.js", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	// An origin far too slow for the tests' step timeouts: the document
	// comes after 5s (or never, once the request is cancelled).
	mux.HandleFunc("/slower", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(5 * time.Second):
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><title>Slower</title>`)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><title>Slow</title><p id="x">slow</p>`)
	})
	mux.HandleFunc("/broken", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "<p>down</p>")
	})
	o.Server = httptest.NewServer(mux)
	t.Cleanup(o.Close)
	return o
}

// Chromium for the tests.
var (
	sharedOnce    sync.Once
	sharedBrowser *Browser
	sharedErr     error
)

// needChromium returns the package's shared test browser, or stops the
// test when Chromium is missing (fails with CI=true).
func needChromium(t testing.TB) *Browser {
	t.Helper()
	useTestTmp()
	sharedOnce.Do(func() {
		c := BrowserConfig{MaxConcurrent: 4}
		if _, sharedErr = c.findExec(); sharedErr != nil {
			return
		}
		sharedBrowser = NewBrowser(c)
		sharedErr = sharedBrowser.Start(context.Background())
	})
	checktest.NeedDependency(t, "chromium", sharedErr)
	return sharedBrowser
}

// testTmp holds every browser profile directory of this test binary, so the
// process counts only see this binary's Chromium processes. It is set up by
// the first test that needs Chromium (fuzz workers never do).
var (
	testTmp     string
	testTmpOnce sync.Once
)

func useTestTmp() {
	testTmpOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vigil-scripts-test")
		if err != nil {
			panic(err)
		}
		testTmp = dir
		os.Setenv("TMPDIR", dir)
	})
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedBrowser != nil {
		sharedBrowser.Close()
	}
	if testTmp != "" {
		if n := settleCount(testTmp, 0, 10*time.Second); n != 0 && code == 0 {
			fmt.Fprintf(os.Stderr, "FAIL: %d chromium processes of this test binary survive Close\n", n)
			code = 1
		}
		os.RemoveAll(testTmp)
	}
	os.Exit(code)
}

// chromiumProcs counts live processes whose command line mentions marker
// (a profile directory or its parent), excluding zombies.
func chromiumProcs(marker string) int {
	n := 0
	for _, c := range chromiumDirCounts(marker) {
		n += c
	}
	return n
}

// chromiumDirs returns the profile directories under marker that live
// Chromium processes use.
func chromiumDirs(marker string) map[string]bool {
	dirs := map[string]bool{}
	for d := range chromiumDirCounts(marker) {
		dirs[d] = true
	}
	return dirs
}

// newDirs returns, per profile directory under marker not in known, the
// count of live processes using it.
func newDirs(marker string, known map[string]bool) map[string]int {
	out := map[string]int{}
	for d, n := range chromiumDirCounts(marker) {
		if !known[d] {
			out[d] = n
		}
	}
	return out
}

// chromiumDirCounts counts live processes (not zombies) whose
// --user-data-dir starts with marker, per directory.
func chromiumDirCounts(marker string) map[string]int {
	counts := map[string]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return counts
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmd, []byte("--user-data-dir="+marker)) {
			continue
		}
		if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue
			}
		}
		for _, a := range bytes.Split(cmd, []byte{0}) {
			if v, ok := bytes.CutPrefix(a, []byte("--user-data-dir=")); ok {
				counts[string(v)]++
				break
			}
		}
	}
	return counts
}

// settleCount waits (bounded) until the count of marker's processes drops to
// at most want, and returns the last count.
func settleCount(marker string, want int, limit time.Duration) int {
	deadline := time.Now().Add(limit)
	for {
		n := chromiumProcs(marker)
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// profileDir returns the --user-data-dir of a running browser process.
func profileDir(pid int) string {
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	for _, a := range bytes.Split(cmd, []byte{0}) {
		if v, ok := bytes.CutPrefix(a, []byte("--user-data-dir=")); ok {
			return string(v)
		}
	}
	return ""
}

// stableCount returns the count of marker's processes once it has not
// changed for three samples 100 ms apart (bounded by limit).
func stableCount(marker string, limit time.Duration) int {
	deadline := time.Now().Add(limit)
	last, same := chromiumProcs(marker), 0
	for same < 3 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		n := chromiumProcs(marker)
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
	}
	return last
}
