package checks_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestHTTP2FitsURL: the scheme conflicts of http2 (required on http://,
// h2c on https://) are errors naming the key for any URL the check
// requests, not only http.url.
func TestHTTP2FitsURL(t *testing.T) {
	cases := []struct {
		mode, url, want string
	}{
		{"required", "http://127.0.0.1:8080/", "http2: required needs an https:// url (h2 is negotiated by TLS ALPN; plain http:// speaks HTTP/1.1)"},
		{"h2c", "HTTPS://127.0.0.1:8443/", "http2: h2c is HTTP/2 over plain http://; an https:// url negotiates h2 with auto or required"},
		{"required", "https://127.0.0.1:8443/", ""},
		{"h2c", "http://127.0.0.1:8080/", ""},
		{"auto", "http://127.0.0.1:8080/", ""},
		{"off", "https://127.0.0.1:8443/", ""},
	}
	for _, c := range cases {
		// As written in a file (before ValidateAndSetDefaults normalises it).
		spec := checks.HTTPSpec{HTTP2: " " + strings.ToUpper(c.mode)}
		err := spec.HTTP2Fits(c.url)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s on %s: %v, want no error", c.mode, c.url, err)
		case c.want != "" && (err == nil || err.Error() != c.want || !errors.Is(err, checks.ErrConflict)):
			t.Errorf("%s on %s: %v, want %q", c.mode, c.url, err, c.want)
		}
	}
}

// TestH2COnHTTPSTarget: an h2c check run against an https:// target never
// passes over HTTP/1.1: the run fails at once naming http.http2, and the
// origin gets no request.
func TestH2COnHTTPSTarget(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	h, err := checks.NewHTTP(checks.HTTPSpec{HTTP2: checks.HTTP2H2C, TLS: checks.TLSOptions{InsecureSkipVerify: true}}, checks.Expect{}, checks.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r := h.Run(context.Background(), checks.Target{Name: "tls", URL: srv.URL})
	want := "http.http2: h2c is HTTP/2 over plain http://, but this run's URL is https:// (use auto or required to negotiate h2 over TLS)"
	if r.OK || r.Cause != checks.CauseInternal || r.Err != want || hits.Load() != 0 {
		t.Fatalf("ok %v cause %q err %q, %d requests; want cause internal %q and no request", r.OK, r.Cause, r.Err, hits.Load(), want)
	}
}
