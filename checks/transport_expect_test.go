package checks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestFailIfNotSSL: expect.fail_if_not_ssl fails a run whose final
// response came over plain http — an https:// page redirecting down to
// http:// — with cause protocol, naming the final URL without its query
// values; fail_if_ssl is the reverse. An https answer passes
// fail_if_not_ssl, a plain one passes fail_if_ssl.
func TestFailIfNotSSL(t *testing.T) {
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			http.Redirect(w, r, plain.URL+"/landing?sid=SidValue42", http.StatusFound)
		}
	}))
	defer secure.Close()
	ca := httptestCAFile(t, secure)

	cases := []struct {
		name        string
		url         string
		notSSL, ssl bool
		ok          bool
		got, err    string
	}{
		{"https answer, fail_if_not_ssl", secure.URL + "/", true, false, true, "TLS 1.3", ""},
		{"downgrade, fail_if_not_ssl", secure.URL + "/down", true, false, false, "plain http",
			"protocol: the final response (" + plain.URL + "/landing?sid=…) came over plain http, want TLS (expect.fail_if_not_ssl)"},
		{"plain answer, fail_if_ssl", plain.URL + "/", false, true, true, "plain http", ""},
		{"https answer, fail_if_ssl", secure.URL + "/", false, true, false, "TLS 1.3",
			"protocol: the final response (" + secure.URL + "/) came over TLS 1.3, want plain http (expect.fail_if_ssl)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := checks.NewHTTP(checks.HTTPSpec{URL: tc.url, FollowRedirects: true, TLS: checks.TLSOptions{CAFile: ca}},
				checks.Expect{FailIfNotSSL: tc.notSSL, FailIfSSL: tc.ssl}, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r := h.Run(context.Background(), checks.Target{})
			if r.OK != tc.ok || r.Err != tc.err {
				t.Fatalf("ok %v err %q, want ok %v err %q", r.OK, r.Err, tc.ok, tc.err)
			}
			if !tc.ok && r.Cause != checks.CauseProtocol {
				t.Errorf("cause %q, want protocol", r.Cause)
			}
			name := "fail_if_not_ssl"
			if tc.ssl {
				name = "fail_if_ssl"
			}
			if a := assertionNamed(r.Assertions, name); a == nil || a.Got != tc.got || a.OK != tc.ok {
				t.Errorf("assertion %s: %+v, want got %q ok %v (all: %+v)", name, a, tc.got, tc.ok, r.Assertions)
			}
			if strings.Contains(r.Err, "SidValue42") {
				t.Errorf("error shows the query value: %s", r.Err)
			}
		})
	}

	// Protocol comes before status: a downgrade to a 404 says downgrade.
	h, err := checks.NewHTTP(checks.HTTPSpec{URL: secure.URL + "/down", FollowRedirects: true, TLS: checks.TLSOptions{CAFile: ca}},
		checks.Expect{FailIfNotSSL: true, Status: checks.StatusList{"404"}}, checks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if r := h.Run(context.Background(), checks.Target{}); r.Cause != checks.CauseProtocol {
		t.Errorf("cause %q (%s), want protocol before status", r.Cause, r.Err)
	}
}

// TestFailIfSSLConfig: both keys at once is a config error naming them;
// tcp and tls checks do not use either.
func TestFailIfSSLConfig(t *testing.T) {
	e := checks.Expect{FailIfNotSSL: true, FailIfSSL: true}
	err := e.ValidateAndSetDefaults()
	if !errors.Is(err, checks.ErrConflict) || !strings.Contains(err.Error(), "fail_if_ssl: set either fail_if_ssl or fail_if_not_ssl, not both") {
		t.Errorf("err %v", err)
	}
	_, err = checks.NewTCP(checks.TCPSpec{}, checks.Expect{FailIfNotSSL: true}, checks.Options{})
	if !errors.Is(err, checks.ErrUnsupported) || !strings.Contains(err.Error(), "expect.fail_if_not_ssl: tcp checks do not use it") {
		t.Errorf("tcp: err %v", err)
	}
	_, err = checks.NewTLS(checks.TLSSpec{}, checks.Expect{NotHeaders: checks.HeaderMatchers{"Server": "x"}}, checks.Options{})
	if !errors.Is(err, checks.ErrUnsupported) || !strings.Contains(err.Error(), "expect.not_headers: tls checks do not use it") {
		t.Errorf("tls: err %v", err)
	}
}

// TestNotHeaders: expect.not_headers fails (cause header) when a header
// matches — a regex, an exact value, or present at all — and passes when
// it does not match or is missing. The value of a sensitive header is
// masked in got and in the error; the matcher judges the real value.
func TestNotHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "Apache/2.2.15 (CentOS)")
		w.Header().Set("X-Debug", "1")
		w.Header().Set("Set-Cookie", "session=AdminSess99; Path=/")
		w.Header().Set("Location", "/next?token=LocTok77")
	}))
	defer srv.Close()
	cases := []struct {
		header, matcher string
		ok              bool
		got, err        string
	}{
		{"Server", "~Apache/2\\.2", false, "Apache/2.2.15 (CentOS)", `header Server: "Apache/2.2.15 (CentOS)" matches ~Apache/2\.2 (not_headers)`},
		{"server", "~nginx", true, "Apache/2.2.15 (CentOS)", ""},
		{"X-Debug", "present", false, "1", `header X-Debug is present ("1"), want it missing (not_headers)`},
		{"X-Debug", "1", false, "1", `header X-Debug: got "1", which not_headers forbids`},
		{"X-Debug", "0", true, "1", ""},
		{"X-Powered-By", "present", true, "(absent)", ""},
		{"X-Powered-By", "~PHP", true, "(absent)", ""},
		{"Set-Cookie", "~session=Admin", false, "[masked: ", "header Set-Cookie: \"[masked: "},
		{"Location", "~token=LocTok", false, "/next?token=…", `header Location: "/next?token=…" matches ~token=LocTok (not_headers)`},
	}
	for _, tc := range cases {
		t.Run(tc.header+" "+tc.matcher, func(t *testing.T) {
			h, err := checks.NewHTTP(checks.HTTPSpec{}, checks.Expect{NotHeaders: checks.HeaderMatchers{tc.header: tc.matcher}}, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r := h.Run(context.Background(), checks.Target{URL: srv.URL})
			if r.OK != tc.ok {
				t.Fatalf("ok %v (%s %s), want %v", r.OK, r.Cause, r.Err, tc.ok)
			}
			if !tc.ok && (r.Cause != checks.CauseHeader || !strings.HasPrefix(r.Err, tc.err)) {
				t.Errorf("cause %q err %q, want header, %q", r.Cause, r.Err, tc.err)
			}
			a := assertionNamed(r.Assertions, "not_header "+http.CanonicalHeaderKey(tc.header))
			if a == nil || a.OK != tc.ok || !strings.HasPrefix(a.Got, tc.got) || a.Want != "not "+tc.matcher {
				t.Errorf("assertion %+v, want got %q… ok %v", a, tc.got, tc.ok)
			}
			for _, secret := range []string{"AdminSess99", "LocTok77"} {
				if strings.Contains(r.Err, secret) || a != nil && strings.Contains(a.Got, secret) {
					t.Errorf("%q shown: err %q got %q", secret, r.Err, a.Got)
				}
			}
		})
	}
}

// TestNotHeadersConfig: bad not_headers entries are config errors naming
// the key.
func TestNotHeadersConfig(t *testing.T) {
	for _, tc := range []struct {
		m    checks.HeaderMatchers
		want string
	}{
		{checks.HeaderMatchers{"X-Debug": "absent"}, `not_headers.X-Debug: "absent" would fail when the header is missing; write headers: {X-Debug: present}`},
		{checks.HeaderMatchers{"Server": "~Apache("}, `not_headers.Server: bad regex "Apache("`},
		{checks.HeaderMatchers{"Bad Name": "x"}, `not_headers.Bad Name: not a header name`},
	} {
		e := checks.Expect{NotHeaders: tc.m}
		if err := e.ValidateAndSetDefaults(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.m, err, tc.want)
		}
	}
}

// assertionNamed is the assertion called name, nil when there is none.
func assertionNamed(as []checks.AssertionResult, name string) *checks.AssertionResult {
	for i := range as {
		if as[i].Name == name {
			return &as[i]
		}
	}
	return nil
}
