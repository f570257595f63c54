package proxy

import (
	"bytes"
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/bits"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-synthetics/vigil/checks/grpchealth"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// pool is one configured pool at runtime.
type pool struct {
	name      string
	cfg       *PoolConfig
	origins   []*origin
	all       uint64
	bal       Balancer
	transport *originTransport
	dial      func(context.Context, string, string) (net.Conn, error)
	log       *slog.Logger
	m         *metrics
	none      *originMetrics // the proxy's own answers
	retries   map[string]interfaceCounter
	budget    *retryBudget // kept across reloads while the pool exists

	tunnels *tunnelSet // the proxy's WebSocket tunnels (nil in some tests)

	resort *lastResort // last-resort incidents and vigil_proxy_last_resort_total; shared by a pool's generations
	// budgetDeny is vigil_proxy_retry_budget_exhausted_total: a handle, so
	// that a request still in flight in a pool a reload removed does not
	// create its series again.
	budgetDeny interfaceCounter

	mu     sync.Mutex // serialises ejections against max_ejected
	tryLog logLimiter // "try failed" lines, per origin and cause

	rid string    // the request ID header (Config.RequestID), "" when off
	via *viaNames // this proxy's Via (Config.Via), nil when off

	// ridAnswers: the answers carry the request ID
	// (Config.RequestIDInAnswers); without it they carry no rid field.
	ridAnswers bool

	slots slotQueue // requests waiting for a max_conns slot (queue_timeout)

	// Handles of the pool's request_buffering and max_conns queue series
	// (vigil_proxy_request_bodies_spooled_total, …, metrics.go), as
	// budgetDeny: created at 0 with the pool, shared by its generations.
	spooled, spooledBytes, spoolErrors prometheus.Counter
	queueTimeouts                      prometheus.Counter
	queueWaiting                       prometheus.Gauge
}

// slotQueue holds the requests waiting for a free max_conns slot in a pool
// (queue_timeout), first come first woken: a request that ends at a capped
// origin wakes the longest waiter, which then picks again (and waits again
// at the back when another request took the slot first). A wake-up can be
// lost (a waiter leaving as it is woken, a slot freed by the previous
// configuration generation, which shares the in-flight counts), so waiters
// also look again every slotPoll.
type slotQueue struct {
	n       atomic.Int32 // waiters: freed does nothing when 0
	mu      sync.Mutex
	waiters list.List // of chan struct{} (buffered, 1)
}

const slotPoll = 20 * time.Millisecond

func (q *slotQueue) join(ch chan struct{}) *list.Element {
	q.mu.Lock()
	e := q.waiters.PushBack(ch)
	q.n.Add(1)
	q.mu.Unlock()
	return e
}

// leave takes e out unless freed already did.
func (q *slotQueue) leave(e *list.Element) {
	q.mu.Lock()
	if e.Value != nil {
		q.waiters.Remove(e)
		e.Value = nil
		q.n.Add(-1)
	}
	q.mu.Unlock()
}

// freed wakes the longest waiter, if any.
func (q *slotQueue) freed() {
	if q.n.Load() == 0 {
		return
	}
	q.mu.Lock()
	if e := q.waiters.Front(); e != nil {
		q.waiters.Remove(e)
		ch := e.Value.(chan struct{})
		e.Value = nil
		q.n.Add(-1)
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	q.mu.Unlock()
}

// done ends a request at o: its in-flight count drops, and at a capped
// origin a request waiting for a slot is woken.
func (pl *pool) done(o *origin) {
	o.inflight.Add(-1)
	if o.maxConns > 0 {
		pl.slots.freed()
	}
}

// onlyFull reports whether an origin that eligible would offer, but for
// being at its max_conns, is there: a request may then wait for its slot.
func (pl *pool) onlyFull(tried uint64, resort bool) bool {
	for i, o := range pl.origins {
		if tried&(1<<i) != 0 || !o.full() {
			continue
		}
		if f := o.flags.Load(); f == 0 || resort && f&flagDrained == 0 {
			return true
		}
	}
	return false
}

// waitSlot waits until an origin eligible would offer has a free slot, up
// to until, and returns what eligible then offers (0 when the wait ended
// without one: the time ran out, the client left, or no origin it waits
// for is left, as after a drain).
func (pl *pool) waitSlot(r *http.Request, tried uint64, resort bool, until time.Time, gone func() bool) (uint64, bool) {
	d := time.Until(until)
	if d <= 0 {
		return 0, false
	}
	pl.queueWaiting.Inc()
	defer pl.queueWaiting.Dec()
	t := time.NewTimer(d)
	defer t.Stop()
	poll := time.NewTimer(slotPoll)
	defer poll.Stop()
	ch := make(chan struct{}, 1)
	for {
		e := pl.slots.join(ch)
		// Looked at after joining, so that a slot freed in between wakes
		// this request.
		if m, fa := pl.eligible(tried, resort); m != 0 || !pl.onlyFull(tried, resort) {
			pl.slots.leave(e)
			return m, fa
		}
		poll.Reset(slotPoll)
		select {
		case <-ch:
		case <-poll.C:
			pl.slots.leave(e)
			if gone() {
				// The fast engine reads nothing while a request waits:
				// a client that left is found by a peek at each poll.
				return 0, false
			}
		case <-t.C:
			pl.slots.leave(e)
			return pl.eligible(tried, resort)
		case <-r.Context().Done():
			pl.slots.leave(e)
			return 0, false
		}
	}
}

// allFull reports whether a request that no origin took got none because
// the origins it could go to were at their max_conns. If so, each such
// origin is named in the access log's upstreams (cause max_conns), and a
// warning is logged (at most one a second per pool).
func (pl *pool) allFull(r *http.Request, ae *accessEntry, waited time.Duration) bool {
	var full []string
	for _, o := range pl.origins {
		if o.full() && o.flags.Load()&flagDrained == 0 {
			full = append(full, o.name)
			ae.addTry(o.name, 0, CauseMaxConns)
		}
	}
	if len(full) == 0 {
		return false
	}
	pl.queueTimeouts.Inc()
	if ok, n := pl.tryLog.allow("", CauseMaxConns, time.Now().UnixNano()); ok {
		pl.log.Warn("proxy: every origin the request could go to is at its max_conns; answered 503",
			"pool", pl.name, "origins", strings.Join(full, ","), "queue_timeout", pl.cfg.QueueTimeout.String(),
			"waited", waited.Round(time.Millisecond).String(),
			"path", r.URL.Path, "suppressed", n)
	}
	return true
}

// CauseMaxConns names, in the access log's upstreams, an origin a request
// did not get because it was at its max_conns for the whole queue_timeout
// (the request got 503). It is not a try and never charged to the origin.
const CauseMaxConns = "max_conns"

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// logLimiter rate-limits a log line per key: the first line is written,
// then at most one a second, which carries how many lines were left out
// since the previous one. A dead pool would otherwise log a line per try
// (tens of thousands a second); the metrics still count every failure. Its
// keys are bounded by the config (a pool's origins × the causes).
type logLimiter struct {
	mu sync.Mutex
	m  map[logKey]*logState
}

type logKey struct{ origin, cause string }

type logState struct {
	last       int64 // unix nanoseconds of the last line written
	suppressed int64 // lines left out since then
}

// allow reports whether the line for (origin, cause) is written now, and how
// many were left out before it.
func (l *logLimiter) allow(origin, cause string, now int64) (ok bool, suppressed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := logKey{origin, cause}
	st := l.m[k]
	if st == nil {
		if l.m == nil {
			l.m = map[logKey]*logState{}
		}
		l.m[k] = &logState{last: now}
		return true, 0
	}
	if now-st.last < int64(time.Second) {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	return true, n
}

// flushed is what a key of the limiter left out and never reported on a
// later line (the burst ended).
type flushed struct {
	logKey
	suppressed int64
}

// flush returns, and forgets, the lines left out of keys that wrote none
// for a second: their count would otherwise wait for the next line of the
// same origin and cause, which may never come.
func (l *logLimiter) flush(now int64) []flushed {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []flushed
	for k, st := range l.m {
		if st.suppressed > 0 && now-st.last >= int64(time.Second) {
			out = append(out, flushed{k, st.suppressed})
			st.last, st.suppressed = now, 0
		}
	}
	return out
}

// flushTryLog logs, per origin and cause, the lines the rate limit left
// out since that key's last line when no later line reported them: "proxy:
// lines left out by the rate limit" with the pool, origin, cause (the try
// failure's, or client_closed, stale_conn, …) and suppressed. The passive
// evaluation calls it every second or so.
func (pl *pool) flushTryLog(now time.Time) {
	for _, f := range pl.tryLog.flush(now.UnixNano()) {
		level := slog.LevelInfo
		if slices.Contains(retryCauses, f.cause) || f.cause == causeUnsolicited {
			level = slog.LevelWarn
		}
		pl.log.Log(context.Background(), level, "proxy: lines left out by the rate limit", "pool", pl.name,
			"origin", f.origin, "cause", f.cause, "suppressed", f.suppressed)
	}
}

// tryFailed logs a failed try, rate-limited per origin and cause. The line
// has the pool, origin, cause, method, path and try (1-based), then err (when
// not nil) or status (when not 0), passed_through=true when the origin's
// answer went to the client (passedThrough not nil) with not_retried, why
// it went to no other origin, and "suppressed" (the lines of this origin and
// cause left out since the previous one). The parameters are typed, not
// ...any, so that a line the limiter leaves out allocates nothing: it is on
// the path of every 5xx answer passed through (passedThrough is called only
// for a line written).
func (pl *pool) tryFailed(origin, cause string, r *http.Request, try int, err error, status int, passedThrough func() string) {
	pl.tryCounter(origin, cause).Inc()
	ok, n := pl.tryLog.allow(origin, cause, time.Now().UnixNano())
	if !ok {
		return
	}
	args := make([]any, 0, 20)
	args = append(args, "pool", pl.name, "origin", origin, "cause", cause, "method", r.Method, "path", r.URL.Path, "try", try)
	if pl.rid != "" {
		if v := r.Header[pl.rid]; len(v) > 0 {
			args = append(args, "request_id", v[0])
		}
	}
	if err != nil {
		args = append(args, "err", err.Error())
	}
	if status != 0 {
		args = append(args, "status", status)
	}
	if passedThrough != nil {
		args = append(args, "passed_through", true, "not_retried", passedThrough())
	}
	pl.log.Warn("proxy: try failed", append(args, "suppressed", n)...)
}

// tunnelSet holds the client side of every WebSocket tunnel, which the
// servers' Shutdown does not track (the connection was hijacked), so that
// shutdown can wait for them and close those still open when the grace
// period ends.
//
// On net/http a connection is no longer tracked by Shutdown from the moment
// it is hijacked, before add: a tunnel that begins after closeAll ran is
// closed by add at once, so none outlives the shutdown.
type tunnelSet struct {
	mu     sync.Mutex
	m      map[net.Conn]struct{}
	closed bool // closeAll ran: add closes
}

// add tracks c; it reports false, having closed c, when the set was closed.
func (t *tunnelSet) add(c net.Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return false
	}
	if t.m == nil {
		t.m = map[net.Conn]struct{}{}
	}
	t.m[c] = struct{}{}
	return true
}

// open makes a closed set track tunnels again (Run starting anew).
func (t *tunnelSet) open() {
	t.mu.Lock()
	t.closed = false
	t.mu.Unlock()
}

func (t *tunnelSet) remove(c net.Conn) {
	t.mu.Lock()
	delete(t.m, c)
	t.mu.Unlock()
}

func (t *tunnelSet) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// closeAll closes every open tunnel's client connection (its copy loops
// then end and close the origin side), and those added later.
func (t *tunnelSet) closeAll() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for c := range t.m {
		c.Close()
	}
	return len(t.m)
}

type interfaceCounter interface{ Inc() }

func newPool(pc *PoolConfig, log *slog.Logger, m *metrics) *pool {
	pl := &pool{name: pc.Name, cfg: pc, log: log, m: m, none: m.forProxyAnswers(pc.Name),
		retries: map[string]interfaceCounter{}}
	pl.budget = &retryBudget{ratio: pc.Retry.RetryBudget.Fraction()}
	for _, c := range append(retryCauses[:len(retryCauses):len(retryCauses)], CauseConnect, CauseLocal, CauseEjected) {
		pl.retries[c] = m.retries.WithLabelValues(pc.Name, c)
	}
	pl.budgetDeny = m.budgetDeny.WithLabelValues(pc.Name)
	pl.spooled = m.spooled.WithLabelValues(pc.Name)
	pl.spooledBytes = m.spooledBytes.WithLabelValues(pc.Name)
	pl.spoolErrors = m.spoolErrors.WithLabelValues(pc.Name)
	pl.queueTimeouts = m.queueTimeouts.WithLabelValues(pc.Name)
	pl.queueWaiting = m.queueWaiting.WithLabelValues(pc.Name)
	pl.resort = &lastResort{total: m.forLastResort(pc.Name)}
	for _, code := range []int{http.StatusBadGateway, http.StatusGatewayTimeout} {
		pl.none.code(code)
	}
	pl.transport, pl.dial = newTransport(pc.ConnectTimeout, pc.OriginIdleTimeout, &pc.TLS, pc.OriginProtocol == OriginHTTP2)
	if pc.TLS.InsecureSkipVerify {
		log.Warn("proxy: TLS verification of this pool's https origins is off (tls.insecure_skip_verify)", "pool", pc.Name)
	}
	return pl
}

// h1PoolFor returns the fast-path connection pool of a plain-HTTP origin,
// nil for https origins.
func (pl *pool) h1PoolFor(u *url.URL) *h1Pool {
	if u.Scheme != "http" || pl.cfg.OriginProtocol == OriginHTTP2 {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &h1Pool{addr: addr, dial: pl.dial}
}

// closeIdle closes the pool's idle origin connections and stops keeping new
// ones (the pool is being replaced).
func (pl *pool) closeIdle() {
	pl.transport.CloseIdleConnections()
	for _, o := range pl.origins {
		if o.h1 != nil {
			o.h1.closeIdle(true)
		}
	}
}

// dialError marks a failure before any request byte was sent: DNS, connect,
// TLS handshake. Such a try can always move to the next origin.
type dialError struct {
	err error
	tls bool
}

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// originTransport is a pool's origin transport: one http.Transport, and
// for an http2 pool a second one for its http:// origins (h2c).
type originTransport struct {
	*http.Transport
	// h2c speaks HTTP/2 with prior knowledge to the http:// origins of an
	// http2 pool; nil for an http1 pool. Go's transport speaks h2c only
	// when HTTP/1 is off, and the https:// one keeps HTTP/1.1 on for
	// origins that do not take h2.
	h2c *http.Transport
}

// RoundTrip sends req with the transport for its scheme.
func (t *originTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.h2c != nil && req.URL.Scheme == "http" {
		return t.h2c.RoundTrip(req)
	}
	return t.Transport.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of both transports.
func (t *originTransport) CloseIdleConnections() {
	t.Transport.CloseIdleConnections()
	if t.h2c != nil {
		t.h2c.CloseIdleConnections()
	}
}

// newTransport is the shared, tuned origin transport of a pool: HTTP/1.1
// keep-alive with a large idle pool per origin, no compression, no proxy.
// With h2 it speaks HTTP/2 instead: negotiated by ALPN over TLS (an
// https:// origin that does not take h2 is spoken to in HTTP/1.1) and with
// prior knowledge (h2c) over plain TCP.
func newTransport(connectTimeout, idleTimeout time.Duration, tc *OriginTLSConfig, h2 bool) (*originTransport, func(context.Context, string, string) (net.Conn, error)) {
	if idleTimeout <= 0 {
		idleTimeout = h1IdleTimeout
	}
	d := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, &dialError{err: err}
		}
		return c, nil
	}
	// An HTTP/1 connection is a headConn, which keeps the Connection field
	// Go's transport deletes from an answer with "close"; so is the
	// HTTP/1.1 connection of an http2 pool to an https origin that did not
	// take h2 (a *tls.Conn is what makes Go's transport speak HTTP/2 on
	// it). HTTP/2 answers have no Connection field.
	h1Dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &headConn{Conn: c}, nil
	}
	t := newTransport1(idleTimeout)
	t.DialContext = h1Dial
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(addr)
		conn := tls.Client(c, tc.clientConfig(host, h2))
		hctx, cancel := context.WithTimeout(ctx, connectTimeout)
		defer cancel()
		if err := conn.HandshakeContext(hctx); err != nil {
			c.Close()
			return nil, &dialError{err: err, tls: true}
		}
		if h2 && conn.ConnectionState().NegotiatedProtocol == "h2" {
			return conn, nil
		}
		return &headConn{Conn: conn}, nil
	}
	if !h2 {
		return &originTransport{Transport: t}, dial
	}
	// Frames of an answer are read as they come; an origin that stops
	// answering pings is dropped (as an HTTP/1 connection that errs).
	h2cfg := &http.HTTP2Config{PingTimeout: connectTimeout, SendPingTimeout: 15 * time.Second}
	t.ForceAttemptHTTP2, t.HTTP2 = true, h2cfg
	t.Protocols = new(http.Protocols)
	t.Protocols.SetHTTP1(true)
	t.Protocols.SetHTTP2(true)
	h2c := newTransport1(idleTimeout)
	h2c.DialContext = dial
	h2c.ForceAttemptHTTP2, h2c.HTTP2 = true, h2cfg
	h2c.Protocols = new(http.Protocols)
	h2c.Protocols.SetUnencryptedHTTP2(true)
	return &originTransport{Transport: t, h2c: h2c}, dial
}

// newTransport1 is an http.Transport with the pools' settings, without
// dialers.
func newTransport1(idleTimeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		// An origin's response head is bounded as on the fast path; larger → 502.
		MaxResponseHeaderBytes: maxResponseHead,
		MaxIdleConns:           0,
		MaxIdleConnsPerHost:    1024,
		IdleConnTimeout:        idleTimeout, // as the fast path
		ExpectContinueTimeout:  time.Second,
		DisableCompression:     true,
		ReadBufferSize:         16 << 10,
		WriteBufferSize:        16 << 10,
	}
}

func noCancel(error) {}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// errTryTimeout is the cancel cause of a try that outlived try_timeout or
// the request's budget.
var errTryTimeout = errors.New("try timed out")

// errCallDeadline is the cancel cause of a gRPC call whose own deadline
// (grpc-timeout), shorter than try_timeout, ran out first: the client's
// choice, not charged to the origin.
var errCallDeadline = errors.New("the call's deadline passed")

// errEmptyCall is the cancel cause of a gRPC call without a message that
// outlived try_timeout: any client can send such calls, so a wait for
// their answers is not charged to the origin.
var errEmptyCall = errors.New("no answer to a gRPC call without a message")

// emptyBody is the body of a gRPC call without a message: not nil, of
// unknown length, so that Go's HTTP/2 transport sends HEADERS and then an
// empty DATA frame with END_STREAM, as nginx does; on HEADERS that end the
// stream, grpc-go servers never answer.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }

// classify maps a failed round trip to its cause; connLevel is true when
// nothing reached the origin.
func classify(err error, ctx context.Context) (cause string, connLevel bool) {
	var de *dialError
	if errors.As(err, &de) {
		var dns *net.DNSError
		var ne net.Error
		switch {
		case units.LocalDialError(de.err):
			return CauseLocal, true
		case errors.As(de.err, &dns):
			return CauseDNS, true
		case errors.Is(de.err, syscall.ECONNREFUSED):
			return CauseConnectRefused, true
		case context.Cause(ctx) == errTryTimeout, errors.Is(de.err, context.DeadlineExceeded),
			errors.Is(de.err, os.ErrDeadlineExceeded), errors.As(de.err, &ne) && ne.Timeout():
			if de.tls {
				return CauseTLS, true
			}
			return CauseConnectTimeout, true
		case de.tls:
			return CauseTLS, true
		}
		return CauseConnect, true
	}
	if isProtocolError(err) {
		return CauseProtocol, false
	}
	if context.Cause(ctx) == errTryTimeout {
		return CauseTimeout, false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return CauseTimeout, false
	}
	return CauseReset, false
}

// isRefusedStream reports whether err is an HTTP/2 origin's REFUSED_STREAM
// (Go's transport passes it on when it cannot resend the body itself).
func isRefusedStream(err error) bool {
	return strings.Contains(err.Error(), "REFUSED_STREAM")
}

// unsendable reports whether err is Go's transport refusing to write a
// request it finds invalid (a method, header field name or value, or host
// it will not put on the wire), before any byte went to the origin.
func unsendable(err error) bool {
	msg := err.Error()
	for _, s := range []string{"net/http: invalid method", "net/http: invalid header field", "invalid Host header",
		"http2: invalid header field", "http2: invalid pseudo-header", "http: no Host in request URL"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// isProtocolError reports whether err is an origin answer that breaks
// HTTP/1.1: the fast path's protocolError, or one of http.Transport's
// (https origins), which it reports only as text.
func isProtocolError(err error) bool {
	var pe *protocolError
	var tpe textproto.ProtocolError
	if errors.As(err, &pe) || errors.As(err, &tpe) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"malformed HTTP", "too many 1xx informational responses",
		"server response headers exceeded", "malformed MIME header", "malformed chunked encoding"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// headDetail is the access log's detail of a try that failed on an
// origin's response head over 256 KiB (maxResponseHead), "" otherwise.
func headDetail(err error) string {
	if errors.Is(err, errHeadTooLarge) || strings.Contains(err.Error(), "server response headers exceeded") {
		return "response_head_too_large"
	}
	return ""
}

// Hop-by-hop headers (RFC 9110 §7.6.1), never forwarded in either direction,
// together with any header named in Connection.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func isHop(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// copyHeaders copies src into dst without hop-by-hop headers. Value slices
// are shared, not copied. For a request (request true), underscore
// look-alikes of the forwarding headers (X_Forwarded_For) are dropped too:
// CGI, PHP and WSGI origins map '-' and '_' to the same variable, so a
// client could pass its own value as the proxy's (nginx drops them too);
// so is a Host field (an HTTP/2 request's host beside :authority): the
// request's Host is written from the routed authority alone; and so is
// Content-Length, which the proxy writes from the body it sends (an HTTP/2
// request may declare a length and send no body: passed on, the origin
// would read the next client's request on that connection as its body).
func copyHeaders(dst, src http.Header, request bool) {
	conn := src["Connection"]
	for k, vv := range src {
		if isHop(k) || (conn != nil && namedIn(conn, k)) ||
			request && (k == "Host" || k == "Content-Length" || strings.IndexByte(k, '_') >= 0 && forwardedLookAlike(k)) {
			continue
		}
		dst[k] = vv
	}
}

// forwardedElement is this hop's RFC 7239 element: for, host and proto,
// quoted where the syntax needs it (IPv6, host with a port).
func forwardedElement(ip, host, proto string) string {
	node := ip
	if strings.Contains(ip, ":") {
		node = `"[` + ip + `]"`
	}
	return "for=" + node + ";host=" + strconv.Quote(host) + ";proto=" + proto
}

// grpcTimeout parses a grpc-timeout value: 1 to 8 digits and a unit (H, M,
// S, m, u, n).
func grpcTimeout(v string) (time.Duration, bool) {
	if len(v) < 2 || len(v) > 9 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, false
	}
	return time.Duration(n) * unit, true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// isGRPC reports whether a request is a gRPC call (Content-Type
// application/grpc, application/grpc+proto, …).
func isGRPC(h http.Header) bool {
	ct := h.Get("Content-Type")
	return strings.HasPrefix(ct, "application/grpc") && (len(ct) == len("application/grpc") || ct[len("application/grpc")] == '+' || ct[len("application/grpc")] == ';')
}

// forwardedLookAlike reports whether header name k, with '_' read as '-',
// is one of the headers the proxy sets or that origins trust for the client
// address.
func forwardedLookAlike(k string) bool {
	n := strings.ReplaceAll(k, "_", "-")
	for _, f := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "Forwarded", "X-Forwarded-Client-Cert",
		"X-Original-Url", "X-Rewrite-Url"} {
		if strings.EqualFold(n, f) {
			return true
		}
	}
	return false
}

// namedIn reports whether header k is listed in Connection values.
func namedIn(conn []string, k string) bool {
	for _, v := range conn {
		for f := range strings.SplitSeq(v, ",") {
			if f = textproto.TrimString(f); f != "" && strings.EqualFold(f, k) {
				return true
			}
		}
	}
	return false
}

// upgradeType is "websocket" (as spelled in the header) when h asks to
// upgrade to WebSocket (Connection names Upgrade, and Upgrade lists
// websocket, RFC 6455 §4.1), and "" otherwise. Only WebSocket is passed
// through: any other protocol (h2c, a raw TCP tunnel under a made-up name)
// would give the client a byte tunnel to the origin that the proxy cannot
// see into. Such a request is forwarded as an ordinary one, its Upgrade and
// Connection headers dropped as hop-by-hop, so the origin answers it as
// plain HTTP/1.1 (what nginx does without an explicit upgrade config).
func upgradeType(h http.Header) string {
	if !namedIn(h["Connection"], "Upgrade") {
		return ""
	}
	for _, v := range h["Upgrade"] {
		for p := range strings.SplitSeq(v, ",") {
			p = textproto.TrimString(p)
			if name, _, _ := strings.Cut(p, "/"); strings.EqualFold(name, "websocket") {
				return name
			}
		}
	}
	return ""
}

// Shared, never modified header values.
var (
	protoHTTP  = []string{"http"}
	protoHTTPS = []string{"https"}
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// replayBody is a request body that can be offered to another origin: the
// transport's Close is ignored, and read reports whether any byte was taken.
//
// For a streamed body it also tells whose fault a failed try was: inRead is
// true while the transport waits for the client's next bytes (a try timer
// firing then means the client stalled, not the origin), cerr keeps an error
// reading the client (a malformed chunk, a body over max_body), and
// progress, when set, is called after each read that returned bytes.
type replayBody struct {
	r        io.Reader
	read     atomic.Bool
	inRead   atomic.Bool
	stalled  atomic.Bool   // the try timer fired while waiting for the client
	eof      atomic.Bool   // the client's body was read to its end
	ended    chan struct{} // closed when a read returned EOF or an error
	endOnce  sync.Once
	progress func()
	mu       sync.Mutex
	cerr     error
}

func (b *replayBody) Read(p []byte) (int, error) {
	b.inRead.Store(true)
	n, err := b.r.Read(p)
	b.inRead.Store(false)
	if n > 0 {
		b.read.Store(true)
		if b.progress != nil {
			b.progress()
		}
	}
	if err == io.EOF {
		b.eof.Store(true)
	} else if err != nil {
		b.mu.Lock()
		b.cerr = err
		b.mu.Unlock()
	}
	if err != nil {
		b.endOnce.Do(func() { close(b.ended) })
	}
	return n, err
}

// clientErr is the error reading the client's body, if any.
func (b *replayBody) clientErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cerr
}
func (b *replayBody) Close() error { return nil }

// tryTimer is the try timer of a streamed request body: reset as the body
// arrives, stopped for good once the try ended (the answer arrived or the
// round trip failed). A nil *tryTimer does nothing.
type tryTimer struct {
	mu      sync.Mutex
	t       *time.Timer
	d       time.Duration
	stopped bool
}

func (tt *tryTimer) reset() {
	tt.mu.Lock()
	if !tt.stopped {
		tt.t.Reset(tt.d)
	}
	tt.mu.Unlock()
}

func (tt *tryTimer) stop() {
	if tt == nil {
		return
	}
	tt.mu.Lock()
	tt.stopped = true
	tt.t.Stop()
	tt.mu.Unlock()
}

// fire runs f unless the timer was stopped.
func (tt *tryTimer) fire(f func()) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if !tt.stopped {
		f()
	}
}

// idleReader bounds each wait for the client's next body bytes by d, through
// the connection's read deadline (used when the listener has no
// read_timeout); done clears it.
type idleReader struct {
	r   io.Reader
	ctl *http.ResponseController
	d   time.Duration
}

func (b *idleReader) Read(p []byte) (int, error) {
	b.ctl.SetReadDeadline(time.Now().Add(b.d))
	return b.r.Read(p)
}

func (b *idleReader) done() { b.ctl.SetReadDeadline(time.Time{}) }

// replayMethod reports whether a request with this method may be sent again
// after it reached an origin: an allow-list of the methods RFC 9110 §9.2.2
// defines as idempotent, less PUT (a PUT that timed out may still be
// running). Methods are case-sensitive: "get" or LOCK, MOVE, PATCH, POST and
// any unknown method are never replayed without an Idempotency-Key.
func replayMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodDelete:
		return true
	}
	return false
}

// hideIdempotencyKeys moves the Idempotency-Key and X-Idempotency-Key
// fields of a request that is not replay-safe (rule 2 of Failover: a
// non-empty Idempotency-Key makes a request replay-safe, nothing else
// does) to lower-case map keys. Go's transport resends a body-less request
// on a new connection when a reused one broke, if its header map merely
// has either key, even empty (Request.isReplayable, golang.org/issue/19943):
// a POST with "X-Idempotency-Key: abc" or an empty Idempotency-Key that the
// origin already received reached it twice. Header.has looks up the
// canonical key only, so the transport no longer sees them; the origin
// still gets both fields with their values (field names are
// case-insensitive, RFC 9110 §5.1; HTTP/2 lower-cases them anyway). Only
// Go's transport sends such a request: the fast path takes body-less GET
// and HEAD, which are replay-safe.
func hideIdempotencyKeys(hdr http.Header) {
	for _, k := range [...]string{"Idempotency-Key", "X-Idempotency-Key"} {
		if v, ok := hdr[k]; ok {
			delete(hdr, k)
			hdr[strings.ToLower(k)] = v
		}
	}
}

// hdrPool holds the fast path's outgoing header maps.
var hdrPool = sync.Pool{New: func() any { return make(http.Header, 16) }}

// serve forwards one request through the pool with failover.
// h2Send is the send_timeout of an HTTP/2 answer's stream (0 for HTTP/1,
// whose connection bounds its writes).
func (pl *pool) serve(w http.ResponseWriter, r *http.Request, maxBody int64, readTimeout, h2Send time.Duration, ae *accessEntry) {
	start := time.Now()
	if ae != nil {
		ae.pool = pl.name
	}
	cfg := &pl.cfg.Retry
	// A gRPC call to an HTTP/2 pool: streamed, bounded by its own deadline,
	// and judged by its grpc-status.
	grpc := pl.cfg.OriginProtocol == OriginHTTP2 && isGRPC(r.Header)
	if !grpc && r.ProtoMajor == 2 && isGRPC(r.Header) {
		// A gRPC call routed to an http1 pool: its origins would get it in
		// HTTP/1.1, which gRPC servers do not speak, and a streaming call
		// would wait for its deadline while its body is buffered. Refused
		// at once, touching no origin (a passive rule would otherwise
		// charge healthy origins for the routing mistake).
		if ok, n := pl.tryLog.allow("", "grpc_http1_pool", time.Now().UnixNano()); ok {
			pl.log.Warn("proxy: gRPC call to a pool that speaks HTTP/1.1 to its origins: refused; set origin_protocol: http2 on the pool, or route gRPC to a pool that has it",
				"pool", pl.name, "method", r.Method, "path", r.URL.Path, "suppressed", n)
		}
		pl.answerGRPC(w, http.StatusNotImplemented, "pool "+pl.name+" speaks HTTP/1.1 to its origins (origin_protocol: http1); gRPC calls need origin_protocol: http2", start)
		return
	}

	// Body: none, buffered (replayable after a 5xx), spooled to a file
	// (request_buffering, reqbuf.go) or streamed.
	var (
		body     []byte
		buffered bool
		stream   io.Reader
		spool    *spooled
	)
	hasBody := r.Body != nil && r.Body != http.NoBody && (r.ContentLength != 0 || len(r.TransferEncoding) > 0)
	if hasBody {
		if r.ContentLength > maxBody {
			pl.answerClose(w, r, http.StatusRequestEntityTooLarge, "request body too large", start)
			return
		}
		if lc, ok := r.Body.(interface{ limitChunks(int64) }); ok && r.ContentLength < 0 {
			lc.limitChunks(maxBody)
		}
		rb := http.MaxBytesReader(w, r.Body, maxBody)
		limit := int64(cfg.MaxBufferedBody)
		// A gRPC call's messages go to the origin as they come: a
		// streaming call's client waits for answers before it sends more,
		// so buffering would stall it (gRPC calls are POSTs, never replayed
		// after a 5xx anyway). An upgrade streams too.
		spoolOK := pl.cfg.spool && !grpc && upgradeType(r.Header) == ""
		// r.ContentLength is -1 for a chunked body: read up to limit+1 to
		// learn on which side of max_buffered_body it is.
		if !grpc && (r.ContentLength <= limit || spoolOK) {
			// A client that stops sending for try_timeout gets 408. When the
			// listener has a read_timeout, that bounds the whole request
			// instead and is left alone.
			var src io.Reader = rb
			var ir *idleReader
			limitName := "read_timeout"
			if readTimeout == 0 {
				ir = &idleReader{r: rb, ctl: http.NewResponseController(w), d: cfg.TryTimeout}
				src, limitName = ir, "retry.try_timeout"
			}
			var b []byte
			var err error
			if r.ContentLength <= limit {
				b, err = io.ReadAll(io.LimitReader(src, limit+1))
			}
			if err == nil && spoolOK && (r.ContentLength > limit || int64(len(b)) > limit) {
				// Received whole before any origin is dialled, so that a
				// slow upload holds no origin connection.
				spool, err = pl.spoolBody(b, src)
				b = nil
			}
			if err != nil {
				pl.readBodyFailed(w, r, err, limitName, start)
				return
			}
			if ir != nil {
				ir.done()
			}
			switch {
			case spool != nil:
				defer spool.close()
			case int64(len(b)) <= limit:
				body, buffered = b, true
			default:
				stream = io.MultiReader(bytes.NewReader(b), rb)
			}
		} else {
			stream = rb
		}
		if stream != nil {
			// The origin may answer while the upload goes on: net/http's
			// server would otherwise try to read the rest of the body away
			// before it writes the answer's head (the fast engine always
			// allows this).
			http.NewResponseController(w).EnableFullDuplex()
		}
	}
	method := r.Method
	replaySafe := (!hasBody || buffered) && (replayMethod(method) || r.Header.Get("Idempotency-Key") != "")
	cutSafe := replaySafe && cfg.OnEjection != OnEjectionWait

	// A body-less GET or HEAD gets a pooled header map: the fast path does
	// not keep it after its round trip, and a try through http.Transport
	// (which might) gets a copy.
	pooled := !hasBody && (method == http.MethodGet || method == http.MethodHead)
	var hdr http.Header
	if pooled {
		hdr = hdrPool.Get().(http.Header)
		defer func() {
			clear(hdr)
			hdrPool.Put(hdr)
		}()
	} else {
		hdr = make(http.Header, len(r.Header)+3)
	}
	copyHeaders(hdr, r.Header, true)
	// The fields the proxy sets are set after the copy: one the client
	// named in Connection was dropped with it as hop-by-hop, and a client
	// could so remove the request's ID (here) or the forwarding fields
	// (below) from what the origin gets (Apache's CVE-2022-31813, Traefik's
	// CVE-2024-45410).
	if pl.rid != "" {
		if v, ok := r.Header[pl.rid]; ok {
			hdr[pl.rid] = v
		}
	}
	// The proxy answered the client's Expect: 100-continue itself; passed
	// on, an origin that never sends 100 would cost every such request the
	// transport's one-second wait.
	delete(hdr, "Expect")
	if te := r.Header["Te"]; te != nil && namedIn(te, "trailers") {
		hdr["Te"] = []string{"trailers"}
	}
	up := upgradeType(r.Header)
	if up != "" && pl.cfg.OriginProtocol == OriginHTTP2 {
		// HTTP/2 has no Upgrade (RFC 9113 §8.6); the origins of this pool
		// are not asked, and not charged a failure for it.
		pl.answerClose(w, r, http.StatusNotImplemented, "this pool speaks HTTP/2 to its origins: WebSocket upgrades need origin_protocol http1", start)
		return
	}
	if up != "" {
		hdr["Connection"] = []string{"Upgrade"}
		hdr["Upgrade"] = []string{up}
	}
	// A chain the client named in Connection was removed as hop-by-hop and
	// is not extended.
	// X-Forwarded-For gets the peer (the hop this proxy saw); X-Real-IP
	// the client, which is the peer unless a trusted proxy named another
	// (clientip.go).
	peer := peerIP(r)
	cip := clientOf(r, peer)
	xff := peer
	if prior := r.Header["X-Forwarded-For"]; len(prior) > 0 && !namedIn(r.Header["Connection"], "X-Forwarded-For") {
		xff = strings.Join(prior, ", ") + ", " + peer
	}
	// X-Real-IP is set to the client address (a client-sent value is
	// replaced); X-Forwarded-For, -Host and X-Real-IP share one allocation.
	// From a trusted proxy (a CDN or load balancer that ends TLS), the
	// scheme, host and port it saw the client use are kept
	// (withTrustedForwarding); from any other peer the proxy's own.
	xfh := r.Host
	proto := protoHTTP
	if r.TLS != nil {
		proto = protoHTTPS
	}
	tf := trustedForwarding(r)
	if tf != nil {
		if tf.proto != nil {
			proto = tf.proto
		}
		if tf.host != "" {
			xfh = tf.host
		}
	}
	fwd := make([]string, 3)
	fwd[0], fwd[1], fwd[2] = xff, xfh, cip
	hdr["X-Forwarded-For"] = fwd[0:1:1]
	hdr["X-Forwarded-Proto"] = proto
	hdr["X-Forwarded-Host"] = fwd[1:2:2]
	// Set by the client, these would let it choose the port, path prefix
	// and scheme an origin builds its links and redirects from (Spring,
	// Rack, IIS read them).
	delete(hdr, "X-Forwarded-Port")
	if tf != nil && tf.port != "" {
		hdr["X-Forwarded-Port"] = []string{tf.port}
	}
	delete(hdr, "X-Forwarded-Prefix")
	delete(hdr, "X-Forwarded-Ssl")
	delete(hdr, "X-Forwarded-Scheme")
	delete(hdr, "X-Url-Scheme")
	delete(hdr, "Front-End-Https")
	// IIS (URL Rewrite) and Symfony take the request path from these: a
	// client could reach a path that path_prefix routing never sent to
	// this origin.
	delete(hdr, "X-Original-Url")
	delete(hdr, "X-Rewrite-Url")
	// A client-sent X-Forwarded-Client-Cert would vouch for a certificate
	// nobody checked (Envoy drops it too, by default); a verified client
	// certificate is passed on in it.
	delete(hdr, "X-Forwarded-Client-Cert")
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		hdr["X-Forwarded-Client-Cert"] = []string{clientCertElement(r.TLS.VerifiedChains[0][0])}
	}
	hdr["X-Real-Ip"] = fwd[2:3:3]
	if _, ok := r.Header["Forwarded"]; ok {
		// A client's Forwarded is replaced by this hop's element, as its
		// X-Forwarded-Host and -Proto are: frameworks read host= and
		// proto= from the first element (Spring), which an appended chain
		// would leave to the client. None is added when the client sent
		// none (X-Forwarded-* carry the same); one the client named in
		// Connection is replaced too, not dropped.
		hdr["Forwarded"] = []string{forwardedElement(cip, xfh, proto[0])}
	}

	if pl.via != nil {
		hdr["Via"] = pl.via.field(r)
	}
	// The pool's request_headers, last: they may replace what the client
	// or the proxy set.
	for _, k := range pl.cfg.RequestHeaders.remove {
		delete(hdr, k)
	}
	for k, v := range pl.cfg.RequestHeaders.set {
		hdr[k] = v
	}

	if !replaySafe {
		hideIdempotencyKeys(hdr)
	}

	fast := pooled && up == ""
	// The Host (HTTP/2 :authority) the origins get: the client's, or the
	// pool's origin_host (a virtual-hosted bucket). X-Forwarded-Host and
	// Forwarded keep the client's.
	outHost := r.Host
	if pl.cfg.OriginHost != "" {
		outHost = pl.cfg.OriginHost
	}
	// The fast engine's client watcher aborts a try whose client left.
	var watch *tryWatch
	if rw, ok := w.(*respWriter); ok {
		watch = &rw.c.watch
	}
	// The budget counts from now: reading a buffered body is the client's
	// time, not the origins'.
	deadline := time.Now().Add(cfg.Budget)
	// A gRPC call carries its own deadline (grpc-timeout): it bounds the
	// wait for the answer instead of try_timeout, and may extend the budget.
	var callTimeout time.Duration
	if grpc {
		if d, ok := grpcTimeout(r.Header.Get("Grpc-Timeout")); ok {
			callTimeout = d
			deadline = maxTime(deadline, time.Now().Add(d))
		}
	}
	var tried uint64
	queued := false             // the request waited for a max_conns slot
	var queueWait time.Duration // for how long
	var lastRB *replayBody      // the last try's streamed body, if any
	lastCause := ""
	timedOut := false // the budget ran out before a try
	// answered: an origin that was available when picked gave an HTTP answer
	// in this request. From then on the last resort is closed: the client gets
	// that origin's answer rather than one from an origin taken out.
	answered := false
	// held are the tries that timed out and the 5xx answers of tries that
	// were retried (and the last one's after them), not charged to the
	// passive detector yet: when every origin that got the request failed
	// it so (two or more: a URL slow or broken everywhere), the request is
	// at fault, not the origins, and none is charged; as soon as another
	// origin answers it below 500 (answeredOK), each is. A try that timed
	// out alone (not retried, or retried at an origin that refused the
	// connection) is charged as before. Metrics and signals count them at
	// once.
	var held []heldFail
	answeredOK := false
	defer func() {
		if answeredOK || len(held) < 2 {
			pl.chargeHeld(held)
		}
	}()
	for try := 0; try < cfg.Tries; try++ {
		// A client that went away gets no retry (and the origins no more
		// load for it). Checked only before a retry: the hot path makes no
		// extra call.
		if try > 0 && (watch.isGone() || clientGone(w, r)) {
			if ae != nil {
				ae.tries = try
			}
			pl.clientClosed(r, try, start)
		}
		now := time.Now()
		if !now.Before(deadline) {
			timedOut = true
			break
		}
		eligible, fromAvail := pl.eligible(tried, !answered)
		if eligible == 0 && try == 0 && pl.cfg.QueueTimeout > 0 && pl.onlyFull(tried, !answered) {
			// Every origin the request could go to is at its max_conns:
			// it waits its turn for queue_timeout, within the budget.
			queued = true
			gone := func() bool { return watch.isGone() || clientGone(w, r) }
			eligible, fromAvail = pl.waitSlot(r, tried, !answered, minTime(deadline, now.Add(pl.cfg.QueueTimeout)), gone)
			queueWait = time.Since(now)
			now = time.Now()
			if eligible == 0 && gone() {
				// Left while waiting: a 499 as after any try, not a
				// queue timeout.
				pl.clientClosed(r, 0, start)
			}
		}
		if eligible == 0 {
			break
		}
		i := pickTry(pl.bal, r, eligible, tried)
		if i < 0 {
			break
		}
		if try == 0 {
			pl.resort.first(pl, fromAvail)
		}
		o := pl.origins[i]
		if try > 0 {
			pl.retries[lastCause].Inc()
		}
		tried |= 1 << i

		var rb *replayBody
		var outBody io.ReadCloser
		switch {
		case buffered:
			outBody = io.NopCloser(bytes.NewReader(body))
		case spool != nil:
			outBody = spool.reader()
		case stream != nil:
			rb = &replayBody{r: stream, ended: make(chan struct{})}
			lastRB = rb
			outBody = rb
		case grpc:
			outBody = emptyBody{}
		}
		tryTimeout := min(cfg.TryTimeout, deadline.Sub(now))
		ctx, cancel, timer := r.Context(), noCancel, (*time.Timer)(nil)
		var tt *tryTimer // a streamed body's try timer
		o.inflight.Add(1)
		// A replay-safe try at an origin picked as available is cut if the
		// origin is taken out while it waits for the head (ejectcut.go).
		tw := watch
		if cutSafe && fromAvail {
			tw = beginEject(watch, o)
		}
		var resp *http.Response
		var err error
		if fast && o.h1 != nil {
			// The fast path bounds the try with connection deadlines.
			var stale error
			resp, err = o.h1.roundTrip(ctx, r, outHost, w, hdr, now.Add(tryTimeout), tw, &stale)
			if stale != nil {
				pl.staleConn(o, r, try+1, stale)
			}
		} else {
			th := hdr
			if pooled {
				th = maps.Clone(hdr)
			}
			if _, ok := th["User-Agent"]; !ok {
				// Go's transport would send its own (Go-http-client/1.1)
				// where the client sent none; an empty one is not sent.
				th["User-Agent"] = []string{""}
			}
			ctx, cancel = context.WithCancelCause(ctx)
			if rb != nil {
				// A streamed body: try_timeout bounds each wait for the
				// client's next bytes, then the wait for the answer, not the
				// whole upload (which may take longer than the budget).
				// A stalled client read is aborted through the connection's
				// read deadline: the transport waits for its body reader to
				// return before RoundTrip does.
				// Once the answer arrived the timer is stopped for good:
				// the transport may go on reading the client's body while
				// the answer streams, and that must not re-arm it.
				tryTimeout = cfg.TryTimeout
				timeoutCause := errTryTimeout
				if callTimeout > 0 {
					// Just before the client gives up, so that the call
					// ends with DEADLINE_EXCEEDED rather than as the
					// client's 499, and an origin that never answers is
					// charged a timeout. Only when the call allowed it at
					// least try_timeout: a shorter deadline is the
					// client's choice, and charging it would let any
					// client eject healthy origins with tiny deadlines.
					tryTimeout = callTimeout - min(callTimeout/10, time.Second)
					if callTimeout < cfg.TryTimeout {
						timeoutCause = errCallDeadline
					}
				}
				body, ctl := rb, http.NewResponseController(w)
				tt = &tryTimer{d: tryTimeout}
				tt.t = time.AfterFunc(tryTimeout, func() {
					tt.fire(func() {
						if body.inRead.Load() {
							body.stalled.Store(true)
							ctl.SetReadDeadline(aLongTimeAgo)
						}
						cancel(timeoutCause)
					})
				})
				rb.progress = tt.reset
			} else if grpc && !hasBody {
				timer = time.AfterFunc(tryTimeout, func() { cancel(errEmptyCall) })
			} else {
				timer = time.AfterFunc(tryTimeout, func() { cancel(errTryTimeout) })
			}
			out := (&http.Request{
				Method: method,
				// ForceQuery keeps an empty query ("/rl?"), as the fast
				// path sends the target as the client wrote it.
				URL: &url.URL{Scheme: o.url.Scheme, Host: o.url.Host, Path: r.URL.Path,
					RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery, ForceQuery: r.URL.ForceQuery},
				Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: th, Body: outBody, ContentLength: r.ContentLength, Host: outHost,
			}).WithContext(ctx)
			if buffered {
				out.ContentLength = int64(len(body))
			}
			if spool != nil {
				out.ContentLength = spool.n
			}
			if outBody == nil {
				out.ContentLength = 0
			}
			if watch != nil {
				cf := cancel // its own variable: only this path allocates it
				watch.beginCancel(&cf, now)
			}
			var headed bool
			if cutSafe && fromAvail {
				hf := cancel
				headed = tw.beginHeadCancel(&hf)
			}
			// Go's transport sends a replayable request (no body, an
			// idempotent method) once more on a new connection when a
			// reused one failed before any byte of an answer, as the fast
			// path does; each connection after the first is such a resend,
			// counted and logged like the fast path's.
			var conns atomic.Int32
			var hc atomic.Pointer[headConn] // the HTTP/1 connection that answered
			// Interim answers arrive on the transport's own goroutine,
			// which may still be in the hook after RoundTrip returned (a
			// try cut by its timeout): im keeps the hook's writes to w
			// apart from this goroutine's, and none is made once RoundTrip
			// returned. As on the fast path, more than max1xx of them fail
			// the try (setting the hook lifts net/http's own bound).
			im := &interimGate{}
			out = out.WithContext(httptrace.WithClientTrace(out.Context(), &httptrace.ClientTrace{
				GotConn: func(ci httptrace.GotConnInfo) {
					conns.Add(1)
					c, _ := ci.Conn.(*headConn)
					if c != nil {
						c.arm()
					}
					hc.Store(c)
				},
				Got1xxResponse: func(code int, h textproto.MIMEHeader) error { return im.send(w, r, code, http.Header(h)) },
			}))
			resp, err = pl.transport.RoundTrip(out)
			im.close()
			if err == nil {
				restoreConnection(resp, hc.Load())
			}
			watch.endCancel()
			if headed && tw.endHeadCancel() && err == nil {
				// Cut as the head arrived: the context is cancelled, the
				// body would break; the request moves on.
				resp.Body.Close()
				resp, err = nil, errEjected
			}
			// Over HTTP/2, Go's transport resends only a request the
			// origin left unprocessed (REFUSED_STREAM, GOAWAY): no stale
			// connection, nothing to charge.
			for n := conns.Load(); n > 1 && pl.cfg.OriginProtocol != OriginHTTP2; n-- {
				pl.staleConn(o, r, try+1, errTransportResend)
			}
		}
		tw.endEject()
		tryEnd := time.Now()
		lat := tryEnd.Sub(now)
		tt.stop()
		if err == nil && resp.StatusCode == http.StatusSwitchingProtocols && !upgradeAsked(r.Header, resp.Header) {
			// A switch to a protocol the client did not ask for: a failed
			// try like a malformed answer (the client would get a tunnel
			// to something it cannot speak).
			resp.Body.Close()
			resp, err = nil, errUnasked101
		}
		if err != nil {
			pl.done(o)
			stopTimer(timer)
			var mbe *http.MaxBytesError
			if rb != nil {
				// The client's fault, not the origin's: a body that broke, went
				// over max_body or stalled longer than try_timeout.
				cerr := rb.clientErr()
				switch {
				case rb.stalled.Load():
					cancel(nil)
					ae.addTry(o.name, 0, causeClientBody)
					pl.log.Info("proxy: client stopped sending its body", "pool", pl.name, "origin", o.name,
						"path", r.URL.Path, "waited", tryTimeout.String())
					pl.answerClose(w, r, http.StatusRequestTimeout, "request body not received in time", start)
					return
				case errors.As(cerr, &mbe):
					cancel(nil)
					ae.addTry(o.name, 0, causeClientBody)
					pl.answerClose(w, r, http.StatusRequestEntityTooLarge, "request body too large", start)
					return
				case cerr != nil:
					cancel(nil)
					ae.addTry(o.name, 0, causeClientBody)
					pl.log.Debug("proxy: request body unreadable", "pool", pl.name, "path", r.URL.Path, "err", cerr.Error())
					pl.answerClose(w, r, http.StatusBadRequest, "malformed or incomplete request body", start)
					return
				}
			}
			if r.Context().Err() != nil || watch.isGone() {
				cancel(nil)
				if ae != nil {
					ae.tries = try + 1
				}
				ae.addTry(o.name, 0, causeClientClosed)
				pl.clientClosed(r, try+1, start) // not the origin's fault
			}
			if errors.Is(err, errEjected) || context.Cause(ctx) == errEjected {
				// The origin was taken out while the try waited: not
				// charged to it (the detector does not see this try), the
				// request moves on as after any failed replay-safe try.
				cancel(nil)
				pl.tryFailed(o.name, CauseEjected, r, try+1, errEjected, 0, nil)
				ae.addTry(o.name, 0, CauseEjected)
				lastCause = CauseEjected
				// Not refused by the retry budget: the proxy itself cut the
				// try, once per request in flight at the ejection, and a
				// 502 for it while other origins sit idle would be the
				// proxy's failure, not load control. Counted, so later
				// retries see it.
				pl.budget.force(tryEnd.UnixNano())
				continue
			}
			if errors.As(err, &mbe) {
				cancel(nil)
				ae.addTry(o.name, 0, causeClientBody)
				pl.answerClose(w, r, http.StatusRequestEntityTooLarge, "request body too large", start)
				return
			}
			if c := context.Cause(ctx); c == errCallDeadline || c == errEmptyCall {
				// Not the origin's fault: the call's own deadline, or a
				// call without a message some servers never answer.
				cause, answer, waitedKey, waited := causeCallDeadline, "the call's deadline passed before an answer", "grpc_timeout", callTimeout
				if c == errEmptyCall {
					cause, answer, waitedKey, waited = causeEmptyCall, "no answer to a call without a message", "waited", tryTimeout
				}
				cancel(nil)
				if ae != nil {
					ae.tries = try + 1
				}
				ae.addTry(o.name, 0, cause)
				pl.log.Debug("proxy: "+answer+"; origin not charged", "pool", pl.name,
					"origin", o.name, "path", r.URL.Path, waitedKey, waited.String())
				pl.answerFor(w, r, http.StatusGatewayTimeout, answer, start)
				return
			}
			if unsendable(err) {
				// Go's transport refused to write the request at all (the
				// router lets through nothing it knows of): the client's
				// request, not the origin, is at fault, and no other origin
				// would take it either.
				cancel(nil)
				ae.addTry(o.name, 0, causeUnsendable)
				pl.log.Info("proxy: request cannot be forwarded", "pool", pl.name, "origin", o.name, "path", r.URL.Path, "err", err.Error())
				pl.answerClose(w, r, http.StatusBadRequest, "request cannot be forwarded", start)
				return
			}
			cause, connLevel := classify(err, ctx)
			cancel(nil)
			// An HTTP/2 origin at its stream limit refuses a stream it did
			// not process (REFUSED_STREAM, RFC 9113 §8.7): like a refused
			// connection, the request moves on when its body can be sent
			// again, and the origin, which only protected itself, is not
			// charged for it.
			refused := isRefusedStream(err)
			switch {
			case refused:
				cause, connLevel = CauseConnectRefused, true
			case cause == CauseLocal:
				// The proxy itself could not open a connection (out of
				// file descriptors, ports, buffers): the origin was never
				// reached, so neither the passive detector nor its signal
				// sees this try; the request moves on like any try that
				// sent nothing.
				logLocalDial(pl.log, pl.name, err)
			default:
				if cause == CauseTimeout {
					// Held: charged unless every origin that got the
					// request failed it (see held).
					held = append(held, heldFail{o, lat, tryEnd.UnixNano(), CauseTimeout})
				} else {
					pl.observeCause(o, cause, lat, tryEnd.UnixNano())
				}
				o.stats.requests.Add(1)
				if cause == CauseTimeout {
					o.stats.timeouts.Add(1)
				} else {
					o.stats.connErrors.Add(1)
				}
			}
			if d := headDetail(err); d != "" {
				// One text on both paths (Go's transport says "server
				// response headers exceeded 262144 bytes").
				err = errHeadTooLarge
				pl.tryFailed(o.name, cause, r, try+1, err, 0, nil)
				ae.addTry(o.name, 0, cause)
				ae.tryDetail(d)
			} else {
				pl.tryFailed(o.name, cause, r, try+1, err, 0, nil)
				ae.addTry(o.name, 0, cause)
			}
			lastCause = cause
			switch {
			case connLevel && (rb == nil || !rb.read.Load()):
				continue // nothing was sent: always move on
			case !replaySafe:
			case try+1 >= cfg.Tries || !pl.hasEligible(tried, !answered) || !tryEnd.Before(deadline):
				// No retry to make: none is counted against retry_budget
				// (nor refused by it), as after a 5xx.
			case pl.budget.allow(tryEnd.UnixNano()):
				continue
			default:
				pl.budgetDeny.Inc()
			}
			break
		}
		// An answer arrived: stop the try timer, the body may stream for long.
		stopTimer(timer)
		if fromAvail {
			answered = true
		}
		failed := resp.StatusCode >= 500
		if !failed {
			// The request was answerable: the tries held so far failed
			// at their origins, charged now rather than when this answer
			// ends (a download or a stream may last hours).
			answeredOK = true
			pl.chargeHeld(held)
			held = nil
		}
		retry5xx := false
		if failed && replaySafe && resp.StatusCode != http.StatusNotImplemented && try+1 < cfg.Tries &&
			pl.hasEligible(tried, !answered) && tryEnd.Before(deadline) {
			if pl.budget.allow(tryEnd.UnixNano()) {
				retry5xx = true
			} else {
				pl.budgetDeny.Inc()
			}
		}
		// settled: the try's outcome is known from the head. A 5xx failed
		// whatever its body; a 101 turns into a tunnel, whose end says
		// nothing about the origin. Any other answer is a success only once
		// its body arrived whole: one that breaks midway (the origin closed
		// or reset the connection, or broke the framing) is a failed try for
		// the metrics, the passive detector and the signals, though the
		// client already has its head. So its outcome is recorded when the
		// body ended (below), with the latency measured now: time to
		// headers, as for every try.
		settled := failed || resp.StatusCode == http.StatusSwitchingProtocols
		if settled {
			if failed && (retry5xx || len(held) > 0) {
				held = append(held, heldFail{o, lat, tryEnd.UnixNano(), CauseStatus5xx})
				o.stats.requests.Add(1)
				o.stats.status5xx.Add(1)
			} else {
				pl.settle(o, failed, lat, tryEnd.UnixNano())
			}
		}
		// A gRPC call's status (passive.grpc_failure_statuses) is read
		// from a trailers-only answer's head here, from the trailer when
		// the body ended otherwise.
		grpcCall := grpc && pl.cfg.Passive.grpcFail != 0
		if grpcCall && !settled {
			if v := resp.Header.Get("Grpc-Status"); pl.cfg.Passive.grpcFailed(v) {
				settled = true
				pl.grpcStatusFailed(o, r, v, lat, try+1, tryEnd.UnixNano())
			}
		}
		if retry5xx {
			pl.tryFailed(o.name, CauseStatus5xx, r, try+1, nil, resp.StatusCode, nil)
			ae.addTry(o.name, resp.StatusCode, "")
			drain(resp.Body)
			pl.done(o)
			cancel(nil)
			lastCause = CauseStatus5xx
			continue
		}
		if failed {
			// The origin's 5xx goes to the client (no retry allowed or left).
			pl.tryFailed(o.name, CauseStatus5xx, r, try+1, nil, resp.StatusCode, func() string {
				return notRetried(replaySafe, resp.StatusCode, try+1 < cfg.Tries, pl.hasEligible(tried, !answered), tryEnd.Before(deadline))
			})
		}
		pl.budget.add(tryEnd.UnixNano())
		if ae != nil {
			ae.origin, ae.tries, ae.upstream = o.name, try+1, tryEnd.Sub(start)
			ae.addTry(o.name, resp.StatusCode, "")
		}
		o.m.code(resp.StatusCode).Inc()
		o.m.latency.Observe(tryEnd.Sub(start).Seconds())
		if rb != nil && !rb.eof.Load() {
			// An origin that read the whole body answers just as the
			// transport reads its end: give that a moment before deciding.
			t := time.NewTimer(10 * time.Millisecond)
			select {
			case <-rb.ended:
			case <-t.C:
			}
			t.Stop()
		}
		unread := rb != nil && !rb.eof.Load()
		if unread {
			// The answer goes out while the upload is unfinished: the
			// connection closes after it (the rest of the stream must never
			// be read as another request) and the rest is bounded.
			closeAfter(w, r)
		}
		// The in-flight count drops when the body ended, also if respond
		// panics. (A function literal: defers inside the loop would be
		// heap-allocated per request.) A body that broke aborts the client
		// connection in bodyEnded, once the try is recorded.
		// The status is read before respond: once the body has ended, the
		// fast path's origin connection, and resp with it, may already be
		// serving another request.
		status := resp.StatusCode
		berr := func() error {
			defer cancel(nil)
			defer pl.done(o)
			if method != http.MethodHead && status != http.StatusSwitchingProtocols {
				resp.Body = pl.watchBody(resp, cancel, watch)
			}
			return pl.respond(w, r, resp, method, h2Send, ae)
		}()
		if grpc {
			o.m.countGRPC(grpcStatusOf(w.Header()))
		}
		if grpcCall && berr == nil && !settled && r.Context().Err() == nil && !watch.isGone() {
			if v := grpcStatusOf(w.Header()); pl.cfg.Passive.grpcFailed(v) {
				settled = true
				pl.grpcStatusFailed(o, r, v, lat, try+1, time.Now().UnixNano())
			}
		}
		if berr != nil || !settled {
			pl.bodyEnded(o, w, r, watch, status, settled, lat, try+1, berr, rb, ae)
		}
		if unread {
			finishUpload(w, r, rb.ended, cfg.TryTimeout)
		}
		return
	}
	pl.budget.add(time.Now().UnixNano())
	// The proxy's own answer. A streamed body that no try read to its end
	// closes the connection after it, as above.
	unread := stream != nil && (lastRB == nil || !lastRB.eof.Load())
	code, msg := http.StatusBadGateway, "all origins failed"
	if ae != nil {
		ae.tries = bits.OnesCount64(tried)
	}
	switch {
	case tried == 0 && (queued || !timedOut):
		// No origin was asked. A wait for a max_conns slot that ended
		// without one is a queue timeout, 503 as HAProxy's, also when
		// retry.budget ended the wait before queue_timeout did: no origin
		// failed to answer in time (504).
		code, msg = http.StatusServiceUnavailable, "no origin available"
		if pl.allFull(r, ae, queueWait) {
			msg = "no origin available: every available origin is at its max_conns"
		}
	case timedOut || lastCause == CauseTimeout || !time.Now().Before(deadline):
		// The budget ran out, or the last try timed out: the status of
		// the last failure, as nginx's (a timeout then refused
		// connections is 502, not 504).
		code, msg = http.StatusGatewayTimeout, "no origin answered in time"
	case lastCause == CauseLocal:
		code, msg = http.StatusServiceUnavailable, "the proxy cannot open a connection to an origin"
	}
	if unread {
		pl.answerClose(w, r, code, msg, start)
		finishUpload(w, r, nil, cfg.TryTimeout)
		return
	}
	pl.answerFor(w, r, code, msg, start)
}

// clientGone reports whether the client of r went away: net/http cancels
// the request's context when it reads the end of the connection; the fast
// engine reads nothing in the background, so its client socket is peeked
// (one non-blocking recv, only between tries). A client that half-closed
// after its request counts as gone, as for net/http.
func clientGone(w http.ResponseWriter, r *http.Request) bool {
	if r.Context().Err() != nil {
		return true
	}
	if rw, ok := w.(*respWriter); ok {
		return peerClosed(rw.c.c)
	}
	return false
}

// clientClosed ends a request whose client went away before an answer:
// counted as code 499 (nginx's "client closed request") under origin
// "none", logged at info (rate-limited), no origin charged; the handler is
// aborted so nothing is written to the dead connection.
func (pl *pool) clientClosed(r *http.Request, tries int, start time.Time) {
	pl.none.code(statusClientClosed).Inc()
	pl.none.latency.Observe(time.Since(start).Seconds())
	pl.budget.add(time.Now().UnixNano())
	if ok, n := pl.tryLog.allow("", causeClientClosed, time.Now().UnixNano()); ok {
		pl.log.Info("proxy: client closed the connection before the answer", "pool", pl.name,
			"method", r.Method, "path", r.URL.Path, "tries", tries, "suppressed", n)
	}
	panic(http.ErrAbortHandler)
}

// staleConn counts and logs the first attempt of a try (on the fast path or
// in Go's transport) that failed on a reused keep-alive connection before
// any byte of an answer and was sent again on a new connection to the same
// origin: in
// vigil_proxy_tries_total under its cause (reset: the origin closed or
// reset the connection as the request went out), logged at info and
// rate-limited like the "try failed" lines. The passive detector and the
// signals are not told: the try's outcome is that of the new connection.
func (pl *pool) staleConn(o *origin, r *http.Request, try int, err error) {
	cause := CauseReset
	o.m.try(cause).Inc()
	if ok, n := pl.tryLog.allow(o.name, causeStaleConn, time.Now().UnixNano()); ok {
		pl.log.Info("proxy: reused origin connection closed before any answer; request sent again on a new connection",
			"pool", pl.name, "origin", o.name, "cause", cause, "method", r.Method, "path", r.URL.Path, "try", try,
			"err", err.Error(), "suppressed", n)
	}
}

// unsolicited logs an origin connection dropped because the origin sent
// bytes nobody asked for: more than its answer's framing said, or while the
// connection was idle (a desynchronised origin; nginx logs "upstream sent
// more data than specified"). They never reach a client. Logged at warn,
// rate-limited like the "try failed" lines.
func (pl *pool) unsolicited(o *origin) {
	if ok, n := pl.tryLog.allow(o.name, causeUnsolicited, time.Now().UnixNano()); ok {
		pl.log.Warn("proxy: origin sent bytes after its answer that no request asked for; its connection was dropped and the bytes discarded",
			"pool", pl.name, "origin", o.name, "suppressed", n)
	}
}

// causeUnsolicited keys the rate limit of unsolicited's log line.
const causeUnsolicited = "unsolicited"

// notRetried says why an origin's 5xx went to the client instead of to
// another origin, in the order the conditions are checked.
func notRetried(replaySafe bool, status int, triesLeft, otherOrigin, timeLeft bool) string {
	switch {
	case !replaySafe:
		return "not replay-safe (a request body not buffered, or POST/PUT/PATCH without Idempotency-Key)"
	case status == http.StatusNotImplemented:
		return "501 is never retried"
	case !triesLeft:
		return "retry.tries used up"
	case !otherOrigin:
		return "no other origin to try"
	case !timeLeft:
		return "retry.budget time used up"
	}
	return "retry_budget exhausted (retries already at their share of the load)"
}

// causeStaleConn keys the rate limit of staleConn's log line.
const causeStaleConn = "stale_conn"

// errTransportResend is staleConn's error for a resend by Go's transport
// (https origins, requests with a body), which does not say what failed.
var errTransportResend = errors.New("the reused connection failed before any answer (Go's transport resent the request)")

// settle records the outcome of one try at origin o: the passive detector
// (at now, unix nanoseconds, with lat the time to the answer's head), the
// signal counts, and vigil_proxy_tries_total{result="ok"} for a success (a
// failure's cause is counted where it is known).
func (pl *pool) settle(o *origin, failed bool, lat time.Duration, now int64) {
	if !failed {
		o.m.tryOK.Inc()
	}
	cause := ""
	if failed {
		cause = CauseStatus5xx
	}
	pl.observeCause(o, cause, lat, now)
	o.stats.requests.Add(1)
	if failed {
		o.stats.status5xx.Add(1)
	}
}

// heldFail is a try's 5xx answer or timeout whose charge to the passive
// detector waits until the request's outcome is known (pool.serve's held).
type heldFail struct {
	o     *origin
	lat   time.Duration
	at    int64
	cause string // CauseStatus5xx or CauseTimeout
}

// chargeHeld charges the held failures to their origins' passive detectors.
func (pl *pool) chargeHeld(held []heldFail) {
	for _, f := range held {
		pl.observeCause(f.o, f.cause, f.lat, f.at)
	}
}

// grpcStatusFailed records a try whose gRPC call the origin answered with
// grpc-status v, one of passive.grpc_failure_statuses: a failed try for the
// passive rules and signals (counted as a 5xx), under cause grpc_status.
// The answer itself goes to the client as the origin sent it.
func (pl *pool) grpcStatusFailed(o *origin, r *http.Request, v string, lat time.Duration, try int, now int64) {
	pl.observeCause(o, CauseGRPCStatus, lat, now)
	o.stats.requests.Add(1)
	o.stats.status5xx.Add(1)
	pl.tryFailed(o.name, CauseGRPCStatus, r, try, errors.New("grpc-status "+grpchealth.StatusName(v)), 0, func() string {
		return "gRPC calls are streamed, never replayed"
	})
}

// grpcStatusOf returns the grpc-status of an answer whose header map is h:
// a trailers-only answer's header field, or the trailer copied into h.
func grpcStatusOf(h http.Header) string {
	if v := h.Get("Grpc-Status"); v != "" {
		return v
	}
	return h.Get(http.TrailerPrefix + "Grpc-Status")
}

// bodyEnded records the end of an answer whose body was being passed to the
// client: berr is the error that broke the origin's body (nil: it arrived
// whole, or the client went away); settled is true when the try was
// recorded at the head already (a 5xx). An origin-side break after the
// head, on a try not yet recorded, is a failed try under its cause (reset,
// timeout, protocol), counted and logged as one, rate-limited with the
// "try failed" lines; the client's connection is then aborted (no retry
// after bytes reached the client, see README "Failover"). A read that
// failed because the client left (the request's context ended, or the
// fast engine's watcher found it gone) is not the origin's fault: that try
// counts as ok.
// The answer's access log entry ae (nil when off) is marked aborted when
// the answer was cut off.
func (pl *pool) bodyEnded(o *origin, w http.ResponseWriter, r *http.Request, watch *tryWatch, status int, settled bool, lat time.Duration, try int, berr error, rb *replayBody, ae *accessEntry) {
	now := time.Now().UnixNano()
	if berr != nil && rb != nil && rb.clientErr() != nil {
		// The client's request stream broke (it went over max_body, sent
		// malformed framing, or stalled) while the answer streamed: the
		// origin had to stop, through no fault of its own. A stream
		// (gRPC) is ended with an error; the origin is not charged.
		if !settled {
			pl.settle(o, false, lat, now)
		}
		ae.abort(abortClientBody)
		var mbe *http.MaxBytesError
		if errors.As(rb.clientErr(), &mbe) {
			if ok, n := pl.tryLog.allow("", causeClientBody, now); ok {
				pl.log.Info("proxy: client request body went over max_body while the answer streamed; stream ended", "pool", pl.name,
					"origin", o.name, "method", r.Method, "path", r.URL.Path, "max_body", units.ByteSize(mbe.Limit).String(), "suppressed", n)
			}
		}
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	if berr == nil || r.Context().Err() != nil || watch.isGone() {
		if !settled {
			pl.settle(o, false, lat, now)
		}
		if berr != nil {
			ae.abort(abortClientClosed)
			panic(http.ErrAbortHandler)
		}
		return
	}
	cause := bodyCause(berr)
	if t := ae.lastTry(); t != nil {
		t.cause = cause
	}
	ae.abort(abortOrigin)
	if !settled {
		pl.observeCause(o, cause, lat, now)
		o.stats.requests.Add(1)
		if cause == CauseTimeout {
			o.stats.timeouts.Add(1)
		} else {
			o.stats.connErrors.Add(1)
		}
		o.m.try(cause).Inc()
	}
	if ok, n := pl.tryLog.allow(o.name, cause, now); ok {
		pl.log.Warn("proxy: origin body broke after the answer began", "pool", pl.name, "origin", o.name,
			"cause", cause, "method", r.Method, "path", r.URL.Path, "try", try, "status", status,
			"err", berr.Error(), "suppressed", n)
	}
	// What the client was sent so far goes out before the abort: net/http
	// would otherwise drop its buffered head and bytes, and the client
	// would see no answer at all rather than a truncated one.
	http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// sendInterim passes an origin's interim (1xx) answer to the client, as a
// proxy must (RFC 9110 §15.2): 103 Early Hints (so the browser preloads
// while the origin works), 102 and the like, with their header fields
// (hop-by-hop ones removed). Not 100 Continue (the proxy answered the
// client's Expect itself), not 101 (an upgrade is the final answer), and
// nothing to an HTTP/1.0 client, which would take it for the final answer.
// The final answer's header starts empty again; failover is unaffected:
// a later origin's final answer may follow another's interim one.
func sendInterim(w http.ResponseWriter, r *http.Request, code int, hdr http.Header) {
	if code == http.StatusContinue || code == http.StatusSwitchingProtocols ||
		r.ProtoMajor == 1 && r.ProtoMinor == 0 {
		return
	}
	h := w.Header()
	saved := maps.Clone(h)
	clear(h)
	copyHeaders(h, hdr, false)
	delete(h, "Content-Length") // never on a 1xx (RFC 9110 §8.6)
	w.WriteHeader(code)
	clear(h)
	maps.Copy(h, saved)
}

// interimGate passes the interim answers Go's transport reports to the
// client (sendInterim) while the try waits in RoundTrip, at most max1xx of
// them.
type interimGate struct {
	mu     sync.Mutex
	n      int
	closed bool // RoundTrip returned: w is the handler's alone
}

func (g *interimGate) send(w http.ResponseWriter, r *http.Request, code int, h http.Header) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errInterimLate
	}
	if code != http.StatusContinue {
		if g.n++; g.n > max1xx {
			return errTooMany1xx
		}
	}
	sendInterim(w, r, code, h)
	return nil
}

func (g *interimGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// errInterimLate ends an exchange whose interim answer came after the try
// had ended.
var errInterimLate = errors.New("interim answer after the try ended")

// watchBody bounds each wait for the next bytes of resp's body by the
// pool's body_timeout. On the fast path the origin connection's deadline is
// moved before each read (nothing to do for a body already buffered);
// through Go's transport a timer, reset before each read, cancels the try.
// A read that times out returns errBodyTimeout (cause timeout). On the fast
// engine each read through the transport also publishes the try's cancel
// function to the client watcher (see h1Body): a client that leaves while
// the origin is silent ends the try (errClientGone).
func (pl *pool) watchBody(resp *http.Response, cancel func(error), watch *tryWatch) io.ReadCloser {
	d := pl.cfg.BodyTimeout
	if d <= 0 || resp.Body == nil || resp.Body == http.NoBody {
		return resp.Body
	}
	if hb, ok := resp.Body.(*h1Body); ok {
		if !hb.eof && !bodyBuffered(resp, hb.c.br) {
			hb.c.bodyIdle = d
		}
		return hb
	}
	b := &timedBody{ReadCloser: resp.Body, d: d, watch: watch, cancel: cancel}
	b.t = time.AfterFunc(d, func() {
		b.fired.Store(true)
		cancel(errBodyTimeout)
	})
	b.t.Stop() // armed by each Read
	return b
}

// timedBody is an answer body from Go's transport whose every read must
// bring bytes within d: the timer cancels the try's context when it fires.
type timedBody struct {
	io.ReadCloser
	d      time.Duration
	t      *time.Timer
	fired  atomic.Bool
	watch  *tryWatch // nil outside the fast engine
	cancel func(error)
}

func (b *timedBody) Read(p []byte) (int, error) {
	b.t.Reset(b.d)
	if b.watch != nil {
		b.watch.beginCancel(&b.cancel, time.Now())
	}
	n, err := b.ReadCloser.Read(p)
	if b.watch != nil {
		b.watch.endCancel()
	}
	b.t.Stop()
	switch {
	case err == nil || err == io.EOF:
	case b.watch.isGone():
		return n, errClientGone
	case b.fired.Load():
		return n, errBodyTimeout
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.t.Stop()
	return b.ReadCloser.Close()
}

// errBodyTimeout is the error of an answer body read that waited longer
// than body_timeout for the origin's next bytes (a timeout: cause timeout).
var errBodyTimeout error = bodyTimeoutError{}

type bodyTimeoutError struct{}

func (bodyTimeoutError) Error() string {
	return "the origin sent no byte of the answer's body for body_timeout"
}
func (bodyTimeoutError) Timeout() bool   { return true }
func (bodyTimeoutError) Temporary() bool { return false }

// bodyCause is the cause of an origin body that broke after its head:
// protocol for a body that ended before its Content-Length or last chunk
// (the origin closed the connection early) or whose chunked framing is
// malformed, timeout for a read that timed out, reset otherwise (the
// connection was reset or closed under the read).
func bodyCause(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), isProtocolError(err):
		return CauseProtocol
	case errors.As(err, &ne) && ne.Timeout():
		return CauseTimeout
	}
	return CauseReset
}

// statusClientClosed is the code counted for a request whose client went
// away before the answer (nginx's 499); it is never sent.
const statusClientClosed = 499

// causeClientClosed keys the rate limit of the client-closed log line.
const causeClientClosed = "client_closed"

// causeClientBody keys the rate limit of "client request body went over
// max_body" lines (not a try cause: the origin is not charged).
const causeClientBody = "client_body"

// causeCallDeadline, causeEmptyCall and causeUnsendable are access log
// causes of tries that ended through no fault of the origin: a gRPC call's
// own deadline passed, a gRPC call without a message got no answer, Go's
// transport refused to send the request.
const (
	causeCallDeadline = "call_deadline"
	causeEmptyCall    = "empty_call"
	causeUnsendable   = "unsendable"
)

// eligible returns the origins a try may go to: available and not tried,
// with fromAvail true; when none is left and resort is true, the last resort:
// unavailable but not drained and not tried, with fromAvail false. Drained
// origins and origins at their max_conns are never tried. serve passes resort
// false once an available origin answered in this request, so an origin taken
// out (verdict-down, passively ejected) is used only when the pool had nothing
// available or every available origin failed without answering.
func (pl *pool) eligible(tried uint64, resort bool) (mask uint64, fromAvail bool) {
	var avail, last uint64
	for i, o := range pl.origins {
		if tried&(1<<i) != 0 || o.full() {
			continue
		}
		switch f := o.flags.Load(); {
		case f == 0:
			avail |= 1 << i
		case f&flagDrained == 0:
			last |= 1 << i
		}
	}
	if avail != 0 {
		return avail, true
	}
	if !resort {
		return 0, false
	}
	return last, false
}

// hasEligible reports whether eligible would offer any origin.
func (pl *pool) hasEligible(tried uint64, resort bool) bool {
	m, _ := pl.eligible(tried, resort)
	return m != 0
}

// answer writes the proxy's own error answer.
func (pl *pool) answer(w http.ResponseWriter, code int, msg string, start time.Time) {
	pl.none.code(code).Inc()
	pl.none.latency.Observe(time.Since(start).Seconds())
	h := w.Header()
	h["Content-Type"] = []string{"text/plain; charset=utf-8"}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	text := http.StatusText(code) + ": " + msg + "\n"
	h["Content-Length"] = []string{strconv.Itoa(len(text))} // also when flushed at once
	w.WriteHeader(code)
	io.WriteString(w, text)
}

// answerFor writes the proxy's own answer to r: a gRPC call over HTTP/2
// gets it in gRPC's terms (answerGRPC), any other request an HTTP error.
func (pl *pool) answerFor(w http.ResponseWriter, r *http.Request, code int, msg string, start time.Time) {
	if r.ProtoMajor == 2 && isGRPC(r.Header) {
		pl.answerGRPC(w, code, msg, start)
		return
	}
	pl.answer(w, code, msg, start)
}

// answerGRPC is the proxy's own answer to a gRPC call, as Envoy sends it: a
// trailers-only answer (HTTP 200, grpc-status, grpc-message) that clients
// read as UNAVAILABLE (502, 503), DEADLINE_EXCEEDED (504: the call gets no
// automatic retry, as it may have run), RESOURCE_EXHAUSTED (413) or
// INTERNAL (400), where a plain HTTP error read as UNAVAILABLE or UNKNOWN.
// Metrics count it under the HTTP code the proxy meant.
func (pl *pool) answerGRPC(w http.ResponseWriter, code int, msg string, start time.Time) {
	pl.none.code(code).Inc()
	pl.none.latency.Observe(time.Since(start).Seconds())
	status := 2 // UNKNOWN
	switch code {
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		status = 14 // UNAVAILABLE
	case http.StatusGatewayTimeout:
		status = 4 // DEADLINE_EXCEEDED
	case http.StatusRequestEntityTooLarge:
		status = 8 // RESOURCE_EXHAUSTED
	case http.StatusBadRequest, http.StatusRequestTimeout:
		status = 13 // INTERNAL
	case http.StatusNotImplemented:
		status = 12 // UNIMPLEMENTED
	}
	pl.none.countGRPC(strconv.Itoa(status))
	h := w.Header()
	h["Content-Type"] = []string{"application/grpc"}
	h["Grpc-Status"] = []string{strconv.Itoa(status)}
	h["Grpc-Message"] = []string{grpcPercentEncode(http.StatusText(code) + ": " + msg)}
	w.WriteHeader(http.StatusOK)
}

// grpcPercentEncode encodes a grpc-message value: bytes outside printable
// ASCII, and '%', as %XX (the gRPC over HTTP/2 spec).
func grpcPercentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// finishUpload bounds what is left of an HTTP/1 upload after its answer
// went out with Connection: close; ended, when not nil, is closed once the
// transport's reads of the body ended. The answer is flushed at once. The
// fast engine reads the rest away itself, bounded. net/http's server reads
// up to 256 KiB of it after the handler with no bound of its own, so here
// the rest is read away under a deadline d (closing with unread bytes could
// reset the answer before the client read it).
func finishUpload(w http.ResponseWriter, r *http.Request, ended <-chan struct{}, d time.Duration) {
	if r.ProtoMajor != 1 {
		return
	}
	ctl := http.NewResponseController(w)
	ctl.Flush()
	if _, fast := w.(*respWriter); fast {
		return
	}
	if ended != nil {
		// The transport may still be forwarding the body: a moment for it
		// to reach the end. It stops reading when the origin closed.
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ended:
		case <-t.C:
		}
		t.Stop()
	}
	// Closing the body reads the rest away (up to 256 KiB), now bounded.
	ctl.SetReadDeadline(time.Now().Add(d))
	r.Body.Close()
}

// answerClose answers a request whose body was not read to its end (too
// large, malformed, stalled) and closes the connection after the answer:
// the rest of the body must not be parsed as the next request, and a
// stalled client must not hold the connection.
func (pl *pool) answerClose(w http.ResponseWriter, r *http.Request, code int, msg string, start time.Time) {
	closeAfter(w, r)
	pl.answerFor(w, r, code, msg, start)
}

// closeAfter marks an HTTP/1 answer Connection: close. HTTP/2 frames every
// request on its own stream, so nothing can be misread there, and net/http
// would answer the header with a GOAWAY for the whole connection.
func closeAfter(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header()["Connection"] = []string{"close"}
	}
}

// drain reads a little of a body we drop so the connection can be reused.
func drain(b io.ReadCloser) {
	io.CopyN(io.Discard, b, 4<<10)
	b.Close()
}

// respond copies the origin's answer to the client. From the first byte on
// there is no retry. It returns the error that broke the origin's body, if
// any (nil when the client went away): the caller records the failed try
// and aborts the client connection, so that the client sees a truncated
// response, not a complete-looking one.
func (pl *pool) respond(w http.ResponseWriter, r *http.Request, resp *http.Response, method string, h2Send time.Duration, ae *accessEntry) error {
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		pl.upgrade(w, r, resp, ae)
		return nil
	}
	h := w.Header()
	copyHeaders(h, resp.Header, false)
	if cl := h["Content-Length"]; len(cl) > 1 {
		// One Content-Length, not a list (RFC 9110 §8.6): a value repeated
		// is sent once, as the fast engine does; differing values (an
		// HTTP/2 origin's: Go's transport does not check them) are dropped,
		// and the server frames the body.
		h["Content-Length"] = cl[:1:1]
		for _, v := range cl[1:] {
			if strings.TrimSpace(v) != strings.TrimSpace(cl[0]) {
				delete(h, "Content-Length")
				break
			}
		}
	}
	if pl.rid != "" {
		// The request's ID, not one the origin sent under that name: the
		// one in the proxy's logs; with request_id_in_answers: false,
		// neither.
		if !pl.ridAnswers {
			delete(h, pl.rid)
		} else if v, ok := r.Header[pl.rid]; ok {
			h[pl.rid] = v
		}
	}
	if _, ok := h["Content-Type"]; !ok {
		// net/http's server would sniff one the origin did not send; a nil
		// value stops it (and writes nothing on the fast engine).
		h["Content-Type"] = nil
	}
	if len(resp.Trailer) > 0 {
		keys := make([]string, 0, len(resp.Trailer))
		for k := range resp.Trailer {
			if trailerAllowed(k, resp.Header) {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 {
			h["Trailer"] = []string{strings.Join(keys, ", ")}
			if r.ProtoMajor == 1 && r.ProtoMinor >= 1 && method != http.MethodHead &&
				resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified {
				// An HTTP/2 origin may send trailers after a body of
				// declared length; an HTTP/1.1 client gets them only with
				// chunked framing.
				delete(h, "Content-Length")
			}
		}
	}
	if rw, ok := w.(*respWriter); ok {
		rw.setReason(resp.Status, resp.StatusCode)
	}
	w.WriteHeader(resp.StatusCode)
	if method == http.MethodHead {
		return nil
	}
	// An empty body (Content-Length 0, or an HTTP/2 origin's HEADERS that
	// ended the stream: a gRPC trailers-only answer) is never flushed: the
	// head goes out as the handler returns, over HTTP/2 in one HEADERS
	// frame with END_STREAM. Flushed, it went as HEADERS and an empty DATA
	// frame, and gRPC clients took the grpc-status in it for a header of an
	// answer that never sent its trailers (INTERNAL).
	empty := resp.ContentLength == 0
	// Stream immediately for SSE and bodies of unknown length.
	flush := resp.ContentLength < 0 || !empty && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	var fl http.Flusher
	if flush {
		fl, _ = w.(http.Flusher)
	}
	var st *streamSend
	if h2Send > 0 {
		st = newStreamSend(w, h2Send)
		defer st.close()
		if fl == nil {
			fl, _ = w.(http.Flusher) // the end of the body is flushed in time too
		}
	}
	if flush && fl != nil {
		st.flush(fl)
	}
	// Other answers are flushed whenever the origin has nothing more in
	// hand: before a read that must wait for it (fast path: nothing
	// buffered from its connection), and after a short read (Go's
	// transport). So a slow or stalled origin's head and first bytes reach
	// the client as they come, as behind nginx, while an answer that
	// arrived whole goes out in one write.
	var (
		hb      *h1Body // fast path: its buffer says whether a read waits
		pending bool    // written since the last flush
	)
	if !flush {
		if fl == nil {
			fl, _ = w.(http.Flusher)
		}
		hb, _ = resp.Body.(*h1Body)
		pending = !empty // the head
	}
	bp := bufPool.Get().(*[]byte)
	buf := *bp
	for first := true; ; first = false {
		// Through Go's transport nothing says whether a read will wait: the
		// head goes out before the first read (one more write when the body
		// came with it), so a stalled body never holds back the status.
		if pending && fl != nil && (hb == nil && first || hb != nil && hb.c.br.Buffered() == 0) {
			st.flush(fl)
			pending = false
		}
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			var werr error
			if st != nil {
				werr = st.write(w, buf[:n])
			} else {
				_, werr = w.Write(buf[:n])
			}
			if werr != nil {
				bufPool.Put(bp)
				pl.clientWriteFailed(w, r, ae, werr, st)
				return nil // the client went away, or took nothing for send_timeout
			}
			if (flush || hb == nil && rerr == nil && n < len(buf)) && fl != nil {
				st.flush(fl)
				pending = false
			} else {
				pending = true
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			bufPool.Put(bp)
			return rerr
		}
	}
	bufPool.Put(bp)
	if st != nil && fl != nil && !empty {
		st.flush(fl)
	}
	for k, vv := range resp.Trailer {
		if trailerAllowed(k, resp.Header) {
			h[http.TrailerPrefix+k] = vv
		}
	}
	return nil
}

// clientWriteFailed records an answer cut off because a write to its
// client failed: a write that made no progress for send_timeout, or one
// that ran into write_timeout (the whole answer's limit) while the client
// was still taking bytes, each logged at info, rate-limited like the "try
// failed" lines; or a client that went away. Either way the access log line
// is marked aborted (send_timeout, write_timeout, client_closed): its
// status is the origin's, its bytes what was written.
func (pl *pool) clientWriteFailed(w http.ResponseWriter, r *http.Request, ae *accessEntry, err error, st *streamSend) {
	if !errors.Is(err, os.ErrDeadlineExceeded) && !st.expired() {
		ae.abort(abortClientClosed)
		return
	}
	cause, msg := causeSendTimeout, "proxy: client took no bytes of the answer for send_timeout; answer cut off"
	if !st.expired() && writeTimeoutPassed(w, r, time.Now()) {
		// Over HTTP/2 a deadline streamSend did not set is the stream's
		// write_timeout (net/http's HTTP/2 server times each stream).
		cause, msg = causeWriteTimeout, "proxy: answer not sent within write_timeout; answer cut off"
	}
	ae.abort(cause)
	if ok, n := pl.tryLog.allow("", cause, time.Now().UnixNano()); ok {
		pl.log.Info(msg, "pool", pl.name, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr,
			"cause", cause, "suppressed", n)
	}
}

// writeTimeoutPassed reports whether the write deadline write_timeout set
// for r's answer has passed at now: the deadline the fast engine set
// (econn.writeBy), or the one net/http's HTTP/1 server set on the
// connection (its sendTimer records it). Both timeouts fail a write with
// os.ErrDeadlineExceeded; send_timeout's moves with every write that makes
// progress, write_timeout's is fixed when the request's head is read. Over
// HTTP/2 it is true: send_timeout there is streamSend's, which says when
// it fired, and the only other deadline of a stream is write_timeout's.
func writeTimeoutPassed(w http.ResponseWriter, r *http.Request, now time.Time) bool {
	if r.ProtoMajor == 2 {
		return true
	}
	var by time.Time
	for {
		if rw, ok := w.(*respWriter); ok {
			by = rw.c.writeBy
			break
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	if by.IsZero() {
		if rc, _ := r.Context().Value(refusalConnKey{}).(*refusalConn); rc != nil {
			rc.send.mu.Lock()
			by = rc.send.wdl
			rc.send.mu.Unlock()
		}
	}
	return !by.IsZero() && !now.Before(by)
}

// The causes of clientWriteFailed's log line (its rate limit's key) and
// access log values.
const (
	causeSendTimeout  = abortSendTimeout
	causeWriteTimeout = abortWriteTimeout
)

// notTrailers are the fields an origin's trailer section must not carry on
// (RFC 9110 §6.5.1): framing, routing, authentication, cookies, control
// data and hop-by-hop fields. A client that merged them into the answer's
// header would be misled (a Content-Length, a Set-Cookie after the fact).
var notTrailers = map[string]bool{
	"Age": true, "Authorization": true, "Cache-Control": true, "Connection": true,
	"Content-Encoding": true, "Content-Length": true, "Content-Range": true,
	"Content-Type": true, "Cookie": true, "Date": true, "Expect": true, "Expires": true,
	"Host": true, "Keep-Alive": true, "Location": true, "Max-Forwards": true,
	"Pragma": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Range": true, "Retry-After": true, "Set-Cookie": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Vary": true, "Www-Authenticate": true,
}

// trailerAllowed reports whether trailer field k (canonical) goes on to the
// client: not one of notTrailers, nor one the answer's Connection header
// names.
func trailerAllowed(k string, hdr http.Header) bool {
	if notTrailers[k] {
		return false
	}
	for _, v := range hdr["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(textproto.TrimString(f), k) {
				return false
			}
		}
	}
	return true
}

// errUnasked101 is a 101 answer to a request that did not ask for that
// upgrade.
var errUnasked101 error = &protocolError{"the origin switched to a protocol the client did not ask for"}

// upgradeAsked reports whether a 101 answer with header resp switches to the
// WebSocket upgrade that the request with header req asked for.
func upgradeAsked(req, resp http.Header) bool {
	up := upgradeType(resp)
	return up != "" && strings.EqualFold(up, upgradeType(req))
}

// upgrade passes a 101 Switching Protocols (WebSocket) through: the client
// connection is hijacked and bytes are copied both ways until one side ends.
// A 101 to anything but the WebSocket upgrade the client asked for is a 502.
// The bytes that went each way are left in ae for the access log.
func (pl *pool) upgrade(w http.ResponseWriter, r *http.Request, resp *http.Response, ae *accessEntry) {
	up := upgradeType(resp.Header)
	if !upgradeAsked(r.Header, resp.Header) {
		pl.log.Warn("proxy: origin switched to a protocol the client did not ask for", "pool", pl.name, "upgrade", up)
		pl.answer(w, http.StatusBadGateway, "the origin switched to a protocol the client did not ask for", time.Now())
		return
	}
	backConn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	if pl.tunnels != nil {
		if !pl.tunnels.add(conn) {
			return // shutting down: closed at once
		}
		defer pl.tunnels.remove(conn)
	}
	h := http.Header{}
	copyHeaders(h, resp.Header, false)
	if pl.rid != "" {
		// The request's ID, as on every other answer (respond).
		if !pl.ridAnswers {
			delete(h, pl.rid)
		} else if v, ok := r.Header[pl.rid]; ok {
			h[pl.rid] = v
		}
	}
	h["Connection"] = []string{"Upgrade"}
	h["Upgrade"] = []string{up}
	resp.Header = h
	resp.Body = nil
	if err := resp.Write(brw); err != nil {
		return
	}
	if err := brw.Flush(); err != nil {
		return
	}
	// A tunnel through which nothing went either way for
	// tunnel_idle_timeout is closed: it holds the origin's in-flight count
	// (max_conns), and idle tunnels would otherwise hold it forever.
	idle := pl.cfg.TunnelIdleTimeout
	if idle <= 0 {
		idle = DefaultTunnelIdleTimeout
	}
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var idled atomic.Bool
	var watchdog *time.Timer
	watchdog = time.AfterFunc(idle, func() {
		if rest := time.Duration(last.Load()+int64(idle)) - time.Duration(time.Now().UnixNano()); rest > 0 {
			watchdog.Reset(rest)
			return
		}
		idled.Store(true)
		conn.Close()
		backConn.Close()
	})
	defer watchdog.Stop()
	errc := make(chan error, 2)
	var toClient, toOrigin int64
	go func() {
		n, err := io.Copy(conn, &activityReader{r: backConn, last: &last})
		toClient = n
		errc <- err
	}()
	go func() {
		n, err := io.Copy(backConn, &activityReader{r: brw, last: &last})
		toOrigin = n
		errc <- err
	}()
	<-errc
	backConn.Close()
	conn.Close()
	<-errc
	if ae != nil {
		ae.tunnelDown, ae.tunnelUp, ae.tunnel = toClient, toOrigin, true
	}
	if idled.Load() {
		pl.log.Info("proxy: tunnel closed after tunnel_idle_timeout without traffic", "pool", pl.name,
			"upgrade", up, "idle", idle.String())
	}
}

// activityReader records the time of each read that returned bytes.
type activityReader struct {
	r    io.Reader
	last *atomic.Int64
}

func (a *activityReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n > 0 {
		a.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// retryBudget counts a pool's requests and retries over the last 10 one-second
// slots. Retries are allowed while retries < 10 + ratio × requests.
type retryBudget struct {
	ratio float64
	slots [10]struct {
		epoch        atomic.Int64
		req, retries atomic.Int64
	}
}

func (b *retryBudget) slot(now int64) int {
	e := now / int64(time.Second)
	s := &b.slots[e%10]
	if old := s.epoch.Load(); old != e && s.epoch.CompareAndSwap(old, e) {
		s.req.Store(0)
		s.retries.Store(0)
	}
	return int(e % 10)
}

// add counts a finished request.
func (b *retryBudget) add(now int64) {
	b.slots[b.slot(now)].req.Add(1)
}

// force counts a retry the budget does not refuse (a try the proxy cut).
func (b *retryBudget) force(now int64) {
	b.slots[b.slot(now)].retries.Add(1)
}

// allow reports whether one more retry fits the budget, and counts it.
func (b *retryBudget) allow(now int64) bool {
	e := now / int64(time.Second)
	b.slot(now)
	var req, ret int64
	for i := range b.slots {
		s := &b.slots[i]
		if ep := s.epoch.Load(); ep > e-10 && ep <= e {
			req += s.req.Load()
			ret += s.retries.Load()
		}
	}
	if float64(ret) >= 10+b.ratio*float64(req) {
		return false
	}
	b.slots[e%10].retries.Add(1)
	return true
}
