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
