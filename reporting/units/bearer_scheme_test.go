package units

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Only the Bearer scheme (in any case, RFC 9110 §11.1) carries the token:
// another scheme followed by the right token is refused, also when the
// scheme and its spaces are exactly as long as "Bearer ".
func TestBearerSchemeRequired(t *testing.T) {
	const tok = "s3cret-token"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !BearerMatches(r, tok) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	for _, c := range []struct {
		header string
		want   int
	}{
		{"Bearer " + tok, 200},
		{"bearer " + tok, 200},
		{"BeArEr " + tok, 200},
		{"Token " + tok, 401},
		{"Token  " + tok, 401}, // "Token  " is as long as "Bearer "
		{"Basic " + tok, 401},
		{"Basic  " + tok, 401},
		{"Digest " + tok, 401},
		{"Bearer2 " + tok, 401},
		{"Bearer" + tok, 401},
		{tok, 401},
	} {
		req, err := http.NewRequest("GET", srv.URL+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", c.header)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Authorization: %q: %d, want %d", c.header, resp.StatusCode, c.want)
		}
	}
}
