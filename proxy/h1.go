package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The fast path: GET and HEAD requests without a body to plain-HTTP origins
// (the bulk of CDN and web traffic) skip http.Transport and run the HTTP/1.1
// exchange inline on the handler's goroutine over a pooled keep-alive
// connection. http.Transport hands every request to two goroutines per
// connection (read and write loops) through channels; doing the exchange
// inline removes those hand-offs. Everything else (bodies, upgrades, https
// origins) goes through the pool's http.Transport.

// h1MaxIdle bounds idle connections kept per origin; h1IdleTimeout drops
// idle connections older than this (origins close theirs after ~60-75s):
// at reuse, and by the pool's reaper, which looks every
// h1IdleTimeout/h1ReapDivisor (about 3s) while connections are idle.
const (
	h1MaxIdle     = 1024
	h1IdleTimeout = 50 * time.Second
	h1ReapDivisor = 16
)

// aLongTimeAgo is a deadline in the past, used to abort a blocked read or write.
var aLongTimeAgo = time.Unix(1, 0)

type h1Conn struct {
	c        net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	lastUsed time.Time
	dl       time.Time // the deadline in force
	rb       respBuf   // reused response state
	fields   []field   // reused by writeHead
	// bodyIdle is body_timeout while this exchange's answer body is read
	// from the socket (watchBody), else 0; aborted is set when the
	// request's context poisoned the deadline (the read must not move it).
	bodyIdle time.Duration
	aborted  atomic.Bool
}

// h1Pool holds one origin's idle keep-alive connections (LIFO).
//
// Connections idle for the idle timeout are closed even without traffic:
// LIFO reuse leaves the oldest at the bottom of the stack, where get never
// looks, so after a burst they would stay open (and hold origin sockets)
// until the origin closed them. A reaper, armed by the put that finds none
// armed, runs every idle timeout/h1ReapDivisor while connections are idle
// and disarms when it finds none; the request path only tests a flag under
// the lock it already holds.
type h1Pool struct {
	addr string
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu          sync.Mutex
	idle        []*h1Conn
	closed      bool
	idleTimeout time.Duration // 0: h1IdleTimeout (tests set a shorter one)
	reaping     bool          // the reaper is armed
	reaper      *time.Timer

	// extra, when set, is told of a connection dropped because the origin
	// sent bytes nobody asked for (after its answer's end, or while idle).
	extra atomic.Pointer[func()]
}

// unsolicited reports a connection dropped for bytes the origin sent unasked.
func (p *h1Pool) unsolicited() {
	if f := p.extra.Load(); f != nil {
		(*f)()
	}
}

// idleLimit is the pool's idle timeout. Caller holds p.mu.
func (p *h1Pool) idleLimit() time.Duration {
	if p.idleTimeout > 0 {
		return p.idleTimeout
	}
	return h1IdleTimeout
}

// setIdleTimeout sets the idle timeout (0: h1IdleTimeout).
func (p *h1Pool) setIdleTimeout(d time.Duration) {
	p.mu.Lock()
	p.idleTimeout = d
	p.mu.Unlock()
}

func (p *h1Pool) get(now time.Time) *h1Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	limit := p.idleLimit()
	for n := len(p.idle); n > 0; n = len(p.idle) {
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		if now.Sub(c.lastUsed) < limit {
			return c
		}
		c.c.Close()
	}
	return nil
}

func (p *h1Pool) put(c *h1Conn) {
	// Idle from now: the origin's own keep-alive timer starts when it sent
	// the end of its answer, which is about now, not when the request went
	// out (a slow answer is not idle time).
	c.lastUsed = time.Now()
	p.mu.Lock()
	if p.closed || len(p.idle) >= h1MaxIdle {
		p.mu.Unlock()
		c.c.Close()
		return
	}
	p.idle = append(p.idle, c)
	if !p.reaping {
		p.armReaper()
	}
	p.mu.Unlock()
}

// armReaper schedules the next reap. Caller holds p.mu.
func (p *h1Pool) armReaper() {
	p.reaping = true
	d := p.idleLimit() / h1ReapDivisor
	if p.reaper == nil {
		p.reaper = time.AfterFunc(d, p.reap)
	} else {
		p.reaper.Reset(d)
	}
}

// reap closes the idle connections older than the idle timeout, and
// re-arms itself while any connection is left idle.
func (p *h1Pool) reap() {
	now := time.Now()
	var stale []*h1Conn
	p.mu.Lock()
	limit := p.idleLimit()
	keep := p.idle[:0]
	for _, c := range p.idle {
		if now.Sub(c.lastUsed) >= limit {
			stale = append(stale, c)
		} else {
			keep = append(keep, c)
		}
	}
	clear(p.idle[len(keep):])
	p.idle = keep
	p.reaping = false
	if len(p.idle) > 0 && !p.closed {
		p.armReaper()
	}
	p.mu.Unlock()
	for _, c := range stale {
		c.c.Close()
	}
}

// closeIdle closes idle connections; close also refuses future ones.
func (p *h1Pool) closeIdle(close bool) {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	if close {
		p.closed = true
		if p.reaper != nil {
			p.reaper.Stop()
			p.reaping = false
		}
	}
	p.mu.Unlock()
	for _, c := range idle {
		c.c.Close()
	}
}

var (
	brPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}
	bwPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

func (p *h1Pool) dialConn(ctx context.Context, deadline time.Time) (*h1Conn, error) {
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := p.dial(dctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	c = wrapConn(c)
	br := brPool.Get().(*bufio.Reader)
	br.Reset(c)
	bw := bwPool.Get().(*bufio.Writer)
	bw.Reset(c)
	return &h1Conn{c: c, br: br, bw: bw}, nil
}

// roundTrip sends a body-less GET/HEAD on a pooled connection and reads the
// response head before deadline (the try timeout); ctx cancellation (client
// gone) aborts a blocked exchange. An idle connection is checked before use:
// one the origin closed, or one with bytes the origin sent unasked (which
// would be read as the answer to the next request: another client's), is
// dropped. A reused connection that fails before any byte of an answer was
// read back (the origin closed it as the request went out) is retried once
// on a new connection, as http.Transport does: the one case in which a
// request goes to the same origin twice (README "Failover", rule 4). The
// error of that first attempt is stored in *stale, for the caller to count.
//
// watch (nil outside the fast engine) lets the engine's client watcher abort
// the wait for the answer when the client leaves: the error is then
// errClientGone.
//
// Interim answers other than 100 and 101 (103 Early Hints, 102) go to w as
// they arrive (sendInterim).
func (p *h1Pool) roundTrip(ctx context.Context, r *http.Request, host string, w http.ResponseWriter, hdr http.Header, deadline time.Time, watch *tryWatch, stale *error) (*http.Response, error) {
	fresh := false
	dropped := 0
	for attempt := 0; ; attempt++ {
		now := time.Now()
		var c *h1Conn
		if !fresh {
			c = p.get(now)
		}
		reused := c != nil
		if !reused {
			var err error
			if c, err = p.dialConn(ctx, deadline); err != nil {
				return nil, err
			}
		}
		// A deadline up to 1/64 of the try earlier than asked is kept:
		// setting one costs a runtime timer update.
		c.lastUsed = now // in use; put sets the idle start
		c.bodyIdle = 0
		c.aborted.Store(false)
		if c.dl.IsZero() || c.dl.After(deadline) || deadline.Sub(c.dl) > deadline.Sub(now)/64 {
			c.c.SetDeadline(deadline)
			c.dl = deadline
		}
		if reused {
			if usable, extra := idleUsable(c.c); !usable {
				if extra {
					p.unsolicited()
				}
				c.c.Close()
				attempt--
				if dropped++; dropped >= 64 {
					fresh = true
				}
				continue
			}
		}
		if !watch.beginConn(c, now) {
			c.c.Close()
			return nil, errClientGone
		}
		headed := watch.beginHead(c) // a cut (origin taken out) poisons c's deadline
		stop := neverStopped
		if ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() {
				c.aborted.Store(true)
				c.c.SetDeadline(aLongTimeAgo)
			})
		}
		deferWrites(c.c) // the origin answers only after the request
		rw, _ := w.(*respWriter)
		var order []string
		if rw != nil {
			order = rw.c.head.order // the client's field order, on the fast engine
		}
		err := writeHead(c, r, host, hdr, order)
		var resp *http.Response
		interim := false // an interim (1xx) answer arrived
		if err == nil {
			resp, err = readResponse(c.br, r.Method, &c.rb)
			// Interim answers (103 Early Hints, a stray 100) are skipped, up
			// to max1xx of them: past that, the origin fails the try rather
			// than an interim answer going out as the final one.
			for i := 0; err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 &&
				resp.StatusCode != http.StatusSwitchingProtocols; i++ {
				if i == max1xx {
					err = errTooMany1xx
					break
				}
				interim = true
				if rw != nil {
					rw.order = append(rw.order[:0], c.rb.order...)
				}
				sendInterim(w, r, resp.StatusCode, resp.Header)
				resp, err = readResponse(c.br, r.Method, &c.rb)
			}
		}
		cut := headed && watch.endHead()
		if !watch.endConn() {
			// The client left; the watcher poisoned c's deadline.
			stop()
			c.c.Close()
			return nil, errClientGone
		}
		if cut {
			if err != nil {
				// Cut before the head arrived whole: the origin was taken
				// out of rotation (ejectcut.go).
				stop()
				c.c.Close()
				return nil, errEjected
			}
			if !c.aborted.Load() {
				c.c.SetDeadline(c.dl) // the head arrived first: the answer goes on
			}
		}
		if err == nil && !bodyBuffered(resp, c.br) {
			c.c.SetDeadline(time.Time{}) // the body may stream for long
			c.dl = time.Time{}
		}
		if err != nil {
			stop()
			c.c.Close()
			if reused && !fresh && ctx.Err() == nil && !interim && nothingReceived(err) {
				fresh = true // stale keep-alive connection: once more on a new one
				*stale = err
				continue
			}
			return nil, err
		}
		if resp.StatusCode == http.StatusSwitchingProtocols || resp.StatusCode < 200 {
			// Not expected without an Upgrade request; do not reuse.
			resp.Close = true
		}
		if rw != nil {
			rw.order = append(rw.order[:0], c.rb.order...) // the origin's field order, for the answer
		}
		resp.Body = &h1Body{body: resp.Body, c: c, p: p, stop: stop, keep: !resp.Close, eof: resp.Body == http.NoBody, watch: watch}
		return resp, nil
	}
}

func neverStopped() bool { return true }

// bodyBuffered reports whether resp's whole body is already in br (no more
// reads for this exchange).
func bodyBuffered(resp *http.Response, br *bufio.Reader) bool {
	return resp.Body == http.NoBody || resp.ContentLength >= 0 && int64(br.Buffered()) >= resp.ContentLength
}

// nothingReceived reports whether a failed exchange read no byte of an
// answer: the connection ended (io.EOF, not io.ErrUnexpectedEOF) or was
// reset, while writing the request or before the head's first byte.
func nothingReceived(err error) bool {
	var ph *partialHeadError
	return err == io.EOF || isReset(err) && !errors.As(err, &ph)
}

func isReset(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op != "dial" && !oe.Timeout()
}

// writeHead writes the request line and headers and flushes.
func writeHead(c *h1Conn, r *http.Request, host string, hdr http.Header, order []string) error {
	bw := c.bw
	uri := r.RequestURI
	if uri == "" || uri[0] != '/' {
		uri = r.URL.RequestURI()
	}
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	bw.WriteString(uri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	c.fields = orderedFields(hdr, order, c.fields)
	for _, f := range c.fields {
		for _, v := range f.vals {
			bw.WriteString(f.name)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	clear(c.fields) // no references kept to the request's strings
	bw.WriteString("\r\n")
	return bw.Flush()
}

// h1Body returns its connection to the pool when the body was read to the
// end and the origin allows keep-alive; otherwise it closes the connection.
//
// While a read waits for the origin (a body not yet buffered whole), the
// connection is published to the fast engine's client watcher (watch), as
// during the wait for the head: a client that leaves while the origin is
// silent mid-body (a long poll, a stream between events) has the origin
// connection closed within 0.5–1 s, not after body_timeout; the read then
// fails with errClientGone.
type h1Body struct {
	body  io.ReadCloser
	c     *h1Conn
	p     *h1Pool
	stop  func() bool
	watch *tryWatch
	keep  bool
	eof   bool
	done  bool
	taken bool // the watcher aborted the connection: never reused
}

func (b *h1Body) Read(p []byte) (int, error) {
	c := b.c
	if b.taken {
		return 0, errClientGone
	}
	armed := false
	if idle := c.bodyIdle; idle > 0 && !c.aborted.Load() {
		// A read that waits for the origin waits at most idle (also one
		// that finds part of a chunk's size line buffered). The deadline
		// is moved only when it drifted by idle/64 (a runtime timer
		// update per move), never once the context poisoned it.
		now := time.Now()
		if dl := c.dl; dl.IsZero() || dl.Sub(now) < idle-idle/64 {
			c.dl = now.Add(idle)
			c.c.SetDeadline(c.dl)
			if c.aborted.Load() {
				c.c.SetDeadline(aLongTimeAgo) // the context fired meanwhile
			}
		}
		if b.watch != nil {
			if !b.watch.beginConn(c, now) {
				b.taken = true
				return 0, errClientGone
			}
			armed = true
		}
	}
	n, err := b.body.Read(p)
	if armed && !b.watch.endConn() {
		b.taken = true // the watcher poisoned c's deadline
	}
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil && b.taken:
		err = errClientGone
	case err != nil && c.bodyIdle > 0:
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			err = errBodyTimeout
		}
	}
	return n, err
}

func (b *h1Body) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	live := b.stop() // false: ctx fired and poisoned the deadline
	// Bytes past the end of the answer (a body after a 204 or to a HEAD,
	// more than Content-Length said) would be read as the next request's
	// answer: such a connection is not reused.
	if b.eof && b.keep && live && !b.taken && b.c.br.Buffered() == 0 {
		b.body.Close()
		b.p.put(b.c)
		return nil
	}
	if b.eof && b.keep && b.c.br.Buffered() > 0 {
		b.p.unsolicited()
	}
	b.c.c.Close() // before body.Close, which would otherwise drain the rest
	b.body.Close()
	b.c.br.Reset(nil)
	b.c.bw.Reset(nil)
	brPool.Put(b.c.br)
	bwPool.Put(b.c.bw)
	return nil
}
