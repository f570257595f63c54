package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// TCP is a compiled TCP check: connect (and with tcp.tls handshake),
// optionally send, optionally read until tcp.expect is seen; or run
// tcp.query's expects, sends and starttls in order. Expect keys accepted:
// ttfb (first byte read; setting it makes the check wait for a first
// byte), duration, and with TLS cert_min_days. Safe for concurrent Run.
type TCP struct {
	spec   TCPSpec
	expect Expect
	opts   Options
	d      *dialer
}

var _ Check = (*TCP)(nil)

// NewTCP compiles a TCP check. Errors are prefixed "tcp." and "expect.".
func NewTCP(spec TCPSpec, expect Expect, o Options) (*TCP, error) {
	if err := compileProbe("tcp", &spec, spec.compiled, &expect); err != nil {
		return nil, err
	}
	if expect.CertMinDays > 0 && spec.tls == nil {
		return nil, errorf(ErrUnsupported, "expect.cert_min_days: a tcp check without tcp.tls sees no certificate (set tcp.tls: true, or use a tls check)")
	}
	o.setDefaults()
	return &TCP{spec: spec, expect: expect, opts: o, d: newDialer(spec.IPProtocol, spec.IPProtocolFallback)}, nil
}

// Run connects to t (tcp://host:port; http(s):// and tls:// URLs use their
// host and port, tls:// defaulting to 443) and evaluates tcp.expect, ttfb,
// duration and, with tcp.tls, the certificate.
func (c *TCP) Run(ctx context.Context, t Target) Result {
	start := time.Now()
	res := Result{Start: start}
	ctx, cancel := c.opts.runContext(ctx)
	defer cancel()
	addr, err := hostPort(t.URL, "")
	if err != nil {
		res.Cause, res.Err = CauseInternal, err.Error()
		return res
	}
	tr := &runTrace{start: start, timeout: c.opts.Timeout}
	ctx = tr.withTrace(ctx)
	raw, err := c.d.DialContext(ctx, "tcp", addr)
	if err != nil {
		end := time.Now()
		res.Phases = tr.phases(end)
		res.Cause, res.Err = classify(err, tr, end.Sub(start))
		return res
	}
	// conn is raw, or the TLS connection over it once the handshake is
	// done; closing it sends TLS's close_notify.
	conn := raw
	defer func() { conn.Close() }()
	stop := watchCtx(ctx, raw)
	defer stop()
	host, _, _ := net.SplitHostPort(addr)
	s := &tcpSession{ctx: ctx, tr: tr, start: start, name: host}
	if c.spec.tls != nil && c.spec.tls.ServerName != "" {
		s.name = c.spec.tls.ServerName
	}

	if c.spec.tls != nil && c.spec.startTLS < 0 {
		tc := c.startTLS(raw, s, &res)
		if tc == nil {
			return res
		}
		conn = tc
	}
	if len(c.spec.Query) > 0 {
		return c.runQuery(&conn, s, res)
	}
	v := s.v
	var got []byte
	var ioErr error
	matched := false
	if c.spec.Send != "" {
		if _, err := io.WriteString(conn, c.spec.Send); err != nil {
			ioErr = err
		}
	}
	wantRead := c.spec.Expect != "" || c.expect.TTFB > 0
	if ioErr == nil && wantRead {
		got, matched, ioErr = c.read(conn, tr)
	}
	end := time.Now()
	res.Phases = tr.phases(end)
	if tr.firstByte.IsZero() {
		res.Phases.Transfer = 0
	}

	if c.spec.Expect != "" {
		shown := tcpExcerpt(got)
		if len(got) == 0 {
			shown = "(nothing)"
		}
		msg := fmt.Sprintf("tcp expect: %s not received (got nothing)", c.spec.Expect)
		if len(got) > 0 {
			msg = fmt.Sprintf("tcp expect: %s not received (got %d bytes: %s)", c.spec.Expect, len(got), tcpExcerpt(got))
		}
		v.add(CauseBody, "tcp expect", matched, shown, c.spec.Expect, msg)
	}
	obs := observation{ttfb: res.Phases.TTFB, total: res.Phases.Total, now: start, cert: s.cert}
	c.expect.evalCommon(&obs, &v)
	res.Assertions = v.list

	if ioErr != nil && !matched {
		// The server did not send what we waited for. With nothing received
		// the I/O error is the cause (timeout, reset); after a partial
		// answer a close or a deadline is the expect assertion failing.
		cause, msg := classify(ioErr, tr, end.Sub(start))
		switch {
		case len(got) == 0 && errors.Is(ioErr, io.EOF):
			res.Cause, res.Err = CauseReset, "connection closed by the server before sending anything"
			return res
		case len(got) == 0 || (cause != CauseTimeout && !errors.Is(ioErr, io.EOF)):
			res.Cause, res.Err = cause, msg
			return res
		}
	}
	if v.cause != "" {
		res.Cause, res.Err = v.cause, v.err
		return res
	}
	res.OK = true
	return res
}

// tcpSession is the state of one run of a TCP check that its steps share.
type tcpSession struct {
	ctx   context.Context
	tr    *runTrace
	start time.Time
	// name is the TLS name: tcp.tls.server_name, else the target's host.
	name string
	// v holds the assertions so far (the certificate's, after TLS).
	v verdict
	// cert is what the TLS handshake saw; nil over plain TCP.
	cert *certTLS
}

// startTLS runs tcp.tls's handshake over conn and verifies the server as a
// tls check does: "cert chain" and "cert hostname" assertions in s.v, the
// expiries in res. It returns the TLS connection, or nil with res's
// cause, error, phases and assertions set when the handshake failed
// (cause tls) or, with verification on, the certificate is not valid
// (cause cert): nothing is sent to a server that was not verified.
func (c *TCP) startTLS(conn net.Conn, s *tcpSession, res *Result) net.Conn {
	o := c.spec.tls
	tc, err := clientHandshake(s.ctx, conn, s.tr, s.name, o.minVersion, o.clientCert)
	if err != nil {
		end := time.Now()
		res.Phases = s.tr.phases(end)
		res.Phases.Transfer = 0
		res.Cause, res.Err = classify(err, s.tr, end.Sub(s.start))
		res.Assertions = s.v.list
		return nil
	}
	state := tc.ConnectionState()
	if len(state.PeerCertificates) == 0 {
		tc.Close()
		res.Phases = s.tr.phases(time.Now())
		res.Phases.Transfer = 0
		res.Cause, res.Err = CauseTLS, "tls: the server sent no certificate"
		res.Assertions = s.v.list
		return nil
	}
	s.cert = verifyPeer(state, s.name, o.roots, o.InsecureSkipVerify, s.start, &s.v)
	s.cert.expiries(res)
	if s.v.cause != "" {
		tc.Close()
		res.Phases = s.tr.phases(time.Now())
		res.Phases.Transfer = 0
		res.Cause, res.Err = s.v.cause, s.v.err
		res.Assertions = s.v.list
		return nil
	}
	return tc
}

// read reads until tcp.expect matches (or, without expect, the first byte),
// read_limit bytes arrive, the server closes, or ctx ends.
func (c *TCP) read(conn net.Conn, tr *runTrace) ([]byte, bool, error) {
	limit := int(c.spec.ReadLimit)
	buf := make([]byte, 0, min(limit, 4096))
	p := make([]byte, min(limit, 4096))
	for len(buf) < limit {
		n, err := conn.Read(p[:min(len(p), limit-len(buf))])
		if n > 0 {
			if len(buf) == 0 {
				tr.mark(&tr.firstByte, false)
			}
			buf = append(buf, p[:n]...)
			if c.spec.Expect == "" {
				return buf, true, nil
			}
			if c.match(buf) {
				return buf, true, nil
			}
		}
		if err != nil {
			return buf, false, err
		}
	}
	return buf, false, nil
}

// match reports whether what arrived so far, b, satisfies tcp.expect. A
// regex is tried on b whole (so it may span lines) and on each line
// without its line break, the last one even before it is ended, as
// tcp.query matches: "^" and "$" work at line starts and ends.
func (c *TCP) match(b []byte) bool {
	if c.spec.re == nil {
		return bytes.Contains(b, []byte(c.spec.Expect))
	}
	if c.spec.re.Match(b) {
		return true
	}
	for len(b) > 0 {
		line := b
		nl := bytes.IndexByte(b, '\n')
		if nl >= 0 {
			line, b = b[:nl], b[nl+1:]
		} else {
			b = nil
		}
		if c.spec.re.Match(bytes.TrimSuffix(line, []byte("\r"))) {
			return true
		}
	}
	return false
}

// watchCtx makes blocked reads and writes on conn return when ctx ends.
func watchCtx(ctx context.Context, conn net.Conn) (stop func() bool) {
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	return context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
}

// hostPort extracts host:port from a target URL: tcp://h:p, tls://h:p
// (default port 443), https://h[:p] (443), http://h[:p] (80), or a bare
// h:p. defPort is used for a URL without a port when its scheme has no
// default.
func hostPort(raw, defPort string) (string, error) {
	if !strings.Contains(raw, "://") {
		if _, _, err := net.SplitHostPort(raw); err == nil {
			return raw, nil
		}
		return "", errorf(ErrBadURL, "target %q: want tcp://host:port", raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", errorf(ErrBadURL, "target %q: want scheme://host:port", units.RedactURL(raw))
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https", "tls":
			port = "443"
		case "http":
			port = "80"
		default:
			port = defPort
		}
	}
	if port == "" {
		return "", errorf(ErrBadURL, "target %q: a port is required", units.RedactURL(raw))
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// compileProbe validates a tcp or tls probe spec (unless already compiled)
// and its expect block, and rejects expect keys a check of kind cannot use.
// Errors are prefixed with kind and "expect".
func compileProbe(kind string, spec interface{ ValidateAndSetDefaults() error }, specCompiled bool, expect *Expect) error {
	var errs []error
	if !specCompiled {
		if err := spec.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix(kind, err))
		}
	}
	if !expect.compiled {
		if err := expect.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix("expect", err))
		}
	}
	errs = append(errs, units.Prefix("expect", expect.ValidateFor(kind)))
	return errors.Join(errs...)
}

// newDialer is the dialer of every check: 30s cap on connect (the run's
// context usually ends sooner), no keep-alive probes, and the addresses
// of ip_protocol's family (with its fallback).
func newDialer(family string, fallback bool) *dialer {
	return &dialer{Dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: -1}, family: family, fallback: fallback}
}

// runContext bounds a run by Options.Timeout when it is set.
func (o Options) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if o.Timeout > 0 {
		return context.WithTimeout(ctx, o.Timeout)
	}
	return ctx, func() {}
}

// tcpExcerptLen is how many bytes of what a server sent a failed tcp
// expect shows.
const tcpExcerptLen = 100

// tcpExcerpt is the start of what a server sent, Go-quoted (control
// characters and invalid UTF-8 escaped), cut at tcpExcerptLen bytes on a
// rune boundary with "…".
func tcpExcerpt(b []byte) string {
	if len(b) <= tcpExcerptLen {
		return strconv.Quote(string(b))
	}
	n := tcpExcerptLen
	for n > tcpExcerptLen-utf8.UTFMax && !utf8.RuneStart(b[n]) {
		n--
	}
	return strconv.Quote(string(b[:n])) + "…"
}

// runQuery runs tcp.query on a connected *conn: each step waits for a
// line holding its expect (skipping lines that do not), then with
// starttls upgrades *conn to TLS (see startTLS), then writes its send.
// The first expect that is not met fails the run with cause body and
// shows what arrived while waiting for it; an I/O error with nothing
// received for the step is the cause instead, as for tcp.expect.
func (c *TCP) runQuery(connp *net.Conn, s *tcpSession, res Result) Result {
	conn, tr, start := *connp, s.tr, s.start
	limit := int(c.spec.ReadLimit)
	p := make([]byte, min(limit, 4096))
	var buf []byte  // received, not yet consumed by a match
	var seen []byte // received while waiting for the current expect (first 4 KiB)
	total := 0
	var ioErr, sendErr error
	v := &s.v
	failed := -1
	lines := 0
	for i := range c.spec.Query {
		q := &c.spec.Query[i]
		if q.Expect != "" {
			seen, lines = seen[:0], 0
			seen = append(seen, buf[:min(len(buf), 4096)]...)
			matched := false
			for {
				for !matched {
					nl := bytes.IndexByte(buf, '\n')
					if nl < 0 {
						break
					}
					lines++
					matched = q.match(bytes.TrimSuffix(buf[:nl], []byte("\r")))
					buf = buf[nl+1:]
				}
				if !matched && len(buf) > 0 && q.match(buf) {
					matched, buf = true, buf[:0]
				}
				if matched || ioErr != nil || total >= limit {
					break
				}
				n, err := conn.Read(p[:min(len(p), limit-total)])
				if n > 0 {
					if total == 0 {
						tr.mark(&tr.firstByte, false)
					}
					total += n
					buf = append(buf, p[:n]...)
					if room := 4096 - len(seen); room > 0 {
						seen = append(seen, p[:min(n, room)]...)
					}
				}
				ioErr = err
			}
			name := fmt.Sprintf("tcp query[%d].expect", i)
			shown := tcpExcerpt(seen)
			if len(seen) == 0 {
				shown = "(nothing)"
			}
			if matched {
				v.add(CauseBody, name, true, "match", q.Expect, "")
			} else {
				msg := fmt.Sprintf("tcp query[%d].expect: %s not received (got nothing)", i, q.Expect)
				if len(seen) > 0 {
					msg = fmt.Sprintf("tcp query[%d].expect: %s not received in %d line(s) (got %s)", i, q.Expect, max(lines, 1), shown)
					if total >= limit {
						msg += fmt.Sprintf("; stopped at read_limit %s", c.spec.ReadLimit)
					}
				}
				v.add(CauseBody, name, false, shown, q.Expect, msg)
				failed = i
				break
			}
		}
		if q.StartTLS {
			if len(buf) > 0 {
				// Bytes the server sent after the line the step waited
				// for would be read as TLS records, or, injected before
				// the handshake, as if they came over TLS (CVE-2011-0411).
				end := time.Now()
				res.Phases = tr.phases(end)
				res.Assertions = v.list
				res.Cause, res.Err = CauseTLS, fmt.Sprintf("tls: tcp query[%d].starttls: the server sent %d more bytes before the TLS handshake (%s)", i, len(buf), tcpExcerpt(buf))
				return res
			}
			tc := c.startTLS(conn, s, &res)
			if tc == nil {
				return res
			}
			conn, *connp = tc, tc
		}
		if q.Send != "" {
			if _, err := io.WriteString(conn, q.Send); err != nil {
				sendErr, failed = err, i
				break
			}
		}
	}
	end := time.Now()
	res.Phases = tr.phases(end)
	if tr.firstByte.IsZero() {
		res.Phases.Transfer = 0
	}
	obs := observation{ttfb: res.Phases.TTFB, total: res.Phases.Total, now: start, cert: s.cert}
	c.expect.evalCommon(&obs, v)
	res.Assertions = v.list
	if sendErr != nil {
		cause, msg := classify(sendErr, tr, end.Sub(start))
		res.Cause, res.Err = cause, fmt.Sprintf("tcp query[%d].send: %s", failed, msg)
		return res
	}
	if failed >= 0 && ioErr != nil && len(seen) == 0 {
		cause, msg := classify(ioErr, tr, end.Sub(start))
		switch {
		case total == 0 && errors.Is(ioErr, io.EOF):
			res.Cause, res.Err = CauseReset, "connection closed by the server before sending anything"
			return res
		case errors.Is(ioErr, io.EOF):
			res.Cause, res.Err = CauseReset, fmt.Sprintf("connection closed by the server at tcp query[%d]", failed)
			return res
		}
		res.Cause, res.Err = cause, fmt.Sprintf("tcp query[%d]: %s", failed, msg)
		return res
	}
	if v.cause != "" {
		res.Cause, res.Err = v.cause, v.err
		return res
	}
	res.OK = true
	return res
}
