package canary

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
	"github.com/vigil-synthetics/vigil/reporting"
)

// echoing is a probe whose result repeats a secret everywhere a real check
// may: an origin echoing the Authorization header shows up in the error,
// the assertion's got and a script step's error and URL.
type echoing struct{ secret string }

func (e echoing) Run(context.Context, checks.Target) checks.Result {
	return checks.Result{Cause: checks.CauseJSON,
		Err:        `json headers.Authorization: got "Bearer ` + e.secret + `"`,
		Assertions: []checks.AssertionResult{{Name: "json headers.Authorization", Got: "Bearer " + e.secret, Want: "x"}},
		Steps: []checks.StepResult{{Name: "login", Cause: checks.CauseScript, Err: "echoed " + e.secret,
			URL: "http://127.0.0.1:1/step/" + e.secret + "?" + e.secret + "&k=" + e.secret}},
	}
}

func replacer(secrets ...string) func(string) string {
	return func(s string) string {
		for _, sec := range secrets {
			s = strings.ReplaceAll(s, sec, "***")
		}
		return s
	}
}

func TestRedactHookCoversVerdicts(t *testing.T) {
	const secret, pathSecret = "checktokCT999", "pathsecretPS1 x/y"
	cases := []struct {
		name   string
		redact func(string) string
		leak   bool // no hook: the secret is published as is
	}{
		{"hook", replacer(secret, pathSecret), false},
		{"nil hook keeps text", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, map[string]string{"x": "http://127.0.0.1:1"},
				CheckConfig{Name: "echo", Targets: []string{"x"}, Fall: 1, HTTP: &checks.HTTPSpec{Path: "/h"}},
				CheckConfig{Name: "path", Targets: []string{"x"}, Fall: 1,
					HTTP: &checks.HTTPSpec{Path: "/fail/" + strings.ReplaceAll(pathSecret, " ", "%20") + "?" + secret}},
				CheckConfig{Name: "boom", Targets: []string{"x"}, Fall: 1, HTTP: &checks.HTTPSpec{}})
			pairs := compile(t, cfg)
			for i := range pairs {
				switch pairs[i].Check.Name {
				case "echo":
					pairs[i].Probe = echoing{secret}
				case "path":
					pairs[i].Probe = failing{}
				case "boom":
					pairs[i].Probe = panicsWith{"token " + secret}
				}
			}
			logs := &checktest.SyncBuffer{}
			sink := &memSink{}
			c := start(t, cfg, pairs, Options{Sink: sink, Redact: tc.redact,
				Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			for _, name := range []string{"echo", "path", "boom"} {
				waitFor(t, name+" unhealthy", stateIs(c, name, "x", reporting.StateUnhealthy))
			}
			waitFor(t, "published", func() bool { return len(sink.of("path", "x")) > 0 && len(sink.of("echo", "x")) > 0 })

			var all strings.Builder
			for _, v := range c.Latest() {
				all.WriteString(v.Err + "\n" + v.URL + "\n")
			}
			sink.mu.Lock()
			for _, v := range sink.vs {
				all.WriteString(v.Err + "\n" + v.URL + "\n")
			}
			sink.mu.Unlock()
			all.WriteString(logs.String())
			got := all.String()
			for _, sec := range []string{secret, "pathsecretPS1"} {
				if strings.Contains(got, sec) != tc.leak {
					t.Errorf("secret %q shown: %v, want %v; in:\n%s", sec, !tc.leak, tc.leak, got)
				}
			}
			if tc.leak {
				return
			}
			echo, _ := latestOf(c, "echo", "x")
			if want := `json headers.Authorization: got "Bearer ***"`; echo.Err != want {
				t.Errorf("echo err = %q, want %q", echo.Err, want)
			}
			// The failed step's URL is the one shown; its query value is
			// blanked by units.RedactURL, its path and bare key by the hook.
			if !strings.Contains(echo.URL, "/step/***?") || strings.Contains(echo.URL, secret) {
				t.Errorf("echo url = %q", echo.URL)
			}
			path, _ := latestOf(c, "path", "x")
			if !strings.Contains(path.URL, "***") {
				t.Errorf("path url = %q, want the secret path segment as ***", path.URL)
			}
			if !strings.Contains(logs.String(), "token ***") {
				t.Errorf("panic log does not show the redacted panic:\n%s", logs.String())
			}
		})
	}
}

// failing fails without steps, so the verdict shows the check's own URL.
type failing struct{}

func (failing) Run(context.Context, checks.Target) checks.Result {
	return checks.Result{Cause: checks.CauseStatus, Err: "status 500", StatusCode: 500}
}

type panicsWith struct{ msg string }

func (p panicsWith) Run(context.Context, checks.Target) checks.Result { panic(p.msg) }

// SetRedact on a running canary (a config reload) applies to the next run.
func TestSetRedactReplacesHook(t *testing.T) {
	const secret = "reloadsecretRS7"
	cfg := testConfig(t, map[string]string{"x": "http://127.0.0.1:1"},
		CheckConfig{Name: "echo", Targets: []string{"x"}, Fall: 1, HTTP: &checks.HTTPSpec{}})
	pairs := compile(t, cfg)
	pairs[0].Probe = echoing{secret}
	c, err := New(cfg, pairs, Options{Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Trigger("echo", "x")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Err, secret) {
		t.Fatalf("without a hook: err = %q, want the text as is", v.Err)
	}
	c.SetRedact(replacer(secret))
	if v, _ = c.Trigger("echo", "x"); strings.Contains(v.Err, secret) || !strings.Contains(v.Err, "***") {
		t.Fatalf("after SetRedact: err = %q", v.Err)
	}
	c.SetRedact(nil)
	if v, _ = c.Trigger("echo", "x"); !strings.Contains(v.Err, secret) {
		t.Fatalf("after SetRedact(nil): err = %q", v.Err)
	}
}

// Restore redacts verdicts stored before the hook existed.
func TestRestoreRedacts(t *testing.T) {
	const secret = "storedsecretSS3"
	cfg := testConfig(t, map[string]string{"x": "http://127.0.0.1:1"},
		CheckConfig{Name: "echo", Targets: []string{"x"}, HTTP: &checks.HTTPSpec{}})
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t), Redact: replacer(secret)})
	if err != nil {
		t.Fatal(err)
	}
	now := c.now()
	n := c.Restore([]reporting.Verdict{{Check: "echo", Target: "x", Region: "test-region", Vantage: "v1",
		State: reporting.StateUnhealthy, Err: "got Bearer " + secret, URL: "http://127.0.0.1:1/p/" + secret,
		At: now, Expires: now.Add(time.Hour)}})
	if n != 1 {
		t.Fatalf("restored %d pairs, want 1", n)
	}
	v, _ := latestOf(c, "echo", "x")
	if v.Err != "got Bearer ***" || v.URL != "http://127.0.0.1:1/p/***" {
		t.Fatalf("restored verdict err=%q url=%q", v.Err, v.URL)
	}
}

// TestRedactEncodedEcho runs real HTTP checks against an origin that echoes
// the request body — a secret — back encoded, with checks.Redactor as the
// hook: no verdict shows the secret as written or in any of the encodings,
// and a json assertion on a sensitive key that holds the secret shows ***.
func TestRedactEncodedEcho(t *testing.T) {
	const secret = `p/a+s s"w\<&>é-tok1`
	encodings := map[string]func(string) string{
		"b64":      func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) },
		"b64url":   func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) },
		"basic":    func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+s)) },
		"query":    url.QueryEscape,
		"path":     url.PathEscape,
		"asis":     func(s string) string { return s },
		"jsonbody": func(s string) string { return s }, // json-escaped by the encoder below
	}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<10))
		kind := path.Base(r.URL.Path)
		enc, ok := encodings[kind]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Echo", enc(string(b)))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"echo": enc(string(b)), "access_token": string(b)})
	}))
	defer origin.Close()

	var chs []CheckConfig
	for kind := range encodings {
		chs = append(chs, CheckConfig{Name: kind, Targets: []string{"o"}, Fall: 1,
			HTTP:   &checks.HTTPSpec{Method: "POST", Path: "/echo/" + url.PathEscape(secret) + "/" + kind, Body: secret},
			Expect: &checks.Expect{JSON: []checks.JSONExpect{{Path: "echo", Equals: "x"}}}})
	}
	chs = append(chs,
		CheckConfig{Name: "header", Targets: []string{"o"}, Fall: 1,
			HTTP:   &checks.HTTPSpec{Method: "POST", Path: "/echo/b64", Body: secret},
			Expect: &checks.Expect{Headers: map[string]string{"X-Echo": "=x"}}},
		CheckConfig{Name: "token", Targets: []string{"o"}, Fall: 1,
			HTTP:   &checks.HTTPSpec{Method: "POST", Path: "/echo/asis", Body: secret},
			Expect: &checks.Expect{JSON: []checks.JSONExpect{{Path: "access_token", Equals: "x"}}}})
	for i := range chs {
		// Triggered runs only: the default 200ms interval's 160ms
		// timeout is too short on a loaded machine.
		chs[i].Interval = time.Hour
	}
	cfg := testConfig(t, map[string]string{"o": origin.URL}, chs...)
	var red checks.Redactor
	red.Add(secret)
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t), Redact: red.Redact})
	if err != nil {
		t.Fatal(err)
	}
	leaks := []string{secret}
	for _, enc := range encodings {
		leaks = append(leaks, enc(secret))
	}
	jsonSecret, _ := json.Marshal(secret)
	leaks = append(leaks, string(jsonSecret[1:len(jsonSecret)-1]))
	for _, ch := range chs {
		t.Run(ch.Name, func(t *testing.T) {
			v, err := c.Trigger(ch.Name, "o")
			if err != nil {
				t.Fatal(err)
			}
			if v.OK || !strings.Contains(v.Err, "***") && ch.Name != "token" {
				t.Errorf("err %q, want a failure showing the echoed secret as ***", v.Err)
			}
			if !strings.Contains(v.URL, "/echo/***/") && ch.Name != "header" && ch.Name != "token" {
				t.Errorf("url %q, want the secret path segment as ***", v.URL)
			}
			// The access_token is the secret itself: *** without its length
			// or a digest.
			if ch.Name == "token" && !strings.HasPrefix(v.Err, "json access_token: got ***,") {
				t.Errorf("err %q, want the access_token as ***", v.Err)
			}
			for _, l := range leaks {
				if strings.Contains(v.Err+"\n"+v.URL, l) {
					t.Errorf("verdict shows %q:\nerr %s\nurl %s", l, v.Err, v.URL)
				}
			}
		})
	}
}
