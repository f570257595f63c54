package checks_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestJSONGotHidesURLs: a failed expect.json shows the URLs in the value it
// got as every other message shows URLs (no userinfo, query values as …,
// no fragment), also inside objects and arrays and with slashes escaped as
// PHP writes them: a presigned link's signature or a callback's code was
// shown in full, where a failed expr step already hid it.
func TestJSONGotHidesURLs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"download":"https://bucket.example/f.zip?X-Amz-Signature=abc123secret&X-Amz-Expires=60",` +
			`"links":{"cb":"https:\/\/app.example\/cb?code=oauthcode999#access_token=tok777"},"n":3}`))
	}))
	defer srv.Close()
	for _, c := range []struct {
		j    checks.JSONExpect
		want string
	}{
		{checks.JSONExpect{Path: "download", Equals: "x"}, `json download: got "https://bucket.example/f.zip?X-Amz-Expires=…&X-Amz-Signature=…"`},
		{checks.JSONExpect{Path: "links", Equals: "x"}, `json links: got {"cb":"https://app.example/cb?code=…"}`},
	} {
		res := runHTTPWith(t, checks.HTTPSpec{}, checks.Expect{JSON: []checks.JSONExpect{c.j}}, srv.URL)
		if res.OK || !strings.HasPrefix(res.Err, c.want) {
			t.Errorf("%s: %q, want it to start %q", c.j.Path, res.Err, c.want)
		}
		for _, secret := range []string{"abc123secret", "oauthcode999", "tok777"} {
			if strings.Contains(res.Err, secret) {
				t.Errorf("%s: the message shows %s: %q", c.j.Path, secret, res.Err)
			}
		}
	}
}
