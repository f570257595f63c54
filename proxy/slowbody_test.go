package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestSlowContentLengthBodyFlows: an answer with a Content-Length whose
// body the origin sends slowly reaches the client as it comes: the first
// bytes the origin sent arrive at once, not when the body is complete (or
// 4 KiB are buffered), and a head whose body has not started goes out at
// once too, on the fast path and through Go's transport.
// Was: nothing reached the client until the whole body was in, and an
// origin that stalled mid-body kept the client waiting for body_timeout
// before it saw even the head.
func TestSlowContentLengthBodyFlows(t *testing.T) {
	origin := checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		head := "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n"
		if req.URL.Path == "/late" {
			c.Write([]byte(head))
			time.Sleep(2 * time.Second)
			c.Write([]byte("0123456789abcdefghij"))
			return
		}
		c.Write([]byte(head + "0123456789"))
		time.Sleep(2 * time.Second)
		c.Write([]byte("abcdefghij"))
	})
	type tcase struct {
		name, req string
		first     string // what must arrive within 1s
	}
	cases := []tcase{
		{"GET", "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n", "0123456789"},
		{"POST", "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nb", "0123456789"},
		{"GET head first", "GET /late HTTP/1.1\r\nHost: x\r\n\r\n", ""},
		{"POST head first", "POST /late HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nb", ""},
	}
	for _, engineName := range bothEngines {
		for _, tc := range cases {
			t.Run(engineName+"/"+tc.name, func(t *testing.T) {
				h := startWith(t, pool1(PolicyFirst, origin), nil, false, engineName)
				c, err := net.Dial("tcp", h.front.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				start := time.Now()
				c.SetDeadline(start.Add(time.Second))
				io.WriteString(c, tc.req)
				br := bufio.NewReader(c)
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("no 200 head within 1s (the origin sends its body 2s later): %v %v", resp, err)
				}
				got := make([]byte, len(tc.first))
				if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != tc.first {
					t.Fatalf("within 1s the client got %q (%v), want %q: what the origin sent at once", got, err, tc.first)
				}
				c.SetDeadline(time.Now().Add(4 * time.Second))
				rest, err := io.ReadAll(resp.Body)
				if all := string(got) + string(rest); err != nil || all != "0123456789abcdefghij" {
					t.Fatalf("whole body %q, %v", all, err)
				}
				if took := time.Since(start); took < 1900*time.Millisecond {
					t.Errorf("answer complete after %v, before the origin finished (2s)", took)
				}
			})
		}
	}
}
