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

// TCP is a compiled TCP check: connect, optionally send, optionally read
// until tcp.expect is seen; or run tcp.query's expects and sends in order. Expect keys accepted: ttfb (first byte read;
// setting it makes the check wait for a first byte), duration. Safe for
// concurrent Run.
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
	o.setDefaults()
	return &TCP{spec: spec, expect: expect, opts: o, d: newDialer()}, nil
}

// Run connects to t (tcp://host:port; http(s):// and tls:// URLs use their
// host and port) and evaluates tcp.expect, ttfb and duration.
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
	conn, err := c.d.DialContext(tr.withTrace(ctx), "tcp", addr)
	if err != nil {
		end := time.Now()
		res.Phases = tr.phases(end)
		res.Cause, res.Err = classify(err, tr, end.Sub(start))
		return res
	}
	defer conn.Close()
	stop := watchCtx(ctx, conn)
	defer stop()

	if len(c.spec.Query) > 0 {
		return c.runQuery(conn, tr, res, start)
	}
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

	var v verdict
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
	obs := observation{ttfb: res.Phases.TTFB, total: res.Phases.Total, now: start}
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

// newDialer is the dialer of tcp and tls checks: 30s cap on connect (the
// run's context usually ends sooner), no keep-alive probes.
func newDialer() *dialer {
	return &dialer{Dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: -1}}
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

// runQuery runs tcp.query on a connected conn: each step waits for a line
// holding its expect (skipping lines that do not), then writes its send.
// The first expect that is not met fails the run with cause body and
// shows what arrived while waiting for it; an I/O error with nothing
// received for the step is the cause instead, as for tcp.expect.
func (c *TCP) runQuery(conn net.Conn, tr *runTrace, res Result, start time.Time) Result {
	limit := int(c.spec.ReadLimit)
	p := make([]byte, min(limit, 4096))
	var buf []byte  // received, not yet consumed by a match
	var seen []byte // received while waiting for the current expect (first 4 KiB)
	total := 0
	var ioErr, sendErr error
	var v verdict
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
	obs := observation{ttfb: res.Phases.TTFB, total: res.Phases.Total, now: start}
	c.expect.evalCommon(&obs, &v)
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
