package proxy

import (
	"strconv"
	"testing"
)

// TestStdlibClosesAfterAmbiguousFraming: net/http (engine stdlib) serves a
// request with both Content-Length and Transfer-Encoding (chunked wins)
// and ignores Transfer-Encoding in HTTP/1.0. A front server that framed
// such a request by its Content-Length sent the bytes after the chunked
// body as part of it; they must not be read as the next request on the
// connection (CL.TE smuggling): the connection closes after the answer and
// the origin never sees the smuggled request (was: 200 twice, the second
// to the smuggled GET carrying the next client's headers).
func TestStdlibClosesAfterAmbiguousFraming(t *testing.T) {
	a := newBackend(t, "a")
	h := startWith(t, pool1(PolicyFirst, a.srv.URL), nil, false, EngineStdlib)
	smuggled := "GET /smuggled HTTP/1.1\r\nHost: x\r\nX-Ignore: "
	victim := "GET /victim HTTP/1.1\r\nHost: x\r\nCookie: session=VICTIM\r\n\r\n"
	body := "0\r\n\r\n" + smuggled
	for _, tc := range []struct{ name, req string }{
		{"CL and TE", "POST /front HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(body)) +
			"\r\nTransfer-Encoding: chunked\r\n\r\n" + body + victim},
		{"TE alone", "POST /front HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body + victim},
		{"TE in HTTP/1.0", "POST /front HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" + body + victim},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := a.hits.Load()
			resps, _, closed := rawExchange(t, h, tc.req)
			if len(resps) != 1 {
				t.Fatalf("%d answers on the connection, want 1 (the bytes after the body read as a request)", len(resps))
			}
			if !closed {
				t.Error("the connection stayed open after a request net/http framed by Transfer-Encoding")
			}
			if n := a.hits.Load() - before; n != 1 {
				t.Errorf("the origin saw %d requests, want 1 (the smuggled one too)", n)
			}
		})
	}
}
