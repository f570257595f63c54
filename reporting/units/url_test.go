package units

import "testing"

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:9201":                   "http://127.0.0.1:9201",
		"https://bob:hunter2@origin.example/x":    "https://origin.example/x",
		"https://h/api?key=s3cret&tenant=t1#frag": "https://h/api?key=…&tenant=…",
		"http://[::1:bad/path?token=s3cret":       "http://[::1:bad/path…",
		"tcp://user:pw@127.0.0.1:1":               "tcp://127.0.0.1:1",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
