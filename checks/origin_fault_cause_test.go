package checks_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// abortHandler promises 1000 bytes, sends 10 and aborts: over HTTP/2 the
// server resets the stream (RST_STREAM INTERNAL_ERROR), over HTTP/1.1 it
// closes the connection.
var abortHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "1000")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "0123456789")
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
})

// TestOriginFaultCauses: faults of the origin are never cause internal
// (documented as a bug in vigil). A response cut short is reset over
// HTTP/2 (TLS and h2c) as over HTTP/1.1; a head with two differing
// Content-Length headers is protocol.
func TestOriginFaultCauses(t *testing.T) {
	quiet := log.New(io.Discard, "", 0)
	h2tls := httptest.NewUnstartedServer(abortHandler)
	h2tls.EnableHTTP2 = true
	h2tls.Config.ErrorLog = quiet
	h2tls.StartTLS()
	defer h2tls.Close()
	ca := httptestCAFile(t, h2tls)

	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2c := httptest.NewUnstartedServer(abortHandler)
	h2c.Config.Protocols = &p
	h2c.Config.ErrorLog = quiet
	h2c.Start()
	defer h2c.Close()

	h1 := httptest.NewUnstartedServer(abortHandler)
	h1.Config.ErrorLog = quiet
	h1.Start()
	defer h1.Close()

	dupCL := checktest.CannedOrigin(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok")

	cases := []struct {
		name   string
		spec   checks.HTTPSpec
		url    string
		cause  checks.Cause
		errHas string
	}{
		{"h2 over TLS, stream reset mid-body", checks.HTTPSpec{HTTP2: checks.HTTP2Required, TLS: checks.TLSOptions{CAFile: ca}}, h2tls.URL,
			checks.CauseReset, "reading body: stream reset by the server (HTTP/2 RST_STREAM INTERNAL_ERROR) before the response was complete"},
		{"h2c, stream reset mid-body", checks.HTTPSpec{HTTP2: checks.HTTP2H2C}, h2c.URL,
			checks.CauseReset, "reading body: stream reset by the server (HTTP/2 RST_STREAM INTERNAL_ERROR)"},
		{"HTTP/1.1, connection closed mid-body", checks.HTTPSpec{}, h1.URL,
			checks.CauseReset, "reading body: connection closed by the server before the response was complete"},
		{"two Content-Length headers", checks.HTTPSpec{}, dupCL,
			checks.CauseProtocol, `protocol: http: message cannot contain multiple Content-Length headers; got ["2" "3"]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := checks.NewHTTP(c.spec, checks.Expect{}, checks.Options{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			r := h.Run(context.Background(), checks.Target{Name: "o", URL: c.url})
			if r.OK || r.Cause != c.cause || !strings.Contains(r.Err, c.errHas) {
				t.Errorf("ok %v cause %q err %q; want cause %s with %q", r.OK, r.Cause, r.Err, c.cause, c.errHas)
			}
		})
	}
}
