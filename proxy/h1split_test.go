package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHeadLineAcrossBuffer: a field line longer than the reader's buffer
// arrives in pieces; when its last piece is "\r\n" or "\n" alone (a line of
// 4095 or 4096 bytes before its CRLF with the engine's 4 KiB reader, 16383 or
// 16384 with the origin reader's 16 KiB), that piece is not the empty line
// that ends the head. Taken for it, the fields after the long line were lost
// and read as the body or the next request: request smuggling behind any
// front proxy that reuses connections to vigil, and a desynchronised origin
// connection.
func TestHeadLineAcrossBuffer(t *testing.T) {
	for _, n := range []int{4094, 4095, 4096, 4097, 8191, 8192} {
		pad := "X-Pad: " + strings.Repeat("a", n-len("X-Pad: "))
		in := "POST / HTTP/1.1\r\nHost: a\r\n" + pad + "\r\nContent-Length: 5\r\n\r\nhelloGET /next HTTP/1.1\r\n"
		br := bufio.NewReaderSize(strings.NewReader(in), 4<<10)
		h := reqHead{header: http.Header{}}
		if err := readHead(br, 64<<10, &h); err != nil {
			t.Fatalf("line of %d: %v", n, err)
		}
		if h.contentLength != 5 || len(h.header["X-Pad"]) != 1 {
			t.Errorf("line of %d: Content-Length %d, X-Pad %d values: the head ended at the long line", n, h.contentLength, len(h.header["X-Pad"]))
		}
		if rest, _ := io.ReadAll(br); string(rest) != "helloGET /next HTTP/1.1\r\n" {
			t.Errorf("line of %d: left after the head %q", n, rest)
		}
	}
	for _, n := range []int{16382, 16383, 16384, 16385, 32768} {
		long := "X-Long: " + strings.Repeat("a", n-len("X-Long: "))
		in := "HTTP/1.1 200 OK\r\n" + long + "\r\nSet-Cookie: s=1\r\nContent-Length: 5\r\n\r\nhello"
		br := bufio.NewReaderSize(strings.NewReader(in), 16<<10)
		resp, err := readResponse(br, http.MethodGet, &respBuf{})
		if err != nil {
			t.Fatalf("line of %d: %v", n, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.ContentLength != 5 || resp.Header.Get("Set-Cookie") != "s=1" || string(body) != "hello" {
			t.Errorf("line of %d: Content-Length %d, Set-Cookie %q, body %q: the head ended at the long line",
				n, resp.ContentLength, resp.Header.Get("Set-Cookie"), body)
		}
	}
}

// TestSmugglingLongHeaderLine: end to end on the fast engine, a client
// whose field line is 4096 bytes gets its own request forwarded whole
// (headers after the long line, its body), and the next request on the
// same connection is the one it sent next. A front proxy reusing its
// connection to vigil used to have the following fields read as another
// request, which took the next client's headers (cookies) with it.
func TestSmugglingLongHeaderLine(t *testing.T) {
	type seen struct{ method, path, auth, body string }
	got := make(chan seen, 4)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.Path, r.Header.Get("Authorization"), string(b)}
		io.WriteString(w, "answer to "+r.URL.Path)
	}))
	defer origin.Close()
	h := startWith(t, pool1(PolicyFirst, origin.URL), nil, false, EngineFast)
	c, err := net.Dial("tcp", h.front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	pad := "X-Pad: " + strings.Repeat("a", 4096-len("X-Pad: "))
	io.WriteString(c, "POST /transfer HTTP/1.1\r\nHost: x\r\n"+pad+"\r\nAuthorization: Bearer t\r\nContent-Length: 5\r\n\r\nhello"+
		"GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	for _, want := range []seen{{"POST", "/transfer", "Bearer t", "hello"}, {"GET", "/second", "", ""}} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer to %s: %v", want.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != "answer to "+want.path {
			t.Fatalf("answer to %s: %d %q", want.path, resp.StatusCode, b)
		}
		if s := <-got; s != want {
			t.Errorf("origin saw %+v, want %+v", s, want)
		}
	}
}
