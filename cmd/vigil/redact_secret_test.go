package main

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestSecretEchoedByOriginRedacted: an origin that echoes the request's
// Authorization header (under a key that is not sensitive, so got is not
// masked) makes a json assertion fail with the header's value as "got".
// The value came from ${…}, so the running agent shows it as ***
// everywhere a verdict goes — the API, the status page, history, alerts,
// the webhook and the log — as `vigil check` does. A secret in the URL path
// or as a bare query key is redacted in the verdict URL too.
func TestSecretEchoedByOriginRedacted(t *testing.T) {
	const (
		headerSecret = "checktokCT999"
		pathSecret   = "pathtokPS4242"
		keySecret    = "querykeyBQ777"
		newSecret    = "reloadtokRL55" // only a reloaded config refers to it
	)
	t.Setenv("REDACT_CT", headerSecret)
	t.Setenv("REDACT_PS", pathSecret)
	t.Setenv("REDACT_BQ", keySecret)
	t.Setenv("REDACT_NEW", newSecret)
	secrets := []string{headerSecret, pathSecret, keySecret, newSecret}

	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/fail/") {
			http.Error(w, "failing on purpose", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"echo": r.Header.Get("Authorization")})
	}))
	defer origin.Close()
	var hookMu sync.Mutex
	var hookBodies bytes.Buffer
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		hookMu.Lock()
		hookBodies.Write(b)
		hookBodies.WriteString("\n")
		hookMu.Unlock()
	}))
	defer hook.Close()

	var logs checktest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := fmt.Sprintf(`
agent: {region: r1, data_dir: %s}
defaults: {interval: 300ms, timeout: 250ms, rise: 1, fall: 1, jitter: "0%%"}
targets:
  - {name: o, url: %s}
checks:
  - name: echo
    targets: [o]
    http: {path: /echo, headers: {Authorization: "Bearer ${REDACT_CT}"}}
    expect: {json: [{path: echo, equals: "x"}]}
  - name: pathsecret
    targets: [o]
    http: {path: "/fail/${REDACT_PS}?${REDACT_BQ}"}
alerting:
  evaluation_interval: 1s
  down: {for: 1s}
  receivers:
    - name: hook
      webhook: {url: "%s/hook"}
`, t.TempDir(), origin.URL, hook.URL)
	a := startBadApp(t, cfg, logger, nil)

	var echo, path map[string]any
	waitFor(t, 15*time.Second, "both verdicts and a webhook", func() bool {
		_, body := do(t, "GET", a.base+"/api/v1/verdicts", "", nil)
		var vs []map[string]any
		if json.Unmarshal([]byte(body), &vs) != nil {
			return false
		}
		for _, v := range vs {
			switch v["check"] {
			case "echo":
				echo = v
			case "pathsecret":
				path = v
			}
		}
		hookMu.Lock()
		n := hookBodies.Len()
		hookMu.Unlock()
		return echo != nil && path != nil && echo["error"] != nil && n > 0
	})
	if got, want := fmt.Sprint(echo["error"]), `got "Bearer ***"`; !strings.Contains(got, want) {
		t.Errorf("echo verdict error = %q, want it to contain %q", got, want)
	}
	if got := fmt.Sprint(path["url"]); !strings.Contains(got, "/fail/***?***") {
		t.Errorf("pathsecret verdict url = %q, want /fail/***?***", got)
	}

	outputs := map[string]string{}
	for _, p := range []string{"/", "/api/v1/verdicts", "/api/v1/alerts", "/api/v1/checks/echo/history",
		"/api/v1/checks/pathsecret/history", "/check/echo", "/check/pathsecret"} {
		code, body := do(t, "GET", a.base+p, "", nil)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
		outputs["GET "+p] = body
	}
	if !strings.Contains(outputs["GET /"], "***") {
		t.Errorf("the status page does not show the redacted error:\n%s", outputs["GET /"])
	}

	// A reload that adds a check echoing a newly referenced secret: the
	// canary redacts with the new config's redactor.
	reloaded := strings.Replace(cfg, "checks:\n", `checks:
  - name: reloaded
    targets: [o]
    http: {path: /echo, headers: {Authorization: "Bearer ${REDACT_NEW}"}}
    expect: {json: [{path: echo, equals: "x"}]}
`, 1)
	if err := os.WriteFile(a.a.path, []byte(reloaded), 0o600); err != nil {
		t.Fatal(err)
	}
	a.a.reload()
	var rv map[string]any
	waitFor(t, 15*time.Second, "a verdict of the reloaded check", func() bool {
		_, body := do(t, "GET", a.base+"/api/v1/verdicts", "", nil)
		var vs []map[string]any
		if json.Unmarshal([]byte(body), &vs) != nil {
			return false
		}
		for _, v := range vs {
			if v["check"] == "reloaded" && v["error"] != nil {
				rv = v
			}
		}
		return rv != nil
	})
	if got, want := fmt.Sprint(rv["error"]), `got "Bearer ***"`; !strings.Contains(got, want) {
		t.Errorf("reloaded verdict error = %q, want it to contain %q", got, want)
	}
	_, outputs["GET /api/v1/verdicts after reload"] = do(t, "GET", a.base+"/api/v1/verdicts", "", nil)
	_, outputs["GET / after reload"] = do(t, "GET", a.base+"/", "", nil)

	a.stop()
	hookMu.Lock()
	outputs["webhook bodies"] = hookBodies.String()
	hookMu.Unlock()
	outputs["logs"] = logs.String()
	for what, text := range outputs {
		for _, sec := range secrets {
			if i := strings.Index(text, sec); i >= 0 {
				t.Errorf("%s shows the secret %q: …%s…", what, sec, text[max(i-120, 0):min(i+40, len(text))])
			}
		}
	}
}

// TestCheckJSONHidesEncodedSecrets: an origin echoes the Authorization
// header's ${…} secret back base64-, hex-, base32-, percent- (once and
// twice) and JSON-encoded, and cut short at got's 200 bytes; it also answers an access_token of its own.
// `vigil check --json` and the JUnit report show none of them, while a
// json assertion on a non-sensitive key still shows its value.
func TestCheckJSONHidesEncodedSecrets(t *testing.T) {
	const secret = `s3cr3t/va+lue "q" <&>é`
	const token = "origin-issued-token-9f8e7d"
	t.Setenv("VIGIL_TEST_ECHO", secret)
	encodings := map[string]func(string) string{
		"asis":   func(s string) string { return s },
		"b64":    func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		"b64url": func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) },
		"basic":  func(s string) string { return base64.StdEncoding.EncodeToString([]byte("me:" + s)) },
		"query":  url.QueryEscape,
		"path":   url.PathEscape,
		"hex":    func(s string) string { return hex.EncodeToString([]byte(s)) },
		"HEX":    func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) },
		"b32":    func(s string) string { return base32.StdEncoding.EncodeToString([]byte(s)) },
		"b32raw": func(s string) string {
			return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString([]byte(s))
		},
		"query2": func(s string) string { return url.QueryEscape(url.QueryEscape(s)) },
		"path2":  func(s string) string { return url.PathEscape(url.PathEscape(s)) },
		"long":   func(s string) string { return strings.Repeat("x", 190) + s }, // got is cut inside the secret
	}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/login" {
			json.NewEncoder(w).Encode(map[string]string{"access_token": token, "user": "ann"})
			return
		}
		enc, ok := encodings[strings.TrimPrefix(r.URL.Path, "/echo/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"echo": enc(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))})
	}))
	defer origin.Close()

	var cfg strings.Builder
	fmt.Fprintf(&cfg, "targets:\n  - {name: o, url: %s}\nchecks:\n", origin.URL)
	kinds := make([]string, 0, len(encodings))
	for kind := range encodings {
		kinds = append(kinds, kind)
		fmt.Fprintf(&cfg, `  - name: echo-%s
    targets: [o]
    http: {path: /echo/%s, headers: {Authorization: "Bearer ${VIGIL_TEST_ECHO}"}}
    expect: {json: [{path: echo, equals: "x"}]}
`, kind, kind)
	}
	cfg.WriteString(`  - name: login
    targets: [o]
    http: {path: /login}
    expect: {json: [{path: access_token, equals: "x"}, {path: user, equals: "bob"}]}
`)
	junit := filepath.Join(t.TempDir(), "junit.xml")
	out, code := runCLI(t, "check", "-c", writeConfig(t, cfg.String()), "--json", "--junit", junit)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (every check fails)\n%s", code, out)
	}
	report, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}

	got := map[string]map[string]string{} // check → assertion name → got
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row struct {
			Check      string
			Assertions []struct{ Name, Got string }
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		got[row.Check] = map[string]string{}
		for _, a := range row.Assertions {
			got[row.Check][a.Name] = a.Got
		}
	}
	for _, kind := range kinds {
		if g := got["echo-"+kind]["json echo"]; !strings.Contains(g, "***") {
			t.Errorf("echo-%s: got %q, want the echoed secret as ***", kind, g)
		}
	}
	if g := got["login"]["json access_token"]; !regexp.MustCompile(`^\[masked: 26 bytes, sha256:[0-9a-f]{8}\]$`).MatchString(g) {
		t.Errorf("login: access_token got %q, want it masked", g)
	}
	if g := got["login"]["json user"]; g != `"ann"` {
		t.Errorf("login: user got %q, want \"ann\" shown", g)
	}

	leaks := []string{token, secret[:9]} // the first 9 bytes: what the cut got would keep
	for _, enc := range encodings {
		leaks = append(leaks, enc(secret))
	}
	for _, l := range leaks {
		for what, text := range map[string]string{"output": out, "junit": string(report)} {
			js, _ := json.Marshal(l)
			for _, form := range []string{l, string(js[1 : len(js)-1])} {
				if i := strings.Index(text, form); i >= 0 {
					t.Errorf("%s shows %q: …%s…", what, form, text[max(i-60, 0):min(i+len(form)+20, len(text))])
				}
			}
		}
	}
}
