package checks_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestTimeoutMessageQuotesTimeout: a run stopped at the check's timeout
// quotes the timeout configured ("within 300ms"), not the time measured a
// moment later, in http, tcp and tls checks, with the run's context
// bounded by the same timeout as the canary bounds it.
func TestTimeoutMessageQuotesTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) }) // first: lets the handlers return
	silent := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
	})
	silentAddr := strings.TrimPrefix(silent, "http://")

	opts := checks.Options{Timeout: timeout}
	newHTTP := func(path string) checks.Check {
		h, err := checks.NewHTTP(checks.HTTPSpec{Path: path}, checks.Expect{Body: checks.BodyExpect{Contains: []string{"done"}}}, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	tcp, err := checks.NewTCP(checks.TCPSpec{Expect: "220"}, checks.Expect{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tlsc, err := checks.NewTLS(checks.TLSSpec{}, checks.Expect{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		check checks.Check
		url   string
		want  string
	}{
		{"http, no response", newHTTP("/head"), slow.URL, "timeout: no response within 300ms"},
		{"http, body not complete", newHTTP("/body"), slow.URL, "timeout: response not complete within 300ms"},
		{"tcp, nothing received", tcp, "tcp://" + silentAddr, "timeout: no response within 300ms"},
		{"tls, no handshake", tlsc, "tls://" + silentAddr, "tls: handshake not finished within 300ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			r := c.check.Run(ctx, checks.Target{Name: "slow", URL: c.url})
			if r.OK || !strings.HasPrefix(r.Err, c.want) {
				t.Errorf("ok %v cause %q err %q, want %q", r.OK, r.Cause, r.Err, c.want)
			}
		})
	}
}
