package checks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// bodyOrigin answers every path with the body in its ?b= query, and the
// paths below with fixed bodies.
func bodyOrigin(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/long":
			w.Write([]byte(strings.Repeat("0123456789", 20)))
		case "/secret":
			w.Write([]byte(strings.Repeat("x", 75) + "SeCrEt-value-123 and more"))
		case "/token":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"access_token":"tok-12345678","status":"down"}`))
		default:
			w.Write([]byte(r.URL.Query().Get("b")))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func runBody(t *testing.T, base, path string, e checks.Expect) checks.Result {
	t.Helper()
	h, err := checks.NewHTTP(checks.HTTPSpec{Path: path}, e, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	return h.Run(context.Background(), checks.Target{URL: base})
}

// body.regex: $ also matches before one final line break (as PCRE and
// Python read it), and a failure shows the start of the body.
func TestBodyRegexTrailingNewlineAndExcerpt(t *testing.T) {
	base := bodyOrigin(t)
	tests := []struct {
		name, path, re string
		got            string // the assertion's got
	}{
		{"ok with newline", "/?b=ok%0A", "^ok$", "match"},
		{"ok with CRLF", "/?b=ok%0D%0A", "^ok$", "match"},
		{"ok without newline", "/?b=ok", "^ok$", "match"},
		{"an explicit newline still matches", "/?b=ok%0A", `^ok\n$`, "match"},
		{"two newlines", "/?b=ok%0A%0A", "^ok$", `no match in "ok\n\n"`},
		{"other body", "/?b=okay%0A", "^ok$", `no match in "okay\n"`},
		{"empty body", "/?b=", "^ok$", `no match in (empty body)`},
		{"long body is cut at 80 bytes", "/long", "^ok$",
			`no match in "` + strings.Repeat("0123456789", 8) + `…" (200 bytes)`},
		{"sensitive JSON values masked", "/token", `"status":"up"`,
			`no match in "{\"access_token\":\"[masked: 12 bytes, sha256:`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runBody(t, base, tc.path, checks.Expect{Body: checks.BodyExpect{Regex: []string{tc.re}}})
			if len(res.Assertions) < 2 {
				t.Fatalf("assertions %+v", res.Assertions)
			}
			a := res.Assertions[1]
			if a.Name != "body regex ~"+tc.re || !strings.HasPrefix(a.Got, tc.got) || a.Want != "match" {
				t.Errorf("assertion %s: got %q, want %q", a.Name, a.Got, tc.got)
			}
			if pass := tc.got == "match"; res.OK != pass || (!pass && res.Cause != checks.CauseBody) {
				t.Errorf("run ok %v cause %q err %q", res.OK, res.Cause, res.Err)
			}
			if strings.Contains(a.Got, "tok-12345678") {
				t.Errorf("got shows a sensitive value: %s", a.Got)
			}
		})
	}
}

// A secret from the config that the excerpt cuts is still hidden by the
// redactor every got passes through.
func TestBodyExcerptSecretCut(t *testing.T) {
	res := runBody(t, bodyOrigin(t), "/secret", checks.Expect{Body: checks.BodyExpect{Regex: []string{"^ok$"}}})
	got := res.Assertions[1].Got
	if !strings.Contains(got, "SeCrE…") {
		t.Fatalf("got %q: the excerpt does not end in the secret's start", got)
	}
	var red checks.Redactor
	red.Add("SeCrEt-value-123")
	if r := red.Redact(got); strings.Contains(r, "SeCrE") {
		t.Errorf("redacted got %q still shows the secret's start", r)
	}
}
