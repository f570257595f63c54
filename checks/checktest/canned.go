package checktest

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// RawOrigin is an origin on a loopback socket for tests that need bytes an
// HTTP server would not send: serve gets each accepted connection (with a
// 10s deadline) and a reader on it; the connection closes when serve
// returns. It returns the origin's http:// URL and stops when the test ends.
func RawOrigin(t testing.TB, serve func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// CannedOrigin is an origin on a loopback socket that reads each request's
// head and writes answer, raw bytes as they are (any HTTP, broken or not),
// then closes the connection. It returns the origin's http:// URL and stops
// when the test ends.
func CannedOrigin(t testing.TB, answer string) string {
	t.Helper()
	return RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				break
			}
		}
		io.WriteString(c, answer)
	})
}
