package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// On engine stdlib, net/http reads the request heads of the HTTP/1
// connections it serves (the refusalConns of both listeners, refused.go)
// and, when a client stalls or leaves in the middle of one, ends the
// connection without telling anyone. The fast engine counts such
// connections in vigil_proxy_client_connections_cut_total and writes an
// access log line for each (h1server.go cutHead, accesslog.go writeCut);
// headWatch gives net/http's connections the same.
//
// A connection's reads between requests (until net/http reports a
// request's head read, StateActive, and from when it reports the
// connection idle again) are the next head's: the first byte of them is when the head began, and
// the read error that ends them says why it ended: a deadline
// (read_header_timeout, or idle_timeout for a kept-alive connection's next
// head) or the client closing or resetting the connection. net/http reports
// the connection closed (ConnState) without calling the handler; with
// bytes of a head received it is cut off in the head (header_timeout,
// closed_in_head) and gets the fast engine's line, and without it is
// no_request or idle, counted only, as on the fast engine.
//
// A head cut off in the middle of a line makes net/http parse the partial
// line as a whole one (bufio.Reader.ReadLine returns it without the error)
// and answer 400 "malformed MIME header line" to a client that was only
// slow or gone. That answer is dropped, not counted as a refusal: the fast
// engine sends none either.
//
// Two more rules of the fast engine are kept here, around net/http:
//
//   - read_header_timeout runs from the first byte of a kept-alive
//     connection's next head. net/http waits for that head with
//     idle_timeout until it holds 4 bytes of it, and only then gives the
//     rest read_header_timeout (server.go, conn.serve: bufr.Peek(4)), so a
//     client sending 1 to 3 bytes and stalling would hold the connection
//     for idle_timeout (slowloris). The head's first byte moves the read
//     deadline to read_header_timeout from it, and the deadline net/http
//     sets once it has the 4 bytes is held to it (SetReadDeadline).
//   - Empty lines before a request line are ignored (RFC 9112 §2.2, the
//     fast engine's readHead); net/http answers 400 to one (but for the CRLF
//     old clients send after a POST body). They are taken out of the stream
//     before net/http reads them, where it is known that net/http holds no
//     unread byte of the connection (at a head's start): on a new
//     connection, after a request without a body whose head ended exactly
//     at the end of a read, and after net/http reads a kept-alive
//     connection's next head into an empty buffer. Elsewhere (pipelined
//     requests, or empty lines sent while a request with a body is
//     answered) the bytes pass as they came.
type headWatch struct {
	mu     sync.Mutex
	served bool      // a request was read whole on the connection
	h2c    bool      // the connection began with the HTTP/2 preface (h2c)
	start  time.Time // when the head began: its first byte, an empty line's too (zero: none yet)
	got    int       // the head's bytes received, not counting empty lines before it
	err    error     // the read error that ended the head
	byte1  time.Time // when net/http's background read took the next head's first byte (zero: it did not)
	got1   bool      // that read gave net/http a byte of the head, not only empty lines

	// read_header_timeout on a kept-alive connection's next head.
	timeout time.Duration // read_header_timeout (0: none)
	idleAt  time.Time     // when the connection last went idle
	first   bool          // net/http's first read of the next head is to come (Peek(4), waiting)
	waiting int           // net/http's SetReadDeadline calls to come before it reads the head
	dl      time.Time     // the read deadline net/http set last while waiting
	by      time.Time     // the head's read deadline: its start + timeout (zero: none)

	// Empty lines before a head.
	mid      bool        // net/http may hold unread bytes, or a head began: no skipping
	cr       bool        // a CR that may begin an empty line was held back
	carry    []byte      // a byte held back, given before the connection is read again
	scan     uint8       // where in the head its end is looked for (headEnd*)
	exact    bool        // the head ended at the end of a read, and nothing came after it
	hijacked bool        // the handler took the connection (a tunnel)
	req      atomic.Bool // net/http read a request's head and serves it (StateActive to StateIdle)
	body     atomic.Bool // bytes of its body came: net/http may hold some
	closed   atomic.Bool // the connection lingers (linger was called)
}

// netHTTPReadBuf is the size of net/http's buffered reader of an HTTP/1
// connection (server.go newBufioReader: bufio.NewReader). Between requests
// it reads the connection into what of it is empty, so a read of less
// means it holds bytes of the next head already (pipelined).
const netHTTPReadBuf = 4096

// Where in a head its end (an empty line) is looked for.
const (
	headEndLine = iota // in a line
	headEndLF          // after a line's LF
	headEndCR          // after a line's LF and a CR
	headEndDone        // the head ended
)

// Read is the connection's Read, watching the reads of request heads.
func (c *refusalConn) Read(p []byte) (int, error) {
	inReq := c.head.req.Load()
	if inReq && len(p) != 1 {
		// The body of the request being answered, or a tunnel's bytes.
		n, err := c.sendTimeoutConn.Read(p)
		if n > 0 && !c.head.body.Load() {
			c.head.body.Store(true)
		}
		return n, err
	}
	// A head, or net/http's background read while it serves a request:
	// one byte it keeps for the next request's head (a client quick to
	// send it). The background read begins before the handler is called
	// (answering), so it is told by the connection's state.
	return c.readHead(p, inReq)
}

// readHead reads bytes of a request head into p; bg is net/http's
// background read.
func (c *refusalConn) readHead(p []byte, bg bool) (int, error) {
	w := &c.head
	w.mu.Lock()
	if bg && (w.h2c || w.hijacked) {
		w.mu.Unlock()
		return c.sendTimeoutConn.Read(p)
	}
	var arm time.Time // a deadline to set before reading
	if w.first && !bg && w.waiting > 0 {
		// net/http's Peek of the head's first 4 bytes (see deadline).
		w.first = false
		switch {
		case len(p) < netHTTPReadBuf && w.start.IsZero():
			// net/http holds bytes of the next head, read with the last
			// request: the head began as the connection went idle.
			w.start, w.got = w.idleAt, netHTTPReadBuf-len(p)
			if arm = w.begin(w.idleAt); !w.dl.IsZero() && !arm.Before(w.dl) {
				arm = time.Time{}
			}
		case len(p) == netHTTPReadBuf && !w.got1:
			w.mid = false
		}
	}
	if len(w.carry) > 0 && len(p) > 0 {
		n := copy(p, w.carry)
		w.carry = w.carry[n:]
		w.took(p[:n], bg)
		if !bg {
			w.read(p[:n], nil)
		}
		w.mu.Unlock()
		return n, nil
	}
	if bg && w.exact && !w.body.Load() {
		w.mid = false // net/http read the head to its end and no further
	}
	w.mu.Unlock()
	if !arm.IsZero() {
		c.sendTimeoutConn.Conn.SetReadDeadline(arm)
	}
	for {
		n, err := c.sendTimeoutConn.Read(p)
		w.mu.Lock()
		if n > 0 && bg && w.byte1.IsZero() {
			w.byte1 = time.Now()
		} else if n > 0 && !bg && w.start.IsZero() {
			w.start = time.Now()
			if by := w.begin(w.start); !by.IsZero() && (w.dl.IsZero() || by.Before(w.dl)) {
				c.sendTimeoutConn.Conn.SetReadDeadline(by)
			}
		}
		if !w.mid && !w.h2c && !w.hijacked && n > 0 {
			n = w.skipEmpty(p, n)
			if n == 0 && err == nil {
				w.mu.Unlock()
				continue // only empty lines so far
			}
		}
		w.took(p[:n], bg)
		if !bg && (n > 0 || err != nil) {
			w.read(p[:n], err)
		}
		w.mu.Unlock()
		return n, err
	}
}

// begin starts the read_header_timeout of a kept-alive connection's head
// begun at t, while net/http still waits for it with idle_timeout; it
// returns the head's deadline (zero: none).
func (w *headWatch) begin(t time.Time) time.Time {
	if w.waiting > 0 && w.timeout > 0 && w.by.IsZero() {
		w.by = t.Add(w.timeout)
	}
	return w.by
}

// skipEmpty takes the empty lines (CRLF or LF) before a head out of p[:n],
// a read's bytes, and returns how many bytes are left. A CR at the end of
// p is held back (w.cr) until the next byte shows whether an LF follows;
// one that does not begins the head (a malformed one, as the fast engine
// reads it) and is given back in front of it.
func (w *headWatch) skipEmpty(p []byte, n int) int {
	i := 0
	for ; i < n; i++ {
		b := p[i]
		if w.cr && b != '\n' {
			break
		}
		switch b {
		case '\n':
			w.cr = false
			continue
		case '\r':
			w.cr = true
			continue
		}
		break
	}
	if i == n {
		return 0
	}
	if w.cr {
		w.cr = false
		if i > 0 {
			i-- // the CR is p[i-1]
		} else {
			// The CR came with the read before: give it first.
			if n == len(p) {
				w.carry = append(w.carry[:0], p[n-1])
				n--
			}
			copy(p[1:n+1], p[:n])
			p[0] = '\r'
			return n + 1
		}
	}
	return copy(p, p[i:n])
}

// took notes bytes given to net/http: it looks for the end of the head
// they begin or continue (exact), or notes the background read's byte.
func (w *headWatch) took(b []byte, bg bool) {
	if len(b) == 0 {
		return
	}
	if bg {
		w.got1 = true
	}
	if !w.mid {
		w.mid, w.scan, w.exact = true, headEndLine, false // a head begins
	} else if w.scan == headEndDone {
		w.exact = false // bytes after the head: pipelined
		return
	}
	for i, x := range b {
		switch {
		case x == '\n' && w.scan != headEndLine:
			w.scan, w.exact = headEndDone, i == len(b)-1
			return
		case x == '\n':
			w.scan = headEndLF
		case x == '\r' && w.scan == headEndLF:
			w.scan = headEndCR
		default:
			w.scan = headEndLine
		}
	}
}

func (w *headWatch) read(b []byte, err error) {
	if w.h2c || w.err != nil {
		return
	}
	if len(b) > 0 {
		if w.got == 0 && !w.served {
			// net/http serves a connection that opens with the HTTP/2
			// preface as h2c; its reads are frames, not heads.
			w.h2c = len(b) >= 4 && string(b[:4]) == "PRI "
		}
		w.got += len(b)
	}
	w.err = err
}

// SetReadDeadline is the connection's, but a deadline net/http sets while
// it waits for a kept-alive connection's next head is held to that head's
// (see headWatch).
func (c *refusalConn) SetReadDeadline(t time.Time) error {
	return c.sendTimeoutConn.Conn.SetReadDeadline(c.head.deadline(t))
}

func (w *headWatch) deadline(t time.Time) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting == 0 {
		return t
	}
	// net/http's serve loop: idle_timeout, then (once it holds 4 bytes of
	// the head) read_header_timeout.
	w.waiting--
	w.first = w.first && w.waiting > 0
	if !w.by.IsZero() && (t.IsZero() || t.After(w.by)) {
		t = w.by
	}
	w.dl = t
	return t
}

// next starts watching the next head: net/http reports the connection idle
// after a request.
func (w *headWatch) next() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h2c {
		return
	}
	w.req.Store(false)
	now := time.Now()
	w.served, w.start, w.got, w.err = true, time.Time{}, 0, nil
	w.idleAt, w.first, w.waiting, w.dl, w.by = now, true, 2, time.Time{}, time.Time{}
	if !w.byte1.IsZero() {
		w.start, w.byte1 = w.byte1, time.Time{}
		if w.got1 {
			w.got = 1
		}
		w.begin(now) // on the fast engine too, the head's time starts after the answer
	}
}

// active notes that net/http read a request's head: what comes next is its
// body, then the next head.
func (w *headWatch) active() {
	w.mu.Lock()
	w.waiting, w.got1, w.cr = 0, false, false
	w.body.Store(false)
	w.req.Store(true)
	w.mu.Unlock()
}

// hijack notes that the handler took the connection.
func (w *headWatch) hijack() {
	w.mu.Lock()
	w.hijacked = true
	w.mu.Unlock()
}

// cutOff reports whether a head was begun and ended by a read error.
func (w *headWatch) cutOff() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.h2c && w.got > 0 && w.err != nil
}

// reason returns why the connection ended with no request head to serve
// (a reason of vigil_proxy_client_connections_cut_total), when it did:
// not when it closed after a refusal or an answer, or because the proxy
// closed it (shutdown). A head of only empty lines is cut too, with got 0.
func (w *headWatch) reason() (reason string, start time.Time, got int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h2c || w.err == nil || errors.Is(w.err, net.ErrClosed) {
		return "", time.Time{}, 0, false
	}
	timeout := deadlineExceeded(w.err)
	begun := !w.start.IsZero()
	switch {
	case begun && timeout:
		return cutHeaderTimeout, w.start, w.got, true
	case begun:
		return cutClosedInHead, w.start, w.got, true
	case timeout && w.served:
		return cutIdle, time.Time{}, 0, true
	case timeout:
		return cutNoRequest, time.Time{}, 0, true
	}
	return "", time.Time{}, 0, false // the client closed an idle connection
}

// stdConnState is the part of the net/http servers' ConnState that counts
// and logs connections cut off with no request head to serve; timeout is
// read_header_timeout, for the log and for kept-alive connections' heads.
func (p *Proxy) stdConnState(c net.Conn, s http.ConnState, timeout time.Duration) {
	var rc *refusalConn
	switch v := c.(type) {
	case *refusalConn:
		rc = v
	case *tlsRefusalConn:
		rc = v.refusalConn
	default:
		return
	}
	switch s {
	case http.StateNew:
		rc.head.mu.Lock()
		rc.head.timeout = timeout
		rc.head.mu.Unlock()
	case http.StateActive:
		rc.head.active()
	case http.StateHijacked:
		rc.head.hijack()
	case http.StateIdle:
		rc.head.next()
	case http.StateClosed:
		if rc.answering.Load() {
			return // hijacked, or closed after an answer
		}
		reason, start, got, ok := rc.head.reason()
		if !ok {
			return
		}
		remote := c.RemoteAddr().String()
		if p.cuts != nil {
			p.cuts.note(reason, remote, rc.tls, timeout)
		}
		if got > 0 {
			p.engineCutHead(headCut{reason: reason, remote: remote, tls: rc.tls, start: start, got: got})
		}
	}
}

// Close closes the connection. net/http closes one after an answer with
// Connection: close (keepalive_time, keepalive_requests, an HTTP/1.0
// client) or after one of its refusals at once, without reading what the
// client sent meanwhile (a pipelined request); the kernel then resets the
// connection over the unread bytes, which destroys what of the answer the
// client had not read yet. Such a connection is half-closed instead and
// what comes is read away in the background for up to lingerTime
// (lingerMax bytes) before the close, as the fast engine does
// (lingerClose). Any other (idle, cut off in a head, hijacked, h2c) is
// closed at once.
func (c *refusalConn) Close() error {
	if !c.head.lingers() {
		return c.sendTimeoutConn.Close()
	}
	return c.linger()
}

// CloseWrite is net/http's half-close before it waits 500 ms and closes
// (closeWriteAndWait, rstAvoidanceDelay: after a 431, or after the answer
// to a request whose body was not read to its end). The lingering close
// begins there, so the connection (and its max_client_conns slot) ends as
// soon as the client closes its side, not 500 ms later.
func (c *refusalConn) CloseWrite() error {
	if !c.head.lingers() {
		return c.sendTimeoutConn.CloseWrite()
	}
	c.linger()
	return nil
}

// linger half-closes the connection and reads away what comes in the
// background, then closes it (see Close). Called again, it does nothing.
func (c *refusalConn) linger() error {
	if c.head.closed.Swap(true) {
		return nil
	}
	cw, ok := c.sendTimeoutConn.Conn.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return c.sendTimeoutConn.Close()
	}
	go func() {
		conn := c.sendTimeoutConn.Conn
		conn.SetReadDeadline(time.Now().Add(lingerTime))
		io.CopyN(io.Discard, conn, lingerMax)
		conn.Close()
	}()
	return nil
}

// lingers reports whether the connection closes after an answer or a
// refusal (a head read without a read error but not served).
func (w *headWatch) lingers() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hijacked || w.h2c {
		return false
	}
	return w.req.Load() || w.got > 0 && w.err == nil
}
