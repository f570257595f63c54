package proxy

import (
	"errors"
	"net"
	"net/http"
	"sync"
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
// A connection's reads between requests (not answering: before the
// handler is called for a request, after net/http reports it idle again)
// are the next head's: the first byte of them is when the head began, and
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
type headWatch struct {
	mu     sync.Mutex
	served bool      // a request was read whole on the connection
	h2c    bool      // the connection began with the HTTP/2 preface (h2c)
	start  time.Time // when the first byte of the head came (zero: none yet)
	got    int       // the head's bytes received
	err    error     // the read error that ended the head
	byte1  time.Time // when net/http's background read took the next head's first byte (zero: it did not)
}

// Read is the connection's Read, watching the reads of request heads.
func (c *refusalConn) Read(p []byte) (int, error) {
	n, err := c.sendTimeoutConn.Read(p)
	if !c.answering.Load() {
		if n > 0 || err != nil {
			c.head.read(p[:n], err)
		}
	} else if n == 1 && len(p) == 1 {
		// net/http's background read while the handler answers: one byte
		// it keeps for the next request's head (a client quick to send it).
		c.head.early()
	}
	return n, err
}

func (w *headWatch) early() {
	w.mu.Lock()
	w.byte1 = time.Now()
	w.mu.Unlock()
}

func (w *headWatch) read(b []byte, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h2c || w.err != nil {
		return
	}
	if len(b) > 0 {
		if w.start.IsZero() {
			w.start = time.Now()
			// net/http serves a connection that opens with the HTTP/2
			// preface as h2c; its reads are frames, not heads.
			w.h2c = !w.served && len(b) >= 4 && string(b[:4]) == "PRI "
		}
		w.got += len(b)
	}
	w.err = err
}

// next starts watching the next head: net/http reports the connection idle
// after a request.
func (w *headWatch) next() {
	w.mu.Lock()
	w.served, w.start, w.got, w.err = true, time.Time{}, 0, nil
	if !w.byte1.IsZero() {
		w.start, w.got, w.byte1 = w.byte1, 1, time.Time{}
	}
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
// closed it (shutdown).
func (w *headWatch) reason() (reason string, start time.Time, got int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h2c || w.err == nil || errors.Is(w.err, net.ErrClosed) {
		return "", time.Time{}, 0, false
	}
	timeout := deadlineExceeded(w.err)
	switch {
	case w.got > 0 && timeout:
		return cutHeaderTimeout, w.start, w.got, true
	case w.got > 0:
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
// read_header_timeout, for the log.
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
