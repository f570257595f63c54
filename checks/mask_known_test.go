package checks_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestMaskedKnownSecret: a configured secret an origin echoes under a
// sensitive JSON key shows as *** (not its length and a digest one could
// check a guess against), and an origin's own value under a sensitive key
// shows a digest keyed per process: not the SHA-256 of the value, the same
// for the same value.
func TestMaskedKnownSecret(t *testing.T) {
	const bearer, cookie, issued = "BearerSecretAAAA1111", "CookieSecretCCCC3333", "OriginTok-1234567"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{
			"authorization": r.Header.Get("Authorization"), "cookie": r.Header.Get("Cookie"), "access_token": issued,
		})
	}))
	defer srv.Close()
	// The config loader's redactor, which knows the ${NAME} values.
	red := &checks.Redactor{}
	red.Add(bearer)
	red.Add(cookie)
	h, err := checks.NewHTTP(checks.HTTPSpec{Headers: map[string]string{"Authorization": "Bearer " + bearer, "Cookie": "sid=" + cookie}},
		checks.Expect{JSON: []checks.JSONExpect{{Path: "authorization", Equals: "x"}, {Path: "cookie", Equals: "y"}, {Path: "access_token", Equals: "z"}}},
		checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	res := h.Run(context.Background(), checks.Target{URL: srv.URL})
	got := map[string]string{}
	for _, a := range res.Assertions {
		got[a.Name] = red.Redact(a.Got) // as vigil shows it
	}
	runtime.KeepAlive(red)
	for _, name := range []string{"json authorization", "json cookie"} {
		if got[name] != checks.Redacted {
			t.Errorf("%s: got %q, want %q", name, got[name], checks.Redacted)
		}
	}
	sum := sha256.Sum256([]byte(issued))
	g := got["json access_token"]
	if !strings.HasPrefix(g, "[masked: 17 bytes, sha256:") || strings.Contains(g, hex.EncodeToString(sum[:4])) {
		t.Errorf("json access_token: got %q, want the length and a keyed digest, not the value's SHA-256 %x", g, sum[:4])
	}
	if m := checks.MaskValue(issued); g != m {
		t.Errorf("json access_token: got %q, MaskValue gives %q: the same value must give the same digest", g, m)
	}
}
