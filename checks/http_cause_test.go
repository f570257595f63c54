package checks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"

	"github.com/vigil-synthetics/vigil/checks"
)

// An origin that breaks HTTP (redirect loop, oversized or malformed head,
// redirect to another scheme) fails the check with cause protocol, an
// assertion-class failure; internal was documented as "a bug".
func TestHTTPProtocolCauses(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/chain/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/chain/"), "%d", &n)
		http.Redirect(w, r, fmt.Sprintf("/chain/%d", n+1), http.StatusFound)
	})
	mux.HandleFunc("/ftp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "ftp://127.0.0.1/file")
		w.WriteHeader(http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	bigHead := checktest.CannedOrigin(t, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", 1<<20+10)+"\r\nContent-Length: 0\r\n\r\n")
	badStatus := checktest.CannedOrigin(t, "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n")

	cases := []struct {
		name, url, path string
		want            string
	}{
		{"redirect loop", srv.URL, "/loop", "protocol: redirect loop: stopped after 10 redirects"},
		{"long redirect chain", srv.URL, "/chain/0", "protocol: stopped after 10 redirects"},
		{"redirect to ftp", srv.URL, "/ftp", `protocol: redirected to an unsupported scheme "ftp"`},
		{"response head over 1 MiB", bigHead, "/", "protocol: server response headers exceeded 1048576 bytes"},
		{"malformed status line", badStatus, "/", "protocol: malformed HTTP status code"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := checks.NewHTTP(checks.HTTPSpec{Path: c.path, FollowRedirects: true}, checks.Expect{}, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res := h.Run(ctx, checks.Target{Name: "o", URL: c.url})
			if res.OK || res.Cause != checks.CauseProtocol || !strings.HasPrefix(res.Err, c.want) {
				t.Errorf("ok %v cause %q err %q; want cause protocol, err %q…", res.OK, res.Cause, res.Err, c.want)
			}
			if res.CouldNotRun() {
				t.Errorf("CouldNotRun() = true: a protocol failure is the origin's answer")
			}
		})
	}
}
