package units

import "testing"

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:9201":                   "http://127.0.0.1:9201",
		"https://bob:hunter2@origin.example/x":    "https://origin.example/x",
		"https://h/api?key=s3cret&tenant=t1#frag": "https://h/api?key=…&tenant=…",
		"http://[::1:bad/path?token=s3cret":       "http://[::1:bad/path…",
		"tcp://user:pw@127.0.0.1:1":               "tcp://127.0.0.1:1",
		"/users/@me?token=s3cret":                 "/users/@me?token=…",

		// Not a URL with a host: the shape stays, the userinfo is hidden.
		"http//u:litpwA1@127.0.0.1:8080/":      "http//u:…@127.0.0.1:8080/",
		"https//u:litpwA2@127.0.0.1/?k=s3cret": "https//u:…@127.0.0.1/?k=…",
		"http:/u:litpwA3@127.0.0.1/":           "http:/u:…@127.0.0.1/",
		"http:u:litpwA4@127.0.0.1/":            "http:u:…@127.0.0.1/",
		"http///u:litpwA5@127.0.0.1/":          "http///u:…@127.0.0.1/",
		"http://u:litpwA6@/path":               "http://u:…@/path",
		"http//tok3nlit@127.0.0.1/":            "http//…@127.0.0.1/",
		"http//u:pa/ss:w@rd@127.0.0.1/":        "http//u:…@127.0.0.1/",
		"http//x/u:litpwA7@127.0.0.1/":         "http//…@127.0.0.1/",
		"u:litpwA8@127.0.0.1:80":               "u:…@127.0.0.1:80",
		"1u:litpwA9@127.0.0.1/":                "1u:…@127.0.0.1/",
		"http://u:litpwB1@[::1:bad/?k=v":       "http://u:…@[::1:bad/…",
		"http//u:lit%zzpwB2@127.0.0.1/":        "http//u:…@127.0.0.1/",
		"ftp//vfu:vfpwC2@127.0.0.1:27192/":     "ftp//vfu:…@127.0.0.1:27192/",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
