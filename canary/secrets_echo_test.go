package canary

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/scripts"
)

// TestLiteralRequestCredentialsAreSecrets: credentials written as they
// are in a query string (http.path's, http.query), a json body (at any
// depth) or a form body, under a sensitive name, are secrets like a
// sensitive header's value: an origin echoing the request shows them as
// *** in the verdict's error. So is a script variable the script sends as
// a sensitive query parameter, json or form field. Values under other
// names are shown.
func TestLiteralRequestCredentialsAreSecrets(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/issue" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"value": "ScriptTokVal5551"}`)
			return
		}
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<12))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"uri": r.URL.RequestURI(), "body": string(b)})
	}))
	defer origin.Close()

	// Fails on purpose: the assertion quotes what the origin echoed.
	echoed := func(field string) *checks.Expect {
		return &checks.Expect{JSON: []checks.JSONExpect{{Path: field, Equals: "nothing"}}}
	}
	step := func(h checks.HTTPSpec, e *checks.Expect) scripts.Step { return scripts.Step{HTTP: &h, Expect: e} }
	issue := scripts.Step{HTTP: &checks.HTTPSpec{Path: "/issue"}, Extract: map[string]scripts.Extract{"t": {JSON: "value"}}}
	chs := []CheckConfig{
		{Name: "path_query", HTTP: &checks.HTTPSpec{Path: "/json?access_token=QueryTokLit3333&x=1"}, Expect: echoed("uri")},
		{Name: "query", HTTP: &checks.HTTPSpec{Path: "/q", Query: map[string]string{"api_key": "LiteralQueryKey1234", "page": "PlainPage22"}}, Expect: echoed("uri")},
		{Name: "json", HTTP: &checks.HTTPSpec{Method: "POST", Path: "/j", JSON: map[string]any{
			"password": "LiteralJsonPw5678", "client_secret": "LiteralClientSecret99",
			"user": map[string]any{"name": "PlainUserName", "credentials": []any{"DeepCredVal4444"}, "pin_token": 987654}}}, Expect: echoed("body")},
		{Name: "form", HTTP: &checks.HTTPSpec{Method: "POST", Path: "/f", Form: map[string]string{"password": "LiteralFormPw4321", "user": "PlainFormUser"}}, Expect: echoed("body")},
		{Name: "script_query", Script: scripts.Script{issue, step(checks.HTTPSpec{Path: "/s", Query: map[string]string{"access_token": "${t}"}}, echoed("uri"))}},
		{Name: "script_path", Script: scripts.Script{issue, step(checks.HTTPSpec{Path: "/s?client_secret=${t}"}, echoed("uri"))}},
		{Name: "script_json", Script: scripts.Script{issue, step(checks.HTTPSpec{Method: "POST", Path: "/s", JSON: map[string]any{"auth": map[string]any{"password": "${t}"}}}, echoed("body"))}},
		{Name: "script_form", Script: scripts.Script{issue, step(checks.HTTPSpec{Method: "POST", Path: "/s", Form: map[string]string{"refresh_token": "${t}"}}, echoed("body"))}},
		// A variable sent under a name that is not sensitive stays visible.
		{Name: "script_plain", Script: scripts.Script{issue, step(checks.HTTPSpec{Path: "/s", Query: map[string]string{"page": "${t}"}}, echoed("uri"))}},
	}
	for i := range chs {
		chs[i].Targets, chs[i].Fall, chs[i].Interval, chs[i].Timeout = []string{"o"}, 1, time.Hour, 5*time.Second
	}
	cfg := testConfig(t, map[string]string{"o": origin.URL}, chs...)
	// The config's redactor, as the agent and vigil check build it.
	var red checks.Redactor
	for _, s := range cfg.Secrets() {
		if len(s) >= 3 {
			red.Add(s)
		}
	}
	c, err := New(cfg, compile(t, cfg), Options{Log: testLog(t), Redact: red.Redact})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		check         string
		hidden, shown []string
	}{
		{"path_query", []string{"QueryTokLit3333"}, []string{"x=1"}},
		{"query", []string{"LiteralQueryKey1234"}, []string{"PlainPage22"}},
		{"json", []string{"LiteralJsonPw5678", "LiteralClientSecret99", "DeepCredVal4444", "987654"}, []string{"PlainUserName"}},
		{"form", []string{"LiteralFormPw4321"}, []string{"PlainFormUser"}},
		{"script_query", []string{"ScriptTokVal5551"}, nil},
		{"script_path", []string{"ScriptTokVal5551"}, nil},
		{"script_json", []string{"ScriptTokVal5551"}, nil},
		{"script_form", []string{"ScriptTokVal5551"}, nil},
		{"script_plain", nil, []string{"ScriptTokVal5551"}},
	} {
		t.Run(tc.check, func(t *testing.T) {
			v, err := c.Trigger(tc.check, "o")
			if err != nil {
				t.Fatal(err)
			}
			if v.OK || !strings.Contains(v.Err, "got ") {
				t.Fatalf("err %q, want the failed assertion quoting the echo", v.Err)
			}
			shown := v.Err + "\n" + v.URL
			for _, s := range tc.hidden {
				if strings.Contains(shown, s) {
					t.Errorf("the verdict shows %q:\n%s", s, shown)
				}
			}
			// A script shows a secret of its run as [redacted].
			if len(tc.hidden) > 0 && !strings.Contains(v.Err, "***") && !strings.Contains(v.Err, "[redacted]") {
				t.Errorf("err %q, want the credential as *** or [redacted]", v.Err)
			}
			for _, s := range tc.shown {
				if !strings.Contains(shown, s) {
					t.Errorf("the verdict hides %q, which is no credential:\n%s", s, shown)
				}
			}
		})
	}
}
