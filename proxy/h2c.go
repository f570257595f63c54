package proxy

import (
	"bufio"
	"net"
	"sync"
)

// h2cPreface opens every HTTP/2 connection (RFC 9113 §3.4); a client with
// prior knowledge of HTTP/2 sends it first on a plain TCP connection.
const h2cPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// isH2CPreface reports whether br's next bytes are the HTTP/2 preface. It
// reads (waits) only while they could still be: an HTTP/1 request line
// differs within its first bytes.
func isH2CPreface(br *bufio.Reader) bool {
	for n := 1; ; {
		b, err := br.Peek(n)
		if err != nil || string(b) != h2cPreface[:n] {
			return false
		}
		if n == len(h2cPreface) {
			return true
		}
		n = max(n+1, min(br.Buffered(), len(h2cPreface)))
	}
}

// prefixConn is a connection whose first bytes were read into br: reads
// take them from br first. It hands a connection the fast engine began
// reading to net/http's HTTP/2 server.
type prefixConn struct {
	net.Conn
	br *bufio.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.br != nil {
		if c.br.Buffered() > 0 {
			return c.br.Read(p)
		}
		c.br = nil
	}
	return c.Conn.Read(p)
}

// connQueue is a net.Listener fed with connections by push: net/http serves
// the plain listener's HTTP/2 (h2c) connections from it.
type connQueue struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// push hands c to the server; false (c is closed) once the queue is closed.
func (q *connQueue) push(c net.Conn) bool {
	select {
	case q.conns <- c:
		return true
	case <-q.done:
		c.Close()
		return false
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: q.addr, Err: net.ErrClosed}
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }
