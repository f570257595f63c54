package units

import (
	"net/http"
	"testing"
)

func TestBearerMatches(t *testing.T) {
	cases := []struct {
		header, token string
		want          bool
	}{
		{"Bearer s3cret-token", "s3cret-token", true},
		{"bearer s3cret-token", "s3cret-token", true}, // scheme is case-insensitive
		{"BEARER   s3cret-token  ", "s3cret-token", true},
		{"Bearer s3cret-tokeN", "s3cret-token", false}, // the token is not
		{"Bearer s3cret-token2", "s3cret-token", false},
		{"Bearer s3cret", "s3cret-token", false},
		{"Basic s3cret-token", "s3cret-token", false},
		{"s3cret-token", "s3cret-token", false},
		{"", "s3cret-token", false},
		{"Bearer ", "", false}, // no token configured: nothing matches
		{"", "", false},
	}
	for _, c := range cases {
		r, _ := http.NewRequest("POST", "http://127.0.0.1/", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		if got := BearerMatches(r, c.token); got != c.want {
			t.Errorf("Authorization %q, token %q: %v, want %v", c.header, c.token, got, c.want)
		}
	}
	if TokenMatches("", "") || !TokenMatches("x", "x") || TokenMatches("x", "y") {
		t.Error("TokenMatches")
	}
}
