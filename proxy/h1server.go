package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The fast engine serves the plain HTTP listener and the TLS listener's
// HTTP/1 connections (Config.Engine "fast"; tlsListener hands it those
// after the handshake, and HTTP/2 ones to net/http): one goroutine per
// connection reads a request head with readHead into a
// per-connection, reused request, calls the same handler as net/http does
// (Proxy.Handler: routing, balancing, failover, metrics, logs), and writes
// the answer through a minimal ResponseWriter, then reads the next request.
// Unlike net/http it starts no background read per request: a client that
// goes away mid-request is noticed before a retry (the pool peeks at the
// socket then), by the engine's client watcher while a try has waited for
// its answer longer than clientWatchInterval (clientwatch.go), or when the
// answer is written. Upgrades, CONNECT, absolute-form and
// asterisk-form requests are parsed by http.ReadRequest from the same bytes
// and served by the same handler (with http.Hijacker for upgrades); the
// connection closes after them unless it was hijacked.

const (
	// maxDrain is how much of an unread request body is read away to keep
	// the connection; past it the connection closes.
	maxDrain = 256 << 10
	// maxTrailer bounds a chunked request body's trailer section.
	maxTrailer = 16 << 10
	// smallBody is how much of an answer without Content-Length is held
	// back so that a short answer gets a Content-Length instead of chunks.
	smallBody = 4 << 10
)

// Connection states for shutdown.
const (
	connIdle int32 = iota
	connActive
	connClosed // closed by shutdown while idle
	connHijacked
)

// engine is the fast HTTP/1.1 server of one listener.
type engine struct {
	h                 http.Handler
	log               *slog.Logger
	maxHeader         int
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	writeTimeout      time.Duration
	sendTimeout       time.Duration // bounds each write that makes no progress (send_timeout)
	idleTimeout       time.Duration
	onRefuse          func(refusal) // counts and logs requests the engine answers itself (may be nil)
	// onCut, when set, counts (and logs, rate-limited) a connection ended
	// with no whole request head to serve, by reason (cutIdle, …).
	onCut func(reason, remote string, tls bool, timeout time.Duration)
	// onCutHead, when set, writes the access log line of a connection cut
	// off in the middle of a request head (header_timeout,
	// closed_in_head) after at least one byte of it.
	onCutHead func(headCut)
	// life, when set, gives keepalive_time and keepalive_requests in force.
	life func() connLife
	// h2c, when set (proxy.h2c), takes the connections that open with the
	// HTTP/2 preface (prior knowledge): net/http's HTTP/2 server serves them.
	h2c func(net.Conn) bool

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*econn]struct{}
	open     atomic.Int64 // len(conns), read without mu
	shutting atomic.Bool
	wg       sync.WaitGroup
	watcher  sync.Once // starts watchClients
	kick     chan struct{}
}

func newEngine(h http.Handler, cfg Config, log *slog.Logger) *engine {
	return &engine{h: h, log: log, maxHeader: int(cfg.MaxHeaderBytes),
		readHeaderTimeout: cfg.ReadHeaderTimeout, readTimeout: cfg.ReadTimeout,
		writeTimeout: cfg.WriteTimeout, sendTimeout: cfg.SendTimeout, idleTimeout: cfg.IdleTimeout,
		conns: map[*econn]struct{}{}, kick: make(chan struct{}, 1)}
}

// Serve accepts connections on ln until Shutdown; it then returns
// http.ErrServerClosed, as http.Server.Serve does.
func (e *engine) Serve(ln net.Listener) error {
	e.mu.Lock()
	e.ln = ln
	e.mu.Unlock()
	if e.shutting.Load() {
		ln.Close()
		return http.ErrServerClosed
	}
	e.watcher.Do(func() { go e.watchClients() })
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if e.shutting.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && !errors.Is(err, net.ErrClosed) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				e.log.Warn("proxy: accept failed; retrying", "err", err.Error(), "in", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		// A TLS connection's requests carry its state (Request.TLS), as
		// net/http's do: the handler tells origins the scheme was https.
		var state *tls.ConnectionState
		if tc, ok := c.(*tls.Conn); ok {
			st := tc.ConnectionState()
			state = &st
		}
		// A client that stops reading its answer fails the write after
		// send_timeout: the answer ends, the origin connection is not
		// reused, the connection closes.
		c = setSendTimeout(wrapConn(c), e.sendTimeout)
		ec := &econn{e: e, c: c, remote: c.RemoteAddr().String(), tls: state, born: time.Now(), idle: newIdleWait(c)}
		ec.head.header = make(http.Header, 16)
		ec.w.hdr = make(http.Header, 16)
		e.mu.Lock()
		if e.shutting.Load() {
			e.mu.Unlock()
			c.Close()
			continue
		}
		e.conns[ec] = struct{}{}
		e.open.Add(1)
		e.wg.Add(1)
		e.mu.Unlock()
		go ec.serve()
	}
}

// Shutdown stops accepting, closes idle connections at once and the others
// as their current answer ends; when ctx ends first, it closes them all and
// returns ctx's error.
func (e *engine) Shutdown(ctx context.Context) error {
	e.shutting.Store(true)
	e.mu.Lock()
	if e.ln != nil {
		e.ln.Close()
	}
	e.mu.Unlock()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	var idle []net.Conn
	for {
		e.mu.Lock()
		n := 0
		for c := range e.conns {
			if c.state.CompareAndSwap(connIdle, connClosed) {
				idle = append(idle, c.c)
			}
			n++
		}
		e.mu.Unlock()
		// Closed outside the lock: closing a TLS connection sends an alert,
		// which can wait for a client that reads nothing.
		for i, c := range idle {
			c.Close()
			idle[i] = nil
		}
		idle = idle[:0]
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			e.closeAll()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// closeAll closes every connection (not hijacked ones) now.
func (e *engine) closeAll() {
	e.mu.Lock()
	conns := make([]net.Conn, 0, len(e.conns))
	for c := range e.conns {
		conns = append(conns, c.c)
	}
	e.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// econn is one client connection with its reused request state.
type econn struct {
	e      *engine
	c      net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	remote string
	tls    *tls.ConnectionState // nil on a plain connection
	state  atomic.Int32
	rdl    time.Time   // the read deadline in force
	rdlSet atomic.Bool // the handler set a read deadline: rdl is unknown
	// writeBy is the request's write_timeout deadline (zero: none): a
	// failed write past it ran out of write_timeout, not send_timeout
	// (writeTimeoutPassed).
	writeBy time.Time

	head reqHead
	req  http.Request
	url  url.URL
	w    respWriter
	// keepBufs is false when br and bw must not go back to their pools.
	keepBufs bool
	// idle, when set (a raw TCP connection), waits for the next request
	// with br and bw back in their pools (nil while so): an idle
	// keep-alive connection then holds 8 KiB less.
	idle *idleWait
	// linger is true when the connection closes with request bytes the
	// client may still be sending: see lingerClose.
	linger bool
	// wmu serialises writes to bw: the answer, and a 100 Continue sent by a
	// body read that net/http's Transport may do from its own goroutine.
	wmu sync.Mutex
	// watch is the try in progress, for the client watcher (clientwatch.go).
	watch tryWatch
	// born is when the connection was accepted and served its count of
	// requests (keepalive_time, keepalive_requests).
	born   time.Time
	served int64
}

var (
	srvReaderPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	srvWriterPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

func (c *econn) serve() {
	e := c.e
	hijacked := false
	defer func() {
		e.mu.Lock()
		delete(e.conns, c)
		e.open.Add(-1)
		e.mu.Unlock()
		e.wg.Done()
		if hijacked {
			return // the buffers belong to the hijacker now
		}
		if c.linger && c.bw != nil && !e.shutting.Load() {
			c.lingerClose()
		}
		c.c.Close()
		if c.keepBufs {
			c.putBufs()
		}
	}()
	c.keepBufs = true
	for first := true; ; first = false {
		// Idle: wait for the first byte of the next request. As in net/http,
		// a new connection gets read_header_timeout for its first request, so
		// a client that connects and sends nothing is cut off as soon as one
		// that stalls mid-header.
		if c.br == nil || c.br.Buffered() == 0 {
			if first && e.readHeaderTimeout > 0 {
				c.readDeadline(time.Now().Add(e.readHeaderTimeout), 0)
			} else if e.idleTimeout > 0 {
				// Re-armed only when it drifted by 1/64 of the timeout:
				// setting a deadline costs a runtime timer update.
				c.readDeadline(time.Now().Add(e.idleTimeout), e.idleTimeout/64)
			}
			var err error
			if c.idle != nil && c.keepBufs && (c.bw == nil || c.bw.Buffered() == 0) && e.open.Load() > idleReleaseAbove {
				// Wait holding no buffer; they come back with the bytes.
				// Only with many connections open: the wait's peek is a
				// system call a busy connection would otherwise not make
				// (a fifth more per request), and a few connections'
				// buffers are not worth it.
				c.putBufs()
				err = c.idle.wait()
			}
			if err == nil {
				c.getBufs()
				_, err = c.br.Peek(1)
			}
			if err != nil {
				if deadlineExceeded(err) && first {
					c.cut(cutNoRequest)
				} else if deadlineExceeded(err) {
					c.cut(cutIdle)
				}
				return
			}
		}
		if !c.state.CompareAndSwap(connIdle, connActive) {
			return // shutting down
		}
		if first && e.h2c != nil && isH2CPreface(c.br) {
			// Handed over with the bytes read so far; the HTTP/2 server
			// owns the connection (and the reader) from here on.
			hijacked = true
			e.h2c(&prefixConn{Conn: c.c, br: c.br})
			return
		}
		start := time.Now()
		if e.readHeaderTimeout > 0 && !headBuffered(c.br) {
			c.readDeadline(start.Add(e.readHeaderTimeout), 0)
		}
		err := readHead(c.br, e.maxHeader, &c.head)
		if err != nil {
			var pe *parseError
			if errors.As(err, &pe) {
				c.fail(pe.code, pe.msg)
			} else if deadlineExceeded(err) {
				c.cutHead(cutHeaderTimeout, start)
			} else if !e.shutting.Load() {
				c.cutHead(cutClosedInHead, start)
			}
			return
		}
		if e.readTimeout > 0 {
			c.readDeadline(start.Add(e.readTimeout), 0)
		} else if c.head.contentLength > 0 || c.head.chunked || c.head.odd() {
			c.readDeadline(time.Time{}, 0)
		}
		c.writeBy = time.Time{}
		if e.writeTimeout > 0 {
			c.writeBy = time.Now().Add(e.writeTimeout)
			c.c.SetWriteDeadline(c.writeBy)
		}
		c.served++
		spent := e.life != nil && e.life().spent(c.born, c.served, start)
		var keep bool
		if c.head.odd() {
			keep, hijacked = c.serveStd()
		} else {
			keep, hijacked = c.serveFast(spent)
		}
		if spent && !hijacked && c.keepBufs {
			// Closed by keepalive_time or keepalive_requests while the
			// client thinks the connection persistent: it may have sent
			// its next request already, and closing over unread bytes
			// makes the kernel reset the connection, destroying what of
			// this answer the client has not read yet.
			c.linger = true
		}
		if !keep || hijacked || e.shutting.Load() {
			return
		}
		if !c.state.CompareAndSwap(connActive, connIdle) {
			return
		}
	}
}

// idleReleaseAbove is how many client connections of a listener must be
// open before an idle one gives its buffers back while it waits (idleWait).
const idleReleaseAbove = 256

// getBufs takes br and bw from their pools unless c holds them.
func (c *econn) getBufs() {
	if c.br == nil {
		c.br = srvReaderPool.Get().(*bufio.Reader)
		c.br.Reset(c.c)
		c.bw = srvWriterPool.Get().(*bufio.Writer)
		c.bw.Reset(c.c)
	}
}

// putBufs gives br and bw back to their pools, if c holds them.
func (c *econn) putBufs() {
	if c.br != nil {
		c.br.Reset(nil)
		srvReaderPool.Put(c.br)
		c.bw.Reset(nil)
		srvWriterPool.Put(c.bw)
		c.br, c.bw = nil, nil
	}
}

// cut reports the connection ended for reason with no request to serve
// (onCut).
func (c *econn) cut(reason string) {
	if c.e.onCut != nil {
		c.e.onCut(reason, c.remote, c.tls != nil, c.e.readHeaderTimeout)
	}
}

// cutHead is cut for a connection whose request head was begun at start
// and never finished: with some of the head received (not only empty
// lines), it gets an access log line too (onCutHead).
func (c *econn) cutHead(reason string, start time.Time) {
	c.cut(reason)
	if c.e.onCutHead != nil && c.head.got > 0 {
		c.e.onCutHead(headCut{reason: reason, remote: c.remote, tls: c.tls != nil, start: start, got: c.head.got})
	}
}

// deadlineExceeded reports whether err is a read deadline running out.
func deadlineExceeded(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// readDeadline sets the read deadline to t unless the one in force is
// earlier than t by at most slack.
func (c *econn) readDeadline(t time.Time, slack time.Duration) {
	if !c.rdlSet.Swap(false) && t.IsZero() == c.rdl.IsZero() && !c.rdl.After(t) && t.Sub(c.rdl) <= slack {
		return
	}
	c.rdl = t
	c.c.SetReadDeadline(t)
}

// headBuffered reports whether a whole request head is already buffered,
// so reading it cannot block.
func headBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	for len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return bytes.Contains(b, []byte("\n\r\n")) || bytes.Contains(b, []byte("\n\n"))
}

// lingerClose half-closes the connection after an answer sent before the
// request was read whole (a 413, a malformed head) and reads away what the
// client is still sending, for at most lingerTime and lingerMax bytes. Closing
// with unread bytes in the socket makes the kernel send a reset, which can
// destroy the answer before the client has read it; a client still writing a
// large body would see "connection reset" instead of the 413. nginx calls this
// lingering_close.
func (c *econn) lingerClose() {
	if err := c.bw.Flush(); err != nil {
		return
	}
	cw, ok := c.c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	c.c.SetReadDeadline(time.Now().Add(lingerTime))
	io.CopyN(io.Discard, c.c, lingerMax)
}

const (
	lingerTime = 2 * time.Second
	lingerMax  = 64 << 20
)

// fail answers a malformed request; the connection then closes.
func (c *econn) fail(code int, msg string) {
	c.linger = true
	text := strconv.Itoa(code) + " " + http.StatusText(code) + ": " + msg + "\n"
	if c.e.onRefuse != nil {
		c.e.onRefuse(refusal{code: code, remote: c.remote, tls: c.tls != nil, reason: msg, bytes: len(text)})
	}
	c.bw.WriteString("HTTP/1.1 " + strconv.Itoa(code) + " " + http.StatusText(code) +
		"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(text)) + "\r\n\r\n" + text)
	c.bw.Flush()
}

var chunkedTE = []string{"chunked"}

// serveFast serves a parsed origin-form request; it reports whether the
// connection can carry another request, and whether it was hijacked.
func (c *econn) serveFast(spent bool) (keep, hijacked bool) {
	h := &c.head
	c.url = url.URL{}
	if i := strings.IndexByte(h.target, '?'); i >= 0 {
		c.url.Path, c.url.RawQuery = h.target[:i], h.target[i+1:]
		c.url.ForceQuery = i == len(h.target)-1 // "/rl?": as url.ParseRequestURI
	} else {
		c.url.Path = h.target
	}
	// Without '%' the target is its own encoding: keep it byte for byte
	// (RequestURI would otherwise escape sub-delims such as ! ' ( ) * and
	// break signed URLs).
	c.url.RawPath = c.url.Path
	if strings.IndexByte(c.url.Path, '%') >= 0 || strings.IndexByte(h.target, '#') >= 0 {
		u, err := url.ParseRequestURI(h.target)
		if err != nil {
			c.fail(http.StatusBadRequest, "malformed request target")
			return false, false
		}
		c.url = *u
	}
	c.req = http.Request{
		Method:     h.method,
		URL:        &c.url,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: h.minor,
		Header:     h.header,
		Host:       h.host,
		RemoteAddr: c.remote,
		RequestURI: h.target,
		Close:      h.connClose,
		TLS:        c.tls,
	}
	if h.minor == 0 {
		c.req.Proto = "HTTP/1.0"
	}
	// A body is a new object per request: net/http's Transport may still
	// read it from its own goroutine after the handler returned.
	var body *reqBody
	switch {
	case h.chunked:
		body = &reqBody{c: c, expect: h.expect, chunked: true}
		body.r = newChunkedReader(c.br)
		c.req.ContentLength = -1
		c.req.TransferEncoding = chunkedTE
		c.req.Body = body
	case h.contentLength > 0:
		body = &reqBody{c: c, expect: h.expect}
		body.lr = io.LimitedReader{R: c.br, N: h.contentLength}
		body.r = &body.lr
		c.req.ContentLength = h.contentLength
		c.req.Body = body
	default:
		c.req.Body = http.NoBody
	}
	c.w.reset(c, h.method == http.MethodHead, h.connClose || spent, c.br) // HTTP/1.0: connClose unless it asked for keep-alive
	if !c.run(&c.req) {
		return false, c.w.hijacked
	}
	if body != nil && body.mu.TryLock() {
		bad := body.bad
		body.mu.Unlock()
		if bad && !c.w.wroteHeader {
			c.w.closeAfter = true
			c.w.hdr["Content-Type"] = []string{"text/plain; charset=utf-8"}
			c.w.WriteHeader(http.StatusBadRequest)
			io.WriteString(&c.w, "400 Bad Request: malformed request body\n")
		}
	}
	c.w.finish()
	keep = !c.w.closeAfter
	if body != nil {
		reuse, busy := body.finish()
		if busy {
			c.keepBufs = false // a late reader still uses br
		}
		keep = keep && reuse
		c.linger = !reuse && !busy
	}
	return keep, false
}

// serveStd serves an upgrade, CONNECT, absolute-form or asterisk-form
// request with net/http's parser; the connection closes after it unless the
// handler hijacked it.
func (c *econn) serveStd() (keep, hijacked bool) {
	// A body of this request may still be read through rd (and br) by the
	// Transport after the handler returned: br does not go back to its pool.
	c.keepBufs = false
	rd := bufio.NewReader(io.MultiReader(bytes.NewReader(c.head.raw), c.br))
	r, err := http.ReadRequest(rd)
	if err != nil {
		c.fail(http.StatusBadRequest, "malformed request")
		return false, false
	}
	r.RemoteAddr = c.remote
	r.TLS = c.tls
	r.Close = true
	c.w.reset(c, r.Method == http.MethodHead, true, rd)
	if !c.run(r) {
		return false, c.w.hijacked
	}
	c.w.finish()
	return false, false
}

// run calls the handler; false when it panicked (the connection must close
// without a complete-looking answer) or hijacked the connection.
func (c *econn) run(r *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				c.e.log.Error("proxy: panic serving a request", "remote", c.remote, "panic", v, "stack", string(debug.Stack()))
			}
			if !c.w.hijacked {
				c.bw.Flush() // what was sent stays truncated: no final chunk
			}
			ok = false
		}
	}()
	c.e.h.ServeHTTP(&c.w, r)
	return !c.w.hijacked
}

// reqBody is a request body read from the connection.
type reqBody struct {
	mu      sync.Mutex
	c       *econn
	r       io.Reader
	lr      io.LimitedReader
	chunked bool
	expect  bool // 100 Continue not sent yet
	eof     bool
	closed  bool
	done    bool  // the connection took the body back: reads fail
	err     error // a read error: the connection cannot be reused
	bad     bool  // err is a framing error (400)
}

func (b *reqBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.done {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.read(p)
}

// finish takes the body back after the handler returned and reports whether
// the connection can carry another request: the rest of the body is read
// away (up to maxDrain). A body still being read by another goroutine, one
// whose 100 Continue was never sent, or a broken one, means no; busy
// reports the first case.
func (b *reqBody) finish() (reuse, busy bool) {
	if !b.mu.TryLock() {
		return false, true
	}
	defer b.mu.Unlock()
	b.done = true
	switch {
	case b.err != nil, b.expect:
		return false, false
	case b.eof:
		return true, false
	case !b.chunked && b.lr.N > maxDrain:
		return false, false
	}
	if t := b.c.e.readHeaderTimeout; t > 0 {
		b.c.readDeadline(time.Now().Add(t), 0)
	}
	buf := make([]byte, 4<<10)
	for total := 0; total <= maxDrain; {
		n, err := b.read(buf)
		total += n
		if err == io.EOF {
			return true, false
		}
		if err != nil {
			return false, false
		}
	}
	return false, false
}

func (b *reqBody) read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.expect {
		b.expect = false
		c := b.c
		c.wmu.Lock()
		var err error
		if !c.w.wroteHeader {
			c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			err = c.bw.Flush()
		}
		c.wmu.Unlock()
		if err != nil {
			b.err = err
			return 0, err
		}
	}
	n, err := b.r.Read(p)
	switch {
	case err == io.EOF && b.chunked:
		if terr := b.readTrailer(); terr != nil {
			b.err, b.bad = terr, terr == errBadChunk
			return n, terr
		}
		b.eof = true
	case err == io.EOF && b.lr.N > 0:
		b.err = io.ErrUnexpectedEOF
		return n, b.err
	case err == io.EOF:
		b.eof = true
	case err != nil:
		var mbe *http.MaxBytesError
		if b.chunked && !isNetErr(err) && !errors.As(err, &mbe) {
			err, b.bad = errBadChunk, true
		}
		b.err = err
		return n, err
	case !b.chunked && b.lr.N == 0:
		b.eof = true
		return n, io.EOF
	}
	return n, err
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// readTrailer reads and drops the trailer section after the last chunk.
func (b *reqBody) readTrailer() error {
	total := 0
	for {
		line, err := b.c.br.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				return errBadChunk
			}
			return io.ErrUnexpectedEOF
		}
		total += len(line)
		if total > maxTrailer || len(line) < 2 || line[len(line)-2] != '\r' {
			return errBadChunk // trailer lines end in CRLF
		}
		if len(line) == 2 {
			return nil
		}
		if line[0] == ' ' || line[0] == '\t' || bytes.IndexByte(line, ':') <= 0 {
			return errBadChunk
		}
	}
}

func (b *reqBody) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// respWriter is the fast engine's http.ResponseWriter (also http.Flusher
// and http.Hijacker).
type respWriter struct {
	c           *econn
	rd          *bufio.Reader // the reader a hijacker gets
	hdr         http.Header
	status      int
	wroteHeader bool
	committed   bool
	isHead      bool
	closeAfter  bool
	noBody      bool
	chunked     bool
	cl          int64 // declared Content-Length, -1 none
	written     int64
	buf         []byte
	hijacked    bool
	done        bool   // the handler returned: held-back bytes are the whole body
	reason      string // the final status line's reason phrase ("": the standard one)
	// order is the field order of the origin's answer (set by the fast
	// path's round trip): hdr is written in it, the proxy's own fields
	// after them. fields is writeFields' reused storage.
	order  []string
	fields []field
}

var (
	_ http.ResponseWriter = (*respWriter)(nil)
	_ http.Flusher        = (*respWriter)(nil)
	_ http.Hijacker       = (*respWriter)(nil)
)

func (w *respWriter) reset(c *econn, isHead, closeAfter bool, rd *bufio.Reader) {
	clear(w.hdr)
	*w = respWriter{c: c, rd: rd, hdr: w.hdr, isHead: isHead, closeAfter: closeAfter, cl: -1, buf: w.buf[:0],
		order: w.order[:0], fields: w.fields}
}

func (w *respWriter) Header() http.Header { return w.hdr }

func (w *respWriter) WriteHeader(code int) {
	w.c.wmu.Lock()
	defer w.c.wmu.Unlock()
	w.writeHeader(code)
}

func (w *respWriter) writeHeader(code int) {
	if w.wroteHeader || w.hijacked {
		return
	}
	if code < 100 || code > 999 {
		panic("proxy: invalid status code " + strconv.Itoa(code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		// Interim answer: sent at once, the final one follows.
		w.writeStatusLine(code)
		w.writeFields(false)
		w.c.bw.WriteString("\r\n")
		w.c.bw.Flush()
		return
	}
	w.wroteHeader = true
	w.status = code
	if v := w.hdr["Content-Length"]; len(v) == 1 {
		if n, ok := parseContentLength(strings.TrimSpace(v[0])); ok {
			w.cl = n
		} else {
			delete(w.hdr, "Content-Length")
		}
	} else if len(v) > 1 {
		delete(w.hdr, "Content-Length")
	}
	w.noBody = code == http.StatusNoContent || code == http.StatusNotModified || code < 200
}

func (w *respWriter) Write(p []byte) (int, error) {
	w.c.wmu.Lock()
	defer w.c.wmu.Unlock()
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.writeHeader(http.StatusOK)
	}
	if w.isHead {
		return len(p), nil
	}
	if w.noBody {
		return 0, http.ErrBodyNotAllowed
	}
	if w.cl >= 0 && w.written+int64(len(p)) > w.cl {
		return 0, http.ErrContentLength
	}
	if !w.committed {
		if w.cl < 0 && len(w.buf)+len(p) <= smallBody {
			w.buf = append(w.buf, p...)
			return len(p), nil
		}
		if err := w.commit(); err != nil {
			return 0, err
		}
	}
	return w.writeBody(p)
}

func (w *respWriter) writeBody(p []byte) (int, error) {
	bw := w.c.bw
	if w.chunked {
		if len(p) == 0 {
			return 0, nil
		}
		var scratch [16]byte
		bw.Write(strconv.AppendInt(scratch[:0], int64(len(p)), 16))
		bw.WriteString("\r\n")
		n, err := bw.Write(p)
		w.written += int64(n)
		if err != nil {
			return n, err
		}
		_, err = bw.WriteString("\r\n")
		return n, err
	}
	n, err := bw.Write(p)
	w.written += int64(n)
	return n, err
}

// Flush sends the head and what was written so far.
func (w *respWriter) Flush() {
	w.c.wmu.Lock()
	defer w.c.wmu.Unlock()
	if w.hijacked {
		return
	}
	if !w.wroteHeader {
		w.writeHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit()
	}
	w.c.bw.Flush()
}

// SetReadDeadline sets the client connection's read deadline (for
// http.ResponseController): the proxy uses it to bound each wait for a
// request body's next bytes, and to abort the read of a body whose client
// stalled. Safe from any goroutine.
func (w *respWriter) SetReadDeadline(t time.Time) error {
	w.c.rdlSet.Store(true) // the engine sets its own again before it next reads
	w.c.c.SetReadDeadline(t)
	return nil
}

// Hijack hands the connection to the caller (WebSocket upgrades).
func (w *respWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if w.committed {
		return nil, nil, errors.New("proxy: hijack after the answer began")
	}
	w.hijacked = true
	c := w.c
	c.state.Store(connHijacked)
	c.c.SetDeadline(time.Time{})
	c.rdl = time.Time{}
	return c.c, bufio.NewReadWriter(w.rd, c.bw), nil
}

// commit writes the status line and header fields, choosing the framing;
// pending held-back body bytes follow.
func (w *respWriter) commit() error {
	w.committed = true
	bw := w.c.bw
	switch {
	case w.noBody:
		if w.status != http.StatusNotModified {
			delete(w.hdr, "Content-Length")
		}
	case w.isHead, w.cl >= 0:
	default:
		_, trailers := w.hdr["Trailer"]
		switch {
		case w.done && !trailers:
			w.cl = int64(len(w.buf))
			w.hdr["Content-Length"] = []string{strconv.Itoa(len(w.buf))}
		case w.c.head.minor == 1:
			w.chunked = true
		default:
			w.closeAfter = true // HTTP/1.0: the end of the body is the close
		}
	}
	if w.chunked {
		delete(w.hdr, "Content-Length")
	}
	if v, ok := w.hdr["Connection"]; ok && len(v) > 0 && namedIn(v, "close") {
		w.closeAfter = true
	}
	delete(w.hdr, "Connection")
	delete(w.hdr, "Transfer-Encoding")
	w.writeStatusLine(w.status)
	w.writeFields(true)
	if _, ok := w.hdr["Date"]; !ok {
		bw.WriteString("Date: ")
		bw.Write(httpDate())
		bw.WriteString("\r\n")
	}
	if w.chunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if w.c.e.shutting.Load() {
		w.closeAfter = true // shutting down: the client must not send another request here
	}
	if w.closeAfter {
		bw.WriteString("Connection: close\r\n")
	} else if w.c.head.minor == 0 {
		bw.WriteString("Connection: keep-alive\r\n")
	}
	_, err := bw.WriteString("\r\n")
	if len(w.buf) > 0 {
		buf := w.buf
		w.buf = w.buf[:0]
		if _, err := w.writeBody(buf); err != nil {
			return err
		}
	}
	return err
}

func (w *respWriter) writeStatusLine(code int) {
	bw := w.c.bw
	reason := http.StatusText(code)
	if w.reason != "" && code == w.status && code >= 200 {
		reason = w.reason
	} else if code == http.StatusOK {
		bw.WriteString("HTTP/1.1 200 OK\r\n")
		return
	}
	var scratch [8]byte
	bw.WriteString("HTTP/1.1 ")
	bw.Write(strconv.AppendInt(scratch[:0], int64(code), 10))
	bw.WriteByte(' ')
	bw.WriteString(reason)
	bw.WriteString("\r\n")
}

// setReason makes the final answer's status line carry the reason phrase
// of status, an origin's "200 Custom Fine", as nginx passes it on; one
// that is the standard phrase, empty, or holds a control character is
// not kept.
func (w *respWriter) setReason(status string, code int) {
	_, r, ok := strings.Cut(status, " ")
	if !ok || r == "" || r == http.StatusText(code) {
		return
	}
	for i := 0; i < len(r); i++ {
		if c := r[i]; c < ' ' && c != '\t' || c == 0x7f {
			return
		}
	}
	w.reason = r
}

// writeFields writes the header map, in the origin's order (see
// orderedFields); CR and LF in values become spaces.
func (w *respWriter) writeFields(skipTrailers bool) {
	bw := w.c.bw
	w.fields = orderedFields(w.hdr, w.order, w.fields)
	for _, f := range w.fields {
		k := f.name
		if skipTrailers && strings.HasPrefix(k, http.TrailerPrefix) || !validFieldName(k) {
			continue
		}
		for _, v := range f.vals {
			bw.WriteString(k)
			bw.WriteString(": ")
			writeFieldValue(bw, v)
			bw.WriteString("\r\n")
		}
	}
	clear(w.fields)
}

func validFieldName(k string) bool { return isToken(k) }

func writeFieldValue(bw *bufio.Writer, v string) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '\r' || c == '\n' || c == 0 {
			b := []byte(v)
			for j := i; j < len(b); j++ {
				if b[j] == '\r' || b[j] == '\n' || b[j] == 0 {
					b[j] = ' '
				}
			}
			bw.Write(b)
			return
		}
	}
	bw.WriteString(trimOWS(v))
}

// finish completes the answer after the handler returned.
func (w *respWriter) finish() {
	w.c.wmu.Lock()
	defer w.c.wmu.Unlock()
	if w.hijacked {
		return
	}
	if !w.wroteHeader {
		w.writeHeader(http.StatusOK)
	}
	w.done = true
	if !w.committed {
		w.commit()
	}
	bw := w.c.bw
	if w.chunked {
		bw.WriteString("0\r\n")
		for k, vv := range w.hdr {
			name, ok := strings.CutPrefix(k, http.TrailerPrefix)
			if !ok {
				if !w.declaredTrailer(k) {
					continue
				}
				name = k
			}
			if !validFieldName(name) {
				continue
			}
			for _, v := range vv {
				bw.WriteString(name)
				bw.WriteString(": ")
				writeFieldValue(bw, v)
				bw.WriteString("\r\n")
			}
		}
		bw.WriteString("\r\n")
	}
	if w.cl >= 0 && !w.isHead && !w.noBody && w.written != w.cl {
		w.closeAfter = true // short body: the close shows the truncation
	}
	if bw.Flush() != nil {
		w.closeAfter = true
	}
}

// declaredTrailer reports whether k was announced in the Trailer field.
func (w *respWriter) declaredTrailer(k string) bool {
	tr := w.hdr["Trailer"]
	return tr != nil && k != "Trailer" && namedIn(tr, k)
}

// httpDate returns the current time in IMF-fixdate form, cached per second.
func httpDate() []byte {
	now := time.Now().Unix()
	if d := dateCache.Load(); d != nil && d.sec == now {
		return d.b
	}
	d := &cachedDate{sec: now, b: time.Unix(now, 0).UTC().AppendFormat(nil, http.TimeFormat)}
	dateCache.Store(d)
	return d.b
}

type cachedDate struct {
	sec int64
	b   []byte
}

var dateCache atomic.Pointer[cachedDate]

// limitChunks makes a chunked body fail with *http.MaxBytesError as soon as
// its chunk-size lines announce more than max bytes (the handler answers
// 413 at once); nothing for other bodies.
func (b *reqBody) limitChunks(max int64) {
	b.mu.Lock()
	if cr, ok := b.r.(*chunkedReader); ok {
		cr.max = max
	}
	b.mu.Unlock()
}
