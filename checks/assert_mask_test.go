package checks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestSensitiveHeadersMasked runs header assertions against an origin that
// sends a session cookie and tokens: the assertions judge the real values,
// but no secret reaches got, want or the run's error.
func TestSensitiveHeadersMasked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "session=SESSIONSECRET123; HttpOnly")
		w.Header().Add("Set-Cookie", "pref=OTHERSECRET456")
		w.Header().Set("X-Api-Key", "KEYSECRET789")
		w.Header().Set("X-CSRF-Token", "CSRFSECRET000")
		w.Header().Set("Cache-Control", "max-age=60")
	}))
	defer srv.Close()
	h, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{Headers: map[string]string{
		"set-cookie":    "=nope",
		"x-api-key":     "~^KEYSECRET7", // passes: judged on the real value
		"x-csrf-token":  "absent",
		"cache-control": "=max-age=60", // not sensitive: got shows the value
	}}, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := h.Run(context.Background(), checks.Target{URL: srv.URL})
	if r.OK || r.Cause != checks.CauseHeader {
		t.Fatalf("ok=%v cause %q, want a header failure", r.OK, r.Cause)
	}
	got := map[string]checks.AssertionResult{}
	for _, a := range r.Assertions {
		got[a.Name] = a
	}
	masked := regexp.MustCompile(`^\[masked: (\d+) bytes, sha256:[0-9a-f]{8}\]$`)
	cookie := got["header Set-Cookie"]
	parts := regexp.MustCompile(`\[masked: [^]]*\]`).FindAllString(cookie.Got, -1)
	if cookie.OK || len(parts) != 2 || cookie.Got != parts[0]+", "+parts[1] || parts[0] == parts[1] {
		t.Fatalf("Set-Cookie got %q, want two distinct masked values", cookie.Got)
	}
	if m := masked.FindStringSubmatch(parts[0]); m == nil || m[1] != "34" { // len("session=SESSIONSECRET123; HttpOnly")
		t.Errorf("Set-Cookie got %q, want the length 34 of the first value", cookie.Got)
	}
	if a := got["header X-Api-Key"]; !a.OK || !masked.MatchString(a.Got) {
		t.Errorf("X-Api-Key: ok=%v got %q, want a pass with a masked got", a.OK, a.Got)
	}
	if a := got["header X-Csrf-Token"]; a.OK || !masked.MatchString(a.Got) {
		t.Errorf("X-CSRF-Token: ok=%v got %q, want a failure with a masked got", a.OK, a.Got)
	}
	if a := got["header Cache-Control"]; !a.OK || a.Got != "max-age=60" {
		t.Errorf("Cache-Control: ok=%v got %q, want a pass with the value shown", a.OK, a.Got)
	}
	if !strings.HasPrefix(r.Err, `header Set-Cookie: got "[masked: 34 bytes, sha256:`) {
		t.Errorf("error %q, want the masked Set-Cookie", r.Err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"SESSIONSECRET123", "OTHERSECRET456", "KEYSECRET789", "CSRFSECRET000"} {
		if strings.Contains(string(b)+r.Err, s) {
			t.Errorf("result leaks %s: %s", s, b)
		}
	}
}

// TestSensitiveJSONMasked: json assertions on values under sensitive keys
// (the same names as sensitive headers) show a masked got — judged on the
// real value — while other values are shown as they are.
func TestSensitiveJSONMasked(t *testing.T) {
	const (
		access  = "ACCESSSECRET-0123456789"
		apiKey  = "APIKEYSECRET-42"
		sess0   = "SESSIONSECRET-A"
		sess1   = "SESSIONSECRET-B"
		refresh = "REFRESHSECRET-77"
		pass    = "PASSWORDSECRET-9"
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"access_token": access,
			"user":         map[string]any{"name": "ann", "apiKey": apiKey, "roles": []any{"a", map[string]any{"Password": pass}}},
			"sessions":     []string{sess0, sess1},
			"data":         map[string]any{"refresh_token": refresh, "count": 3},
			"meta":         map[string]any{"region": "eu", "n": 1},
			"auth":         map[string]any{"session_id": nil, "expires": 60},
		})
	}))
	defer srv.Close()
	mask := checks.MaskValue // the digest is keyed per process
	cases := []struct {
		name, path string
		equals     any
		regex      string
		ok         bool
		got        string
	}{
		{"key named token", "access_token", "x", "", false, mask(access)},
		{"judged on the real value", "access_token", nil, "^ACCESSSECRET-", true, mask(access)},
		{"case-insensitive key", "user.apiKey", "x", "", false, mask(apiKey)},
		{"array under a sensitive key", "sessions", "x", "", false, mask(sess0) + ", " + mask(sess1)},
		{"element of a sensitive array", "sessions.1", "x", "", false, mask(sess1)},
		{"wildcard path, key read from the body", "data.refresh_tok*", "x", "", false, mask(refresh)},
		{"object with sensitive keys inside", "user", "x", "", false,
			`{"apiKey":"` + mask(apiKey) + `","name":"ann","roles":["a",{"Password":"` + mask(pass) + `"}]}`},
		{"not sensitive: shown", "user.name", "bob", "", false, `"ann"`},
		{"number: shown", "data.count", 4, "", false, `3`},
		{"object without sensitive keys: shown as sent", "meta", "x", "", false, `{"n":1,"region":"eu"}`},
		{"null under a sensitive key: shown", "auth", "x", "", false, `{"expires":60,"session_id":null}`},
		{"null at a sensitive path: shown", "auth.session_id", "x", "", false, `null`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{JSON: []checks.JSONExpect{
				{Path: tc.path, Equals: tc.equals, Regex: tc.regex}}}, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := h.Run(context.Background(), checks.Target{URL: srv.URL})
			if r.OK != tc.ok || len(r.Assertions) != 2 {
				t.Fatalf("ok=%v err %q assertions %+v, want ok=%v and status + json", r.OK, r.Err, r.Assertions, tc.ok)
			}
			a := r.Assertions[1]
			if a.OK != tc.ok || a.Got != tc.got {
				t.Errorf("json %s: ok=%v got %q, want ok=%v got %q", tc.path, a.OK, a.Got, tc.ok, tc.got)
			}
			if !tc.ok && !strings.HasPrefix(r.Err, "json "+tc.path+": got "+tc.got) {
				t.Errorf("error %q, want it to show got %q", r.Err, tc.got)
			}
			b, _ := json.Marshal(r)
			for _, s := range []string{access, apiKey, sess0, sess1, refresh, pass} {
				if strings.Contains(string(b), s) {
					t.Errorf("result leaks %s: %s", s, b)
				}
			}
		})
	}
}

// TestLoginTokenMasked: the test origin's POST /login answers
// {"token":"<32 hex>"}; a json assertion on it shows a masked got while a
// regex still judges the real token.
func TestLoginTokenMasked(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	h, err := checks.NewHTTP(checks.HTTPSpec{Method: "POST", Path: "/login",
		JSON: map[string]any{"user": checktest.DemoUser, "password": checktest.DemoPassword}},
		checks.Expect{JSON: []checks.JSONExpect{{Path: "token", Regex: "^[0-9a-f]{32}$"}, {Path: "token", Equals: 0}}},
		checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := h.Run(context.Background(), checks.Target{URL: o.URL()})
	if r.OK || r.Cause != checks.CauseJSON || len(r.Assertions) != 3 {
		t.Fatalf("ok=%v cause %q err %q, want the equals assertion to fail", r.OK, r.Cause, r.Err)
	}
	masked := regexp.MustCompile(`^\[masked: 32 bytes, sha256:[0-9a-f]{8}\]$`)
	if a := r.Assertions[1]; !a.OK || !masked.MatchString(a.Got) {
		t.Errorf("regex on token: ok=%v got %q, want a pass with a masked got", a.OK, a.Got)
	}
	if a := r.Assertions[2]; a.OK || a.Got != r.Assertions[1].Got {
		t.Errorf("equals on token: ok=%v got %q, want a failure with the same masked got", a.OK, a.Got)
	}
	if regexp.MustCompile(`[0-9a-f]{32}`).MatchString(r.Err) {
		t.Errorf("error shows the token: %q", r.Err)
	}
}
