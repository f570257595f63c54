package checks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestRedirectLimit: follow_redirects follows a chain of exactly 10
// redirects (as README and blackbox_exporter say) and fails the 11th with
// cause protocol.
func TestRedirectLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Query().Get("n"), "%d", &n)
		if n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/many?n=%d", n-1), http.StatusFound)
			return
		}
		fmt.Fprint(w, "arrived")
	}))
	defer srv.Close()
	for _, c := range []struct {
		n    int
		ok   bool
		want string
	}{
		{9, true, ""},
		{10, true, ""},
		{11, false, "protocol: stopped after 10 redirects"},
	} {
		t.Run(fmt.Sprint(c.n), func(t *testing.T) {
			h, err := checks.NewHTTP(checks.HTTPSpec{Path: fmt.Sprintf("/many?n=%d", c.n), FollowRedirects: true},
				checks.Expect{Body: checks.BodyExpect{Contains: []string{"arrived"}}}, checks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r := h.Run(ctx, checks.Target{Name: "o", URL: srv.URL})
			if r.OK != c.ok {
				t.Fatalf("%d redirects: ok %v (cause %q, %s), want ok %v", c.n, r.OK, r.Cause, r.Err, c.ok)
			}
			if !c.ok && (r.Cause != checks.CauseProtocol || !strings.HasPrefix(r.Err, c.want)) {
				t.Errorf("%d redirects: cause %q err %q, want protocol %q", c.n, r.Cause, r.Err, c.want)
			}
		})
	}
}
