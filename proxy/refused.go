package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// net/http answers a request it cannot parse itself, before any handler runs:
// 400 for a malformed request line or header, 431 for a head over
// max_header_bytes, 501 for an unknown transfer coding, 505 for a bad
// version, 417 for an Expect other than 100-continue. It writes these answers
// straight to the connection, so the listeners served by net/http (engine
// stdlib, plain and TLS) wrap their HTTP/1 connections in a refusalConn
// that counts them in vigil_proxy_refused_total, as the fast engine counts
// its own.
//
// A connection is "answering" from the moment the proxy's handler is called
// for a request (markAnswering marks it, found through ConnContext) until
// net/http reports it idle again (ConnState): every byte written in between is
// the handler's answer and is passed through after one atomic load. A write
// that starts a status line while the connection is not answering is
// net/http's own answer; a 4xx or 5xx one is a refusal. net/http can refuse a
// later request on a kept-alive connection too, so the check is not limited to
// a connection's first request. A hijacked connection (WebSocket) stays
// answering for good: the tunnel's bytes are never looked at.

var (
	_ net.Listener = (*refusalListener)(nil)
	_ net.Listener = (*tlsOut)(nil)
	_ net.Conn     = (*refusalConn)(nil)
	_ net.Conn     = (*tlsRefusalConn)(nil)
)

// refusalConn is an accepted HTTP/1 connection of a net/http listener. With
// a send timeout, each write that takes nothing for that long fails (see
// sendTimer), which net/http takes as the client gone.
type refusalConn struct {
	sendTimeoutConn
	onRefuse  func(refusal)
	tls       bool
	answering atomic.Bool
	head      headWatch // the reads of request heads (stdcut.go)
}

// tlsRefusalConn is a refusalConn over a *tls.Conn. net/http reads
// Request.TLS from its ConnectionState (net/http's connectionStater), as it
// would from the *tls.Conn itself.
type tlsRefusalConn struct {
	*refusalConn
	tc *tls.Conn
}

func (c *tlsRefusalConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }

func (c *refusalConn) Write(p []byte) (int, error) {
	if !c.answering.Load() {
		if c.head.cutOff() {
			return len(p), nil // net/http's 400 to a head cut off (stdcut.go)
		}
		if code := statusOf(p); code >= 400 && code <= 599 {
			c.onRefuse(refusal{code: code, remote: c.RemoteAddr().String(), tls: c.tls, reason: refusalReason(p), bytes: bodyLen(p)})
		}
	}
	return c.sendTimeoutConn.Write(p)
}

// sendTimer is send_timeout on a connection whose writes cannot be timed
// from inside the poller (net/http's, TLS, off Linux): before each write
// the write deadline becomes now + d, or the deadline set by the server
// (write_timeout) when that is earlier. So a write fails only when the
// client takes too little for d, never because a long answer is long. The
// deadline is moved only when it drifted by d/64: setting one costs a
// runtime timer update. A zero d does nothing.
type sendTimer struct {
	d   time.Duration
	mu  sync.Mutex
	wdl time.Time // the deadline the server set (zero: none)
	at  time.Time // when arm last set the deadline (zero: not in force)
}

func (s *sendTimer) arm(c net.Conn) {
	if s.d <= 0 {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && now.Sub(s.at) < s.d/64 {
		return
	}
	s.at = now
	d := now.Add(s.d)
	if !s.wdl.IsZero() && s.wdl.Before(d) {
		d = s.wdl
	}
	c.SetWriteDeadline(d)
}

// base records a write deadline the server set; the next write re-arms.
func (s *sendTimer) base(t time.Time) {
	if s.d <= 0 {
		return
	}
	s.mu.Lock()
	s.wdl, s.at = t, time.Time{}
	s.mu.Unlock()
}

// sendTimeoutConn is a connection with a send timeout (the fast engine's
// client connections where raw writes are not available).
type sendTimeoutConn struct {
	net.Conn
	send sendTimer
}

var _ net.Conn = (*sendTimeoutConn)(nil)

func newSendTimeoutConn(c net.Conn, d time.Duration) *sendTimeoutConn {
	return &sendTimeoutConn{Conn: c, send: sendTimer{d: d}}
}

func (c *sendTimeoutConn) Write(p []byte) (int, error) {
	c.send.arm(c.Conn)
	return c.Conn.Write(p)
}

func (c *sendTimeoutConn) SetDeadline(t time.Time) error {
	c.send.base(t)
	return c.Conn.SetDeadline(t)
}

func (c *sendTimeoutConn) SetWriteDeadline(t time.Time) error {
	c.send.base(t)
	return c.Conn.SetWriteDeadline(t)
}

// CloseWrite half-closes the connection when the wrapped one can: net/http
// uses it to close after a 431 without resetting the answer (Issue 3595).
func (c *sendTimeoutConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// refusal is a request an engine answers itself while parsing it (a
// malformed request line or header, a head too large): counted in
// vigil_proxy_refused_total and written to the access log.
type refusal struct {
	code   int
	remote string
	tls    bool
	reason string
	bytes  int // body bytes of the answer
}

// refusalReason returns the reason in net/http's answer to a malformed
// request, written whole as one write: its body's first line
// ("400 Bad Request: malformed Host header") without the status.
func refusalReason(p []byte) string {
	i := bytes.Index(p, []byte("\r\n\r\n"))
	if i < 0 {
		return ""
	}
	body := p[i+4:]
	if j := bytes.IndexAny(body, "\r\n"); j >= 0 {
		body = body[:j]
	}
	if len(body) > 200 {
		body = body[:200]
	}
	s := string(body)
	if k := strings.Index(s, ": "); k >= 0 {
		return s[k+2:]
	}
	if len(s) > 4 && s[3] == ' ' {
		return s[4:] // "431 Request Header Fields Too Large"
	}
	return s
}

// bodyLen returns the length of the body in p, an answer written whole.
func bodyLen(p []byte) int {
	if i := bytes.Index(p, []byte("\r\n\r\n")); i >= 0 {
		return len(p) - i - 4
	}
	return 0
}

// statusOf returns the status code of an HTTP/1 status line at the start of
// p ("HTTP/1.1 431 ..."), 0 when p does not start with one.
func statusOf(p []byte) int {
	if len(p) < 13 || string(p[:7]) != "HTTP/1." || p[8] != ' ' || p[12] != ' ' && p[12] != '\r' {
		return 0
	}
	code := 0
	for _, b := range p[9:12] {
		if b < '0' || b > '9' {
			return 0
		}
		code = code*10 + int(b-'0')
	}
	return code
}

type refusalConnKey struct{}

// refusalConnContext is the net/http servers' ConnContext: it makes a
// connection's refusalConn reachable from its requests.
func refusalConnContext(ctx context.Context, c net.Conn) context.Context {
	switch rc := c.(type) {
	case *refusalConn:
		return context.WithValue(ctx, refusalConnKey{}, rc)
	case *tlsRefusalConn:
		return context.WithValue(ctx, refusalConnKey{}, rc.refusalConn)
	}
	return ctx
}

// refusalConnState is the net/http servers' ConnState: an idle connection's
// next write is no handler's answer until the handler is called again.
func refusalConnState(c net.Conn, s http.ConnState) {
	if s != http.StateIdle {
		return
	}
	switch rc := c.(type) {
	case *refusalConn:
		rc.answering.Store(false)
	case *tlsRefusalConn:
		rc.answering.Store(false)
	}
}

// markAnswering wraps the handler of a net/http server: what the
// connection carries from now on is the handler's answer.
//
// It also closes, after the answer, every HTTP/1 connection whose request
// net/http framed in a way a front server may have framed differently:
// net/http serves a chunked request that also has a Content-Length (chunked
// wins, the Content-Length is dropped before the handler sees it) and
// ignores Transfer-Encoding in an HTTP/1.0 request, so bytes a front server
// sent as that request's body could be read as the next request on the
// connection (request smuggling). Closing discards them. An HTTP/1.0 client
// keeps a connection only when it asks to, so this costs little.
func markAnswering(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rc, ok := r.Context().Value(refusalConnKey{}).(*refusalConn); ok {
			rc.answering.Store(true)
		}
		if r.ProtoMajor == 1 && (r.ProtoMinor == 0 || len(r.TransferEncoding) > 0) {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// refusalListener wraps the accepted connections of the stdlib engine's
// plain listener in refusalConns.
type refusalListener struct {
	net.Listener
	onRefuse    func(refusal)
	sendTimeout time.Duration // send_timeout (0: none)
}

func (l *refusalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &refusalConn{sendTimeoutConn: sendTimeoutConn{Conn: c, send: sendTimer{d: l.sendTimeout}}, onRefuse: l.onRefuse}, nil
}

// tlsListener is the TLS listener. It does the TLS handshakes itself, each
// in its own goroutine (as net/http would), and hands each connection to one
// of its outputs (tlsOut, a net.Listener): net/http gets an HTTP/2
// connection as the *tls.Conn its HTTP/2 server needs. An HTTP/1 one (ALPN
// "http/1.1" or none) goes as a *tls.Conn to the fast engine's output when
// there is one (engine fast), and otherwise to net/http wrapped in a
// tlsRefusalConn, so refusals are counted on the decrypted side. A
// plain-HTTP request sent to it gets net/http's answer (400, "Client sent an
// HTTP request to an HTTPS server."), counted too.
type tlsListener struct {
	ln       net.Listener // TCP
	cfg      *tls.Config  // NextProtos must list "h2" only when net/http serves HTTP/2
	timeout  time.Duration
	send     time.Duration // send_timeout of HTTP/1 connections net/http serves (0: none)
	onRefuse func(refusal)
	onFail   func(reason string) // a failed handshake, by tlsFailReason
	log      *slog.Logger

	std  *tlsOut // net/http's connections
	fast *tlsOut // the fast engine's HTTP/1 connections (nil: net/http serves them)

	failed chan struct{} // closed when the accept loop ended with err
	err    error
	done   chan struct{} // closed when every output is closed
	once   sync.Once

	mu      sync.Mutex
	open    int          // outputs not closed yet
	pending pendingConns // handshakes in progress, closed with the listener
}

// tlsOut is one output of a tlsListener: the connections of one server.
// Closing it stops its server's accepts and drops the connections that
// would go to it; the TCP listener closes with the last output.
type tlsOut struct {
	l     *tlsListener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// newTLSListener serves TLS on ln with cfg. timeout bounds each handshake
// (0: no bound), as net/http bounds it by the smallest of the read header,
// read and write timeouts; send is the send_timeout of the HTTP/1
// connections net/http serves. It returns the listener net/http serves and,
// with fast, the one the fast engine serves HTTP/1 on (nil otherwise).
func newTLSListener(ln net.Listener, cfg *tls.Config, timeout, send time.Duration, onRefuse func(refusal), onFail func(string), log *slog.Logger, fast bool) (std, fastH1 net.Listener) {
	l := &tlsListener{ln: ln, cfg: cfg, timeout: timeout, send: send, onRefuse: onRefuse, onFail: onFail, log: log,
		failed: make(chan struct{}), done: make(chan struct{})}
	l.std = l.newOut()
	std = l.std
	if fast {
		l.fast = l.newOut()
		fastH1 = l.fast
	}
	go l.acceptLoop()
	return std, fastH1
}

func (l *tlsListener) newOut() *tlsOut {
	l.open++
	return &tlsOut{l: l, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *tlsListener) acceptLoop() {
	var backoff time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && !errors.Is(err, net.ErrClosed) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				l.log.Warn("proxy: accept failed; retrying", "err", err.Error(), "in", backoff)
				time.Sleep(backoff)
				continue
			}
			l.err = err
			close(l.failed)
			return
		}
		backoff = 0
		if !l.pending.add(c) {
			return // closed
		}
		go l.handshake(c)
	}
}

func (l *tlsListener) handshake(raw net.Conn) {
	defer l.pending.remove(raw)
	if l.timeout > 0 {
		raw.SetDeadline(time.Now().Add(l.timeout))
	}
	tc := tls.Server(raw, l.cfg)
	if err := tc.Handshake(); err != nil {
		reason := err.Error()
		kind := tlsFailReason(err)
		var re tls.RecordHeaderError
		if errors.As(err, &re) && re.Conn != nil && recordLooksLikeHTTP(re.RecordHeader) {
			io.WriteString(re.Conn, plainHTTPAnswer)
			reason, kind = "client sent an HTTP request to an HTTPS server", tlsFailPlainHTTP
			l.onRefuse(refusal{code: http.StatusBadRequest, remote: raw.RemoteAddr().String(), tls: true, reason: reason, bytes: len(plainHTTPAnswer) - len(plainHTTPHead)})
		}
		if l.onFail != nil {
			l.onFail(kind)
		}
		l.log.Debug("proxy: TLS handshake failed", "remote", raw.RemoteAddr().String(), "err", reason)
		raw.Close()
		return
	}
	raw.SetDeadline(time.Time{})
	var c net.Conn = tc
	out := l.std
	switch {
	case tc.ConnectionState().NegotiatedProtocol == "h2":
	case l.fast != nil:
		out = l.fast // the engine sets its own send timeout and counts its refusals
	default:
		c = &tlsRefusalConn{refusalConn: &refusalConn{sendTimeoutConn: sendTimeoutConn{Conn: tc, send: sendTimer{d: l.send}}, onRefuse: l.onRefuse, tls: true}, tc: tc}
	}
	select {
	case out.conns <- c:
	case <-out.done:
		raw.Close()
	case <-l.done:
		raw.Close()
	}
}

// plainHTTPAnswer answers an HTTP request sent to the TLS listener, as
// net/http does.
const (
	plainHTTPHead   = "HTTP/1.0 400 Bad Request\r\n\r\n"
	plainHTTPAnswer = plainHTTPHead + "Client sent an HTTP request to an HTTPS server.\n"
)

// Reasons of vigil_proxy_tls_handshake_errors_total.
const (
	tlsFailClientCertMissing = "client_cert_missing"
	tlsFailClientCertInvalid = "client_cert_invalid"
	tlsFailClientCertRevoked = "client_cert_revoked"
	tlsFailPlainHTTP         = "plain_http"
	tlsFailTimeout           = "timeout"
	tlsFailOther             = "other"
)

var tlsFailReasons = []string{tlsFailClientCertMissing, tlsFailClientCertInvalid, tlsFailClientCertRevoked, tlsFailPlainHTTP, tlsFailTimeout, tlsFailOther}

// tlsFailReason sorts a failed handshake for the metric: a client
// certificate missing or not verified (client_ca_file) or revoked
// (client_crl_file), a handshake not finished in time, or anything else (a
// scanner, a protocol or version the listener does not offer, a client that
// went away).
func tlsFailReason(err error) string {
	var cv *tls.CertificateVerificationError
	var rev *revokedError
	var ne net.Error
	switch {
	case errors.As(err, &rev):
		return tlsFailClientCertRevoked
	case errors.As(err, &cv):
		return tlsFailClientCertInvalid
	case strings.Contains(err.Error(), "client didn't provide a certificate"):
		return tlsFailClientCertMissing
	case errors.As(err, &ne) && ne.Timeout():
		return tlsFailTimeout
	}
	return tlsFailOther
}

// recordLooksLikeHTTP reports whether the first five bytes of a failed
// handshake look like a plain-HTTP request (net/http's check).
func recordLooksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return true
	}
	return false
}

func (o *tlsOut) Accept() (net.Conn, error) {
	select {
	case c := <-o.conns:
		return c, nil
	case <-o.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: o.l.ln.Addr(), Err: net.ErrClosed}
	case <-o.l.failed:
		return nil, o.l.err
	}
}

// Close stops this output's accepts; the last output to close stops the
// TCP listener and aborts the handshakes in progress.
func (o *tlsOut) Close() error {
	err := net.ErrClosed
	o.once.Do(func() {
		close(o.done)
		l := o.l
		l.mu.Lock()
		l.open--
		last := l.open == 0
		l.mu.Unlock()
		err = nil
		if last {
			err = l.close()
		}
	})
	return err
}

func (o *tlsOut) Addr() net.Addr { return o.l.ln.Addr() }

// close stops accepting and aborts the handshakes in progress.
func (l *tlsListener) close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		close(l.done)
		l.pending.closeAll()
		err = l.ln.Close()
	})
	return err
}

// handshakeTimeout is net/http's bound on a TLS handshake: the smallest
// positive of read_header_timeout, read_timeout and write_timeout.
func handshakeTimeout(cfg Config) time.Duration {
	var d time.Duration
	for _, v := range []time.Duration{cfg.ReadHeaderTimeout, cfg.ReadTimeout, cfg.WriteTimeout} {
		if v > 0 && (d == 0 || v < d) {
			d = v
		}
	}
	return d
}
