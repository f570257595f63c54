package checktest

import (
	"bufio"
	"crypto/tls"
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
	return "http://" + rawOrigin(t, nil, serve)
}

// RawTLSOrigin is RawOrigin behind TLS with cfg: serve gets the decrypted
// connection. It returns the origin's https:// URL.
func RawTLSOrigin(t testing.TB, cfg *tls.Config, serve func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	return "https://" + rawOrigin(t, cfg, serve)
}

// rawOrigin runs RawOrigin's accept loop (behind TLS when cfg is set) and
// returns its address.
func rawOrigin(t testing.TB, cfg *tls.Config, serve func(c net.Conn, br *bufio.Reader)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	addr := ln.Addr().String()
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
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
	return addr
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
