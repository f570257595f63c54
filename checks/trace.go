package checks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// runTrace records the timing and connection events of one run. The
// httptrace hooks can fire on the transport's dial goroutine, even after
// the request returned, so every field is guarded by mu.
//
// A run with http.follow_redirects makes one request per hop. The fields
// below describe the current hop (the first request, then each redirect
// in turn): cause classification looks at it alone, so a redirect to an
// address that never connects is connect_timeout even though the first
// hop connected. The dns, connect and tls spans of the hops already done
// are added up in prev, so each phase is the sum over the hops, as
// blackbox_exporter reports it.
type runTrace struct {
	mu    sync.Mutex
	start time.Time
	// timeout is the check's configured timeout (Options.Timeout; 0 =
	// none), quoted by timeout messages when the run lasted about that long.
	timeout time.Duration

	hops                int // requests begun (GetConn); 0 for tcp and tls checks
	dnsStart, dnsDone   time.Time
	connStart, connDone time.Time
	tlsStart, tlsDone   time.Time
	// firstByte is the first byte of the current hop's final (non-1xx)
	// response head.
	firstByte time.Time

	connected bool // a TCP connection was established
	dialErr   error
	tlsErr    error
	tlsState  *tls.ConnectionState

	// conn is the connection the current hop got, when vigil dialed it
	// (http checks), so that after a 1xx interim response the first read
	// of the final response can be timed.
	conn *markConn
	// interim counts the 1xx responses of the current hop; interimAt is
	// when the last one was read and interimCode its status.
	interim     int
	interimAt   time.Time
	interimCode int

	prev Phases // dns, connect and tls summed over the hops before the current one

	// certAsked: a server of the run sent a CertificateRequest; certSent:
	// vigil answered it with the configured client certificate.
	certAsked, certSent bool
}

type traceKey struct{}

func traceFrom(ctx context.Context) *runTrace {
	t, _ := ctx.Value(traceKey{}).(*runTrace)
	return t
}

// withTrace installs the trace into ctx for httptrace-aware code (net.Dialer,
// http.Transport) and for vigil's dialer.
func (t *runTrace) withTrace(ctx context.Context) context.Context {
	ctx = context.WithValue(ctx, traceKey{}, t)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn:  func(string) { t.newHop() },
		GotConn:  t.gotConn,
		DNSStart: func(httptrace.DNSStartInfo) { t.mark(&t.dnsStart, false) },
		DNSDone:  func(httptrace.DNSDoneInfo) { t.mark(&t.dnsDone, true) },
		ConnectStart: func(string, string) {
			t.mark(&t.connStart, false)
		},
		ConnectDone: func(_, _ string, err error) {
			t.mu.Lock()
			t.connDone = time.Now()
			if err == nil {
				t.connected = true
			}
			t.mu.Unlock()
		},
		TLSHandshakeStart: func() { t.mark(&t.tlsStart, false) },
		TLSHandshakeDone: func(cs tls.ConnectionState, err error) {
			t.mu.Lock()
			t.tlsDone = time.Now()
			t.tlsErr = err
			if err == nil {
				t.tlsState = &cs
			}
			t.mu.Unlock()
		},
		// net/http reports the first byte of the first response head, which
		// may be a 1xx interim response (103 Early Hints, 100 Continue);
		// Got1xxResponse undoes it so that ttfb is the final response's.
		GotFirstResponseByte: func() { t.mark(&t.firstByte, true) },
		Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
			t.got1xx(code)
			return nil
		},
	})
}

// newHop starts the trace of the next request of the run: the spans of the
// current hop are added to prev and its state is cleared.
func (t *runTrace) newHop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hops++
	if t.hops == 1 {
		return
	}
	t.prev.DNS += span(t.dnsStart, t.dnsDone)
	t.prev.Connect += span(t.connStart, t.connDone)
	t.prev.TLS += span(t.tlsStart, t.tlsDone)
	t.dnsStart, t.dnsDone = time.Time{}, time.Time{}
	t.connStart, t.connDone = time.Time{}, time.Time{}
	t.tlsStart, t.tlsDone = time.Time{}, time.Time{}
	t.firstByte = time.Time{}
	t.connected, t.dialErr, t.tlsErr, t.tlsState = false, nil, nil, nil
	t.conn = nil
	t.interim, t.interimAt, t.interimCode = 0, time.Time{}, 0
}

// gotConn notes the hop's connection when vigil's dialer made it.
func (t *runTrace) gotConn(info httptrace.GotConnInfo) {
	c := info.Conn
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	mc, _ := c.(*markConn)
	t.mu.Lock()
	t.conn = mc
	// A reused keep-alive connection reports no ConnectDone: the hop is
	// connected all the same.
	t.connected = true
	t.mu.Unlock()
}

// got1xx records an interim response: the first byte seen so far was not
// the final response's, so firstByte waits for the next read.
func (t *runTrace) got1xx(code int) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.firstByte = time.Time{}
	t.interim++
	t.interimAt, t.interimCode = now, code
	if t.conn != nil {
		t.conn.arm()
	}
}

// settle fixes the current hop's first byte after 1xx responses, once the
// round trip returned (complete: with the final response head; before the
// body is read). It is the first read from the connection after the last
// 1xx; when the final head needed no read (it came in the same packets as
// the 1xx) it is the 1xx's time. After an error it is set only when bytes
// of the final head arrived.
func (t *runTrace) settle(complete bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.interim == 0 || !t.firstByte.IsZero() {
		return
	}
	if t.conn != nil {
		if at := t.conn.armedRead(); !at.IsZero() {
			t.firstByte = at
			return
		}
	}
	if complete {
		t.firstByte = t.interimAt
	}
}

// mark sets *f to now; with overwrite false only the first call counts
// (happy-eyeballs dials fire ConnectStart per address).
func (t *runTrace) mark(f *time.Time, overwrite bool) {
	now := time.Now()
	t.mu.Lock()
	if overwrite || f.IsZero() {
		*f = now
	}
	t.mu.Unlock()
}

func (t *runTrace) setDialErr(err error) {
	t.mu.Lock()
	t.dialErr = err
	t.mu.Unlock()
}

// span is b − a, or 0 when either is unset or b is before a.
func span(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() || b.Before(a) {
		return 0
	}
	return b.Sub(a)
}

// phases fills the timing phases; end is when the run finished. dns,
// connect and tls are summed over the hops; ttfb runs from the start of
// the run to the last hop's first byte (0 when the last hop got none), so
// it includes the earlier hops whole.
func (t *runTrace) phases(end time.Time) Phases {
	t.mu.Lock()
	defer t.mu.Unlock()
	var p Phases
	p.DNS = t.prev.DNS + span(t.dnsStart, t.dnsDone)
	p.Connect = t.prev.Connect + span(t.connStart, t.connDone)
	p.TLS = t.prev.TLS + span(t.tlsStart, t.tlsDone)
	p.TTFB = span(t.start, t.firstByte)
	p.Transfer = span(t.firstByte, end)
	p.Total = end.Sub(t.start)
	return p
}

// hopTransport sends each hop of a run: to the check's own host (ownHost,
// any port) through own, whose TLS client uses tls.server_name (or the
// Host header's name), and to any other host a redirect names through
// other, which verifies that host's own name. It settles each hop's 1xx
// timing when its round trip returns, before net/http or the check reads
// the body.
type hopTransport struct {
	own, other http.RoundTripper
	ownHost    string
}

func (h hopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt := h.own
	if h.other != nil && !strings.EqualFold(req.URL.Hostname(), h.ownHost) {
		rt = h.other
	}
	resp, err := rt.RoundTrip(req)
	if t := traceFrom(req.Context()); t != nil {
		t.settle(err == nil)
	}
	return resp, err
}

// markConn is a connection that can time its first read after arm: after
// a 1xx interim response that read brings the final response head.
type markConn struct {
	net.Conn
	armed atomic.Bool
	at    atomic.Pointer[time.Time]
}

func (c *markConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.armed.Load() && c.armed.CompareAndSwap(true, false) {
		now := time.Now()
		c.at.Store(&now)
	}
	return n, err
}

// arm starts waiting for the next read.
func (c *markConn) arm() {
	c.at.Store(nil)
	c.armed.Store(true)
}

// armedRead is the time of the first read since arm (zero if none) and
// stops waiting.
func (c *markConn) armedRead() time.Time {
	c.armed.Store(false)
	if at := c.at.Load(); at != nil {
		return *at
	}
	return time.Time{}
}

// dialer is the dialer every check uses: it answers names under the
// reserved TLD .invalid (RFC 6761 §6.4) with NXDOMAIN without asking a
// resolver, and records the dial error for cause classification.
//
// With family ("ip4" or "ip6", the check's ip_protocol) it dials only
// addresses of that family, and with fallback the other family when the
// name has none (or is a literal of the other family).
type dialer struct {
	net.Dialer
	family   string
	fallback bool
}

func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err == nil && isInvalidHost(host) {
		err := &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		if t := traceFrom(ctx); t != nil {
			t.setDialErr(err)
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	c, err := d.dial(ctx, network, host, addr)
	if err != nil {
		if t := traceFrom(ctx); t != nil {
			t.setDialErr(err)
		}
	}
	return c, err
}

// dial dials addr over network ("tcp", or "udp" for dns checks), or, with
// family, over that family's network (then the other's with fallback). A name with no address of
// the family is a DNS error, a literal of the other family an
// ipFamilyError.
func (d *dialer) dial(ctx context.Context, network, host, addr string) (net.Conn, error) {
	if d.family == "" || (network != "tcp" && network != "udp") {
		return d.Dialer.DialContext(ctx, network, addr)
	}
	other := map[string]string{"ip4": "ip6", "ip6": "ip4"}[d.family]
	c, err := d.Dialer.DialContext(ctx, network+d.family[2:], addr)
	if noAddress(err) && d.fallback {
		c, err = d.Dialer.DialContext(ctx, network+other[2:], addr)
	}
	if noAddress(err) { // (after a fallback: neither family; the preferred one is named)
		if net.ParseIP(host) != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &ipFamilyError{host: host, family: d.family}}
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{
			Err: fmt.Sprintf("no IPv%s address (ip_protocol: %s)", d.family[2:], d.family), Name: host, IsNotFound: true}}
	}
	return c, err
}

// noAddress reports whether a dial over tcp4 or tcp6 found no address of
// that family.
func noAddress(err error) bool {
	var ae *net.AddrError
	return errors.As(err, &ae) && ae.Err == "no suitable address found"
}

// ipFamilyError: an IP literal of the family ip_protocol excludes.
type ipFamilyError struct{ host, family string }

func (e *ipFamilyError) Error() string {
	return fmt.Sprintf("%s is not an IPv%s address (ip_protocol: %s)", e.host, e.family[2:], e.family)
}

func isInvalidHost(h string) bool {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	return h == "invalid" || strings.HasSuffix(h, ".invalid")
}

// classify maps a run error to its Cause and a sentence for Result.Err.
// Order matters: a recorded dial error wins (it says which phase broke),
// then certificate and TLS errors, then deadlines by how far the run got,
// then resets.
func classify(err error, t *runTrace, elapsed time.Duration) (Cause, string) {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	t.mu.Lock()
	dialErr, tlsErr := t.dialErr, t.tlsErr
	connected := t.connected
	inDNS := !t.dnsStart.IsZero() && t.dnsDone.IsZero()
	inConnect := !t.connStart.IsZero() && !connected
	// A handshake cut short by the deadline may report TLSHandshakeDone
	// (with the context error) before or after the request returns.
	inTLS := !t.tlsStart.IsZero() && (t.tlsDone.IsZero() || isCtxErr(t.tlsErr))
	if isCtxErr(tlsErr) {
		tlsErr = nil
	}
	gotFirstByte := !t.firstByte.IsZero()
	interim, interimCode := t.interim, t.interimCode
	t.mu.Unlock()

	deadline := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err)
	// A run stopped at the check's timeout says so with the value
	// configured ("within 2s"), not the few more microseconds measured; one
	// stopped much earlier by its caller's deadline says how long it ran.
	after := elapsed.Round(time.Millisecond)
	if t.timeout > 0 && elapsed >= t.timeout-t.timeout/20 {
		after = t.timeout
	}

	// The agent's own limits (no file descriptor, no local port) fail a
	// dial before any packet leaves: the check could not run, and the
	// target is not to blame.
	if !connected {
		for _, e := range []error{dialErr, err} {
			if e != nil && units.LocalDialError(e) {
				return CauseAgent, localDialMsg(e)
			}
		}
	}
	if dialErr != nil && !connected {
		return classifyDial(dialErr)
	}
	var pe *proxyError
	if errors.As(err, &pe) {
		return CauseConnect, pe.Error()
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return CauseDNS, "dns: " + dnsErr.Error()
	}
	if c, msg, ok := certCause(err); ok {
		return c, msg
	}
	if c, msg, ok := certCause(tlsErr); ok {
		return c, msg
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return CauseConnectRefused, refusedMsg(err)
	}
	if deadline {
		switch {
		case inDNS:
			return CauseDNS, fmt.Sprintf("dns: no answer within %s", after)
		case inConnect || (!connected && !inTLS):
			return CauseConnectTimeout, fmt.Sprintf("connect: no connection within %s", after)
		case inTLS:
			return CauseTLS, fmt.Sprintf("tls: handshake not finished within %s", after)
		}
		if gotFirstByte {
			return CauseTimeout, fmt.Sprintf("timeout: response not complete within %s", after)
		}
		if interim > 0 {
			return CauseTimeout, fmt.Sprintf("timeout: no response within %s (only an interim %d)", after, interimCode)
		}
		return CauseTimeout, fmt.Sprintf("timeout: no response within %s", after)
	}
	if errors.Is(err, context.Canceled) {
		return CauseInternal, "run canceled"
	}
	if tlsErr != nil || isTLSError(err) {
		e := tlsErr
		if e == nil {
			e = err
		}
		return CauseTLS, "tls: " + strings.TrimPrefix(rootMsg(e), "tls: ") + t.clientCertHint(e)
	}
	if !connected {
		return CauseConnect, "connect: " + rootMsg(err)
	}
	if c, msg, ok := http2Cause(err); ok {
		return c, msg
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return CauseReset, resetMsg(err)
	}
	if c, msg, ok := protocolCause(err); ok {
		return c, msg
	}
	return CauseInternal, rootMsg(err)
}

// protocolCause recognises answers that break HTTP: too many redirects,
// a response head over the 1 MiB limit, a malformed status line, header or
// Location, a redirect to a scheme other than http(s), bad chunked framing. They are the
// origin's doing, so they fail the check with cause protocol rather than
// internal, which is kept for vigil's own bugs. net/http reports most of
// them as untyped errors, so they are recognised by their text.
func protocolCause(err error) (Cause, string, bool) {
	var re *redirectError
	if errors.As(err, &re) {
		return CauseProtocol, re.Error(), true
	}
	msg := rootMsg(err)
	for _, s := range []string{
		"server response headers exceeded", // Transport.MaxResponseHeaderBytes
		"malformed HTTP",                   // status line, version, header, chunked framing
		"malformed MIME header",
		"invalid header field",
		"failed to parse Location header",
		"bad Content-Length",
		"invalid Trailer",
		"too many transfer encodings",
		"unsupported transfer encoding",
		"invalid byte in chunk length",
		"http chunk length too large",
		"multiple Content-Length headers", // RFC 9112 §6.3: differing values
	} {
		if strings.Contains(msg, s) {
			msg = strings.TrimPrefix(msg, "net/http: HTTP/1.x transport connection broken: ")
			msg = strings.TrimPrefix(msg, "net/http: ")
			return CauseProtocol, "protocol: " + msg, true
		}
	}
	return "", "", false
}

// http2Cause recognises the HTTP/2 errors that are the origin's doing;
// net/http's HTTP/2 error types are unexported, so by their text. A stream
// the server reset (RST_STREAM, "received from peer") or a connection it
// closed with GOAWAY is cause reset, as a connection closed mid-response
// over HTTP/1.1 is; a stream error vigil's side raised because the server
// broke the framing is cause protocol.
func http2Cause(err error) (Cause, string, bool) {
	msg := rootMsg(err)
	switch {
	case strings.Contains(msg, "stream error: ") && strings.Contains(msg, "received from peer"):
		return CauseReset, "stream reset by the server (HTTP/2 RST_STREAM " + h2Code(msg) + ") before the response was complete", true
	case strings.Contains(msg, "server sent GOAWAY"):
		return CauseReset, "connection closed by the server (HTTP/2 GOAWAY) before the response was complete", true
	case strings.Contains(msg, "stream error: "):
		return CauseProtocol, "protocol: " + strings.TrimPrefix(msg, "http2: "), true
	}
	return "", "", false
}

// h2Code is the error code in an HTTP/2 stream error's text ("stream
// error: stream ID 1; INTERNAL_ERROR; received from peer").
func h2Code(msg string) string {
	parts := strings.Split(msg[strings.Index(msg, "stream error: "):], "; ")
	if len(parts) >= 2 && parts[1] != "" {
		return parts[1]
	}
	return "error"
}

// classifyDial maps an error from dialing (DNS + TCP connect).
func classifyDial(err error) (Cause, string) {
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr):
		return CauseDNS, "dns: " + dnsErr.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return CauseConnectRefused, refusedMsg(err)
	case errors.As(err, new(*ipFamilyError)):
		var fe *ipFamilyError
		errors.As(err, &fe)
		return CauseConnect, "connect: " + fe.Error()
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || isTimeout(err):
		return CauseConnectTimeout, "connect: " + rootMsg(err)
	}
	return CauseConnect, "connect: " + rootMsg(err)
}

// clientCertFunc answers a server's CertificateRequest with cert (none
// when nil), always, whatever CAs the server names: a configured
// certificate is sent and the server's verdict reported, rather than
// silently not sent as crypto/tls does when its issuer is not among the
// server's acceptable CAs. It notes the request in the run's trace.
func clientCertFunc(cert *tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if t := traceFrom(cri.Context()); t != nil {
			t.mu.Lock()
			t.certAsked, t.certSent = true, cert != nil
			t.mu.Unlock()
		}
		if cert == nil {
			return &tls.Certificate{}, nil // an empty Certificate message
		}
		return cert, nil
	}
}

// clientCert reports whether a server asked for a client certificate and
// whether one was sent.
func (t *runTrace) clientCert() (asked, sent bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.certAsked, t.certSent
}

// clientCertHint explains a TLS alert from a server that asked for a
// client certificate: once it asked, an alert (certificate_required in
// TLS 1.3, handshake_failure or bad_certificate in TLS 1.2; RFC 8446
// §4.4.2.4) is about the certificate vigil sent or did not send.
func (t *runTrace) clientCertHint(err error) string {
	asked, sent := t.clientCert()
	switch {
	case !asked || !strings.Contains(errString(err), "remote error: "):
		return ""
	case sent:
		return " (the server refused the client certificate)"
	}
	return " (the server asked for a client certificate and none is configured: cert_file, key_file)"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isTLSError(err error) bool {
	var rh tls.RecordHeaderError
	var ae tls.AlertError
	var ce *tls.CertificateVerificationError
	return errors.As(err, &rh) || errors.As(err, &ae) || errors.As(err, &ce) ||
		strings.Contains(errString(err), "tls: ")
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// certCause recognises certificate verification failures: unknown
// authority, hostname mismatch, expired or not yet valid.
func certCause(err error) (Cause, string, bool) {
	if err == nil {
		return "", "", false
	}
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		return CauseCert, "cert: signed by an unknown authority" + unknownAuthorityDetail(ua.Cert, certsFromErr(err)), true
	case errors.As(err, &he) && he.Certificate != nil:
		return CauseCert, hostnameMismatch(he.Host, he.Certificate), true
	case errors.As(err, &he):
		return CauseCert, "cert: " + strings.TrimPrefix(he.Error(), "x509: "), true
	case errors.As(err, &ci):
		return CauseCert, "cert: " + strings.TrimPrefix(ci.Error(), "x509: "), true
	}
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		return CauseCert, "cert: " + strings.TrimPrefix(rootMsg(cv.Err), "x509: "), true
	}
	return "", "", false
}

// certsFromErr returns the certificates the server presented from a
// verification error, so a run with a bad certificate still reports its
// expiry.
func certsFromErr(err error) []*x509.Certificate {
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		return cv.UnverifiedCertificates
	}
	return nil
}

// rootMsg is the innermost useful message: a net.OpError's message without
// the local address noise.
func rootMsg(err error) string {
	if err == nil {
		return ""
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		msg := op.Err.Error()
		if op.Addr != nil {
			return op.Op + " " + op.Addr.String() + ": " + msg
		}
		return op.Op + ": " + msg
	}
	return err.Error()
}

// refusedMsg names the address that refused the connection.
func refusedMsg(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		return "connection refused by " + op.Addr.String()
	}
	return "connection refused"
}

// resetMsg says who dropped the connection.
func resetMsg(err error) string {
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNRESET) && errors.As(err, &op) && op.Addr != nil:
		return "connection reset by " + op.Addr.String()
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the server"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server before the response was complete"
	}
	return "connection broken: " + rootMsg(err)
}

func isCtxErr(err error) bool {
	return err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err))
}

// unknownAuthorityDetail names the certificates no trusted root vouches
// for: the leaf (the first presented; else the one in the error), its
// issuer or "(self-signed)" for a certificate signed by its own key, and,
// when verification went up through intermediates the server sent, the
// certificate where the chain ends (top, x509's UnknownAuthorityError
// Cert): "; the chain ends at CN=Corp Int, issued by CN=Corp Root".
func unknownAuthorityDetail(top *x509.Certificate, presented []*x509.Certificate) string {
	leaf := top
	if len(presented) > 0 {
		leaf = presented[0]
	}
	if leaf == nil {
		return ""
	}
	out := ": leaf " + certName(leaf.Subject.CommonName, leaf.Subject.String())
	if selfSigned(leaf) {
		return out + " (self-signed)"
	}
	out += ", issuer " + certName(leaf.Issuer.CommonName, leaf.Issuer.String())
	if top != nil && !bytes.Equal(top.Raw, leaf.Raw) {
		out += "; the chain ends at " + certName(top.Subject.CommonName, top.Subject.String())
		if selfSigned(top) {
			out += ", a self-signed certificate not trusted"
		} else {
			out += ", issued by " + certName(top.Issuer.CommonName, top.Issuer.String())
		}
	}
	return out
}

// certName is "CN=<cn>", or the whole distinguished name without a CN.
func certName(cn, dn string) string {
	if cn != "" {
		return "CN=" + cn
	}
	if dn == "" {
		return "(empty subject)"
	}
	return dn
}

// selfSigned reports whether c names itself as issuer and its signature
// verifies with its own key.
func selfSigned(c *x509.Certificate) bool {
	// CheckSignature, not CheckSignatureFrom: a self-signed leaf need not
	// be marked as a CA.
	return bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
}
