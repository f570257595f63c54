package proxy

import (
	"bytes"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// headConn is an HTTP/1 origin connection of a pool's http.Transport that
// keeps the Connection field of the answer heads it reads. Go's transport
// deletes an answer's whole Connection header when it holds "close"
// (net/http shouldClose) before the proxy sees it, so the fields it names
// (`Connection: close, X-Hop`) would reach the client, where the fast path
// drops them (RFC 9110 §7.6.1). The try arms the connection when the
// transport gives it (httptrace GotConn, before the request is written);
// the head of the next final answer (interim 1xx ones skipped) is read
// again here from the bytes the transport reads, and its Connection values
// are put back into the answer's header (restoreConnection).
type headConn struct {
	net.Conn
	capturing atomic.Bool // armed and the final head not read whole yet

	mu   sync.Mutex
	buf  []byte   // the bytes of the head read so far
	vals []string // the Connection values of the final head read
	done bool     // vals are the head's
}

func (c *headConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.capturing.Load() {
		c.scan(p[:n])
	}
	return n, err
}

// CloseWrite half-closes the connection when the wrapped one can.
func (c *headConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// arm starts reading the next answer's head.
func (c *headConn) arm() {
	c.mu.Lock()
	c.buf, c.vals, c.done = c.buf[:0], nil, false
	c.mu.Unlock()
	c.capturing.Store(true)
}

// scan takes bytes the transport read while armed.
func (c *headConn) scan(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.capturing.Load() {
		return
	}
	c.buf = append(c.buf, b...)
	for {
		head, rest, ok := cutHead(c.buf)
		if !ok {
			if len(c.buf) > maxResponseHead+4 {
				// The transport refuses it (502); nothing to keep.
				c.capturing.Store(false)
				c.buf = nil
			}
			return
		}
		if interimHead(head) {
			c.buf = append(c.buf[:0], rest...)
			continue
		}
		c.vals, c.done = connectionValues(head), true
		c.capturing.Store(false)
		c.buf = c.buf[:0]
		return
	}
}

// connection returns the Connection values of the final answer head read
// since arm; ok is false when none was read whole.
func (c *headConn) connection() (vals []string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.vals, c.done
}

// cutHead splits b after the end of its first head (the empty line, CRLF
// or a bare LF as Go's reader takes it).
func cutHead(b []byte) (head, rest []byte, ok bool) {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return b[:i+1], b[i+2:], true
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return b[:i+1], b[i+3:], true
		}
	}
	return nil, nil, false
}

// interimHead reports whether a head is an interim (1xx) answer's, one a
// final answer follows: every 1xx but 101.
func interimHead(head []byte) bool {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	_, code, _ := bytes.Cut(line, []byte(" "))
	return len(code) >= 3 && code[0] == '1' && !bytes.HasPrefix(code, []byte("101"))
}

// connectionValues returns the values of a head's Connection fields (a
// value continued on the next line, obs-fold, joined as Go's reader does).
func connectionValues(head []byte) []string {
	var out []string
	inConn := false
	for i, line := range strings.Split(string(head), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if i == 0 || line == "" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if inConn {
				out[len(out)-1] = strings.TrimSpace(out[len(out)-1] + " " + strings.TrimSpace(line))
			}
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		inConn = ok && strings.EqualFold(strings.TrimSpace(name), "Connection")
		if inConn {
			out = append(out, strings.TrimSpace(value))
		}
	}
	return out
}

// restoreConnection puts back into an HTTP/1.1 answer's header the
// Connection field Go's transport deleted for its "close" (see headConn),
// so copyHeaders and trailerAllowed drop the fields it names as the fast
// path does.
func restoreConnection(resp *http.Response, hc *headConn) {
	if hc == nil || resp == nil || !resp.Close || resp.ProtoMajor != 1 || resp.ProtoMinor < 1 {
		return
	}
	if _, ok := resp.Header["Connection"]; ok {
		return
	}
	if vals, ok := hc.connection(); ok && len(vals) > 0 {
		resp.Header["Connection"] = vals
	}
}
