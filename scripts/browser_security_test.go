package scripts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// startOwnBrowser starts a browser of its own (not the shared one) with c,
// or stops the test when Chromium is missing (fails with CI=true).
func startOwnBrowser(t *testing.T, c BrowserConfig) (*Browser, error) {
	t.Helper()
	needChromium(t)
	b := NewBrowser(c)
	t.Cleanup(func() { b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return b, b.Start(ctx)
}

// procFile returns a NUL-separated /proc file of pid as a list.
func procFile(t *testing.T, pid int, name string) []string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	if err != nil {
		t.Fatalf("reading %s of the browser: %v", name, err)
	}
	var out []string
	for _, f := range bytes.Split(raw, []byte{0}) {
		if len(f) > 0 {
			out = append(out, string(f))
		}
	}
	return out
}

func hasArg(args []string, arg string) bool {
	for _, a := range args {
		if a == arg {
			return true
		}
	}
	return false
}

// TestBrowserEnvironmentIsMinimal: Chromium does not get vigil's whole
// environment (tokens would show in /proc/<pid>/environ), only what it
// needs and the variables agent.browser.env names.
func TestBrowserEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("VIGIL_ADMIN_TOKEN", "admin-secret-4711")
	t.Setenv("SHOP_API_KEY", "api-secret-4711")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
	t.Setenv("NO_PROXY", "127.0.0.1")
	t.Setenv("LC_ALL", "C.UTF-8")
	b, err := startOwnBrowser(t, BrowserConfig{Env: []string{"NO_PROXY"}})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	env := procFile(t, b.PID(), "environ")
	joined := strings.Join(env, "\n")
	for _, secret := range []string{"admin-secret-4711", "api-secret-4711", "HTTPS_PROXY="} {
		if strings.Contains(joined, secret) {
			t.Errorf("browser environment holds %q:\n%s", secret, joined)
		}
	}
	for _, want := range []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LC_ALL=C.UTF-8", "NO_PROXY=127.0.0.1"} {
		if !hasArg(env, want) {
			t.Errorf("browser environment lacks %q:\n%s", want, joined)
		}
	}
	if err := (&BrowserConfig{Env: []string{"A=B"}}).ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), `env[0]: "A=…"`) {
		t.Errorf("env entry A=B: %v, want an error naming env[0]", err)
	}
}

// TestBrowserSandbox: --no-sandbox only as root or with no_sandbox: true;
// a Chromium that cannot start with its sandbox says so and names the key.
// The tests run as root in CI; as another user the root cases skip.
func TestBrowserSandbox(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("runs as root: Chromium refuses its sandbox for root, which is how a missing sandbox is produced here")
	}
	needChromium(t) // the shared browser starts before geteuid is replaced
	t.Run("root default", func(t *testing.T) {
		b, err := startOwnBrowser(t, BrowserConfig{})
		if err != nil {
			t.Fatalf("start as root: %v", err)
		}
		if args := procFile(t, b.PID(), "cmdline"); !hasArg(args, "--no-sandbox") {
			t.Errorf("running as root without --no-sandbox: %q", args)
		}
	})
	t.Run("not root", func(t *testing.T) {
		// As another user the sandbox stays on: here (really root) that
		// makes Chromium refuse to start, which must say why and how.
		geteuid = func() int { return 1000 }
		t.Cleanup(func() { geteuid = os.Geteuid })
		b, err := startOwnBrowser(t, BrowserConfig{})
		if !errors.Is(err, ErrBrowserUnavailable) || !strings.Contains(err.Error(), "sandbox is not available") || !strings.Contains(err.Error(), "agent.browser.no_sandbox: true") {
			t.Fatalf("start with the sandbox where none works: %v; want browser unavailable naming agent.browser.no_sandbox", err)
		}
		t.Logf("start: %v", err)
		r := browserRunner(t, b, "", `[{browser: {navigate: "http://127.0.0.1:1/"}}]`, 10*time.Second)
		res := r.Run(context.Background(), checks.Target{Name: "x", URL: "http://127.0.0.1:1"})
		if res.Cause != checks.CauseBrowserUnavailable || !strings.Contains(res.Err, "agent.browser.no_sandbox") {
			t.Errorf("run: %s (%s), want browser_unavailable naming agent.browser.no_sandbox", res.Cause, res.Err)
		}
	})
	t.Run("no_sandbox true", func(t *testing.T) {
		geteuid = func() int { return 1000 }
		t.Cleanup(func() { geteuid = os.Geteuid })
		yes := true
		b, err := startOwnBrowser(t, BrowserConfig{NoSandbox: &yes})
		if err != nil {
			t.Fatalf("start with no_sandbox: true: %v", err)
		}
		if args := procFile(t, b.PID(), "cmdline"); !hasArg(args, "--no-sandbox") {
			t.Errorf("no_sandbox: true without --no-sandbox: %q", args)
		}
	})
}

// TestStepURLsHideQueryValues: a step's url, its error and the failure
// sidecar's failed requests show query values as "…", as the verdict's url
// does, for http and browser steps.
func TestStepURLsHideQueryValues(t *testing.T) {
	const key = "LiteralQueryKey77"
	mux := http.NewServeMux()
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) })
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><title>p</title><img src="/gone.png?api_key=`+key+`"><p id="x">x</p>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tgt := checks.Target{Name: "local", URL: srv.URL}

	t.Run("http step", func(t *testing.T) {
		r, err := New(mustScript(t, `
- http: {path: "/api?session=s1&api_key=`+key+`"}
  expect: {status: [200]}`), Options{Check: "c", Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		res := r.Run(context.Background(), tgt)
		if res.OK || strings.Contains(res.Steps[0].URL, key) || !strings.Contains(res.Steps[0].URL, "api_key=") {
			t.Errorf("step url %q (ok %v): want the query value hidden", res.Steps[0].URL, res.OK)
		}
	})
	t.Run("browser step", func(t *testing.T) {
		b := needChromium(t)
		dir := t.TempDir()
		r := browserRunner(t, b, dir, `
- browser: {navigate: "/page?session=s1&api_key=`+key+`"}
- browser: {sleep: 200ms}
- browser: {wait_visible: "#never"}
  timeout: 500ms`, 20*time.Second)
		res := r.Run(context.Background(), tgt)
		if res.OK {
			t.Fatal("passed")
		}
		for i, s := range res.Steps {
			if strings.Contains(s.URL, key) || strings.Contains(s.Err, key) {
				t.Errorf("step %d url %q err %q: holds the query value", i, s.URL, s.Err)
			}
		}
		if u := res.Steps[2].URL; !strings.Contains(u, "/page?") {
			t.Errorf("failed step url %q, want the page's url", u)
		}
		if len(res.Artifacts) != 1 {
			t.Fatalf("artifacts %v", res.Artifacts)
		}
		side, err := os.ReadFile(filepath.Join(dir, "artifacts", strings.TrimSuffix(res.Artifacts[0], ".png")+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(side, []byte(key)) || !bytes.Contains(side, []byte("gone.png?api_key=")) {
			t.Errorf("failure sidecar %s: want the failed request listed without its query value", side)
		}
		// A navigation that fails names the URL without query values too.
		r = browserRunner(t, b, "", `[{browser: {navigate: "/api?api_key=`+key+`"}}]`, 20*time.Second)
		if res := r.Run(context.Background(), tgt); res.OK || strings.Contains(res.Err, key) || !strings.Contains(res.Err, "/api?api_key=") {
			t.Errorf("navigate to a 403: %s", res.Err)
		}
	})
}

// TestNavigateOnlyHTTP: navigate loads only http(s) URLs. A literal
// file:, data: or javascript: URL is a config error naming the key; one
// that a variable turns into such a URL fails the step at run time
// without loading it.
func TestNavigateOnlyHTTP(t *testing.T) {
	for _, u := range []string{"file:///etc/hostname", "FILE:///etc/hostname", "data:text/html,<p>x", "javascript:alert(1)", "chrome://version", "file:///${env:HOSTFILE}"} {
		_, err := New(mustScript(t, fmt.Sprintf(`[{browser: {navigate: %q}}]`, u)), Options{Check: "c", Timeout: 10 * time.Second})
		if !errors.Is(err, ErrNavigateScheme) || !strings.Contains(err.Error(), "script[0].browser.navigate: scheme ") {
			t.Errorf("navigate %q: %v, want an error naming script[0].browser.navigate", u, err)
		}
	}
	for _, u := range []string{"/shop", "https://shop.example/", "http://127.0.0.1:1/x", "${env:SHOP_URL}/x"} {
		if _, err := New(mustScript(t, fmt.Sprintf(`[{browser: {navigate: %q}}]`, u)), Options{Check: "c", Timeout: 10 * time.Second}); err != nil {
			t.Errorf("navigate %q: %v", u, err)
		}
	}

	b := needChromium(t)
	host, err := os.ReadFile("/etc/hostname")
	if err != nil || len(bytes.TrimSpace(host)) == 0 {
		t.Skip("no /etc/hostname to try to read")
	}
	t.Setenv("NAVURL", "file:///etc/hostname")
	r := browserRunner(t, b, "", `
- browser: {navigate: "${env:NAVURL}"}
- browser: {assert_text: {selector: body, equals: "-"}}`, 20*time.Second)
	res := r.Run(context.Background(), checks.Target{Name: "x", URL: "http://127.0.0.1:1"})
	if res.OK || res.Steps[0].OK || res.Steps[0].Cause != checks.CauseScript || !strings.Contains(res.Err, "scheme file: want an http:// or https:// URL") {
		t.Fatalf("navigate to file:///etc/hostname: ok %v, step 0 %s: %s", res.OK, res.Steps[0].Cause, res.Err)
	}
	// Without the check the file loads and the next step reads it.
	if !res.Steps[1].Skipped {
		t.Errorf("the step after the refused navigation ran: %+v", res.Steps[1])
	}
	if h := bytes.TrimSpace(host); len(h) >= 6 {
		if j, _ := json.Marshal(res); bytes.Contains(j, h) {
			t.Errorf("the result holds the content of /etc/hostname: %s", j)
		}
	}
}

// TestBrowserTempFilesPrivate: Chromium's TMPDIR is a private directory of
// its own (its org.chromium.* files go there, not in the shared /tmp),
// replacing vigil's TMPDIR, its profile is in that directory, and the
// directory is removed when the browser stops.
func TestBrowserTempFilesPrivate(t *testing.T) {
	needChromium(t) // sets up the test binary's TMPDIR first, outside shared
	// Short: Chromium's socket path under it must fit in 107 bytes.
	shared, err := os.MkdirTemp("/tmp", "vt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	t.Setenv("TMPDIR", shared)
	b, err := startOwnBrowser(t, BrowserConfig{})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	var dir string
	for _, kv := range procFile(t, b.PID(), "environ") {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			if dir != "" {
				t.Fatalf("two TMPDIR entries: %q and %q", dir, v)
			}
			dir = v
		}
	}
	want := fmt.Sprintf("vigil-cr-%d-", os.Getpid())
	if !strings.HasPrefix(filepath.Base(dir), want) || filepath.Dir(dir) != shared {
		t.Fatalf("browser TMPDIR %q, want a directory of its own (%s*) under %s", dir, want, shared)
	}
	// The profile (cookies, cache of the pages visited) is in it too.
	if p := profileDir(b.PID()); filepath.Dir(p) != dir {
		t.Fatalf("browser profile %q, want it in the private directory %s", p, dir)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("browser TMPDIR %s: %v, want a 0700 directory", dir, err)
	}
	b.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("browser TMPDIR %s still there after Close (err %v)", dir, err)
	}
}
