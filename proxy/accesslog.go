package proxy

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// accessLog writes one JSON line per request the router sees (access_log).
// Requests never wait for it: write hands each line to one writer goroutine
// through a bounded queue and drops the line (counted, logged at most once a
// minute) when the queue is full, as when stdout is a pipe nobody reads.
// The writer buffers lines and flushes them every second and when 64 KiB
// are buffered, so a busy proxy makes one write(2) per 64 KiB of lines.
type accessLog struct {
	path  string
	query bool // access_log_query: the query string is logged

	out io.Writer // where flushes go: f, stdout or stderr
	f   *os.File  // nil for stdout/stderr; a failed write is cut back off it
	log *slog.Logger

	// every is the flush interval (1s); dropEvery the least time between
	// two "lines dropped" warnings (1 min).
	every, dropEvery time.Duration

	mu      sync.RWMutex // held for writing only to close lines
	closed  bool
	lines   chan []byte   // the queue to the writer, closed by close
	done    chan struct{} // closed when the writer has finished
	dropped atomic.Int64  // lines dropped on a full queue, not yet logged

	// next is the log that replaced this one at a reload (nil when the
	// reload turned it off): a request that began before the reload and
	// ends after this one closed writes its line there.
	next atomic.Pointer[accessLog]
}

const (
	accessLogBuffer = 64 << 10 // bytes buffered before a flush
	accessLogQueue  = 4096     // lines queued for the writer before drops
	// accessLogCloseWait bounds close: a stalled reader (a full pipe)
	// keeps what is still queued, and close returns after it.
	accessLogCloseWait = time.Second
)

// openAccessLog opens path ("stdout", "stderr" or a file, appended to and
// created with mode 0640).
func openAccessLog(path string, query bool, log *slog.Logger) (*accessLog, error) {
	switch path {
	case "stdout":
		return newAccessLog(path, os.Stdout, nil, query, time.Second, log), nil
	case "stderr":
		return newAccessLog(path, os.Stderr, nil, query, time.Second, log), nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	return newAccessLog(path, f, f, query, time.Second, log), nil
}

// newAccessLog starts the writer of a log flushing to out every interval;
// f, if not nil, is the file behind out (cut back after a failed write,
// closed by close).
func newAccessLog(path string, out io.Writer, f *os.File, query bool, every time.Duration, log *slog.Logger) *accessLog {
	a := &accessLog{path: path, query: query, out: out, f: f, log: log,
		every: every, dropEvery: time.Minute,
		lines: make(chan []byte, accessLogQueue), done: make(chan struct{})}
	go a.writer()
	go a.reportDrops()
	return a
}

// send queues line unless a is closed (false: the caller hands it on to
// a's successor). A full queue drops the line: a request never waits.
func (a *accessLog) send(line []byte) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return false
	}
	select {
	case a.lines <- line:
	default:
		a.dropped.Add(1)
	}
	return true
}

// writer owns the buffer: it takes queued lines, flushes when 64 KiB are
// buffered and every second, and at close flushes the rest and closes the
// file.
func (a *accessLog) writer() {
	defer close(a.done)
	defer func() {
		if v := recover(); v != nil {
			a.log.Error("proxy: access log writer panicked; lines are lost", "file", a.path, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	t := time.NewTicker(a.every)
	defer t.Stop()
	var fl flusher
	buf := make([]byte, 0, accessLogBuffer+1024)
	for {
		select {
		case line, ok := <-a.lines:
			if !ok {
				fl.flush(a, buf)
				if a.f != nil {
					a.f.Close()
				}
				return
			}
			buf = append(buf, line...)
			if len(buf) >= accessLogBuffer {
				fl.flush(a, buf)
				buf = buf[:0]
			}
		case <-t.C:
			fl.flush(a, buf)
			buf = buf[:0]
		}
	}
}

// flusher is the writer's error state: a failed write is logged once, and
// its end only when a flush reached the file again.
type flusher struct {
	failing bool
	// cut: a failed write left part of a line that could not be taken
	// back (stdout, or Truncate failed): the next write starts with a
	// newline, so that no good line is glued to it.
	cut bool
}

// flush writes buf; on failure its lines are dropped. A regular file is cut
// back to its size before the write, so it never holds part of a line.
func (fl *flusher) flush(a *accessLog, buf []byte) {
	if len(buf) == 0 {
		return
	}
	var size int64 = -1
	if a.f != nil {
		if fi, err := a.f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	if fl.cut {
		if _, err := a.out.Write([]byte{'\n'}); err != nil {
			fl.failed(a, err)
			return
		}
		fl.cut = false
	}
	n, err := a.out.Write(buf)
	if err == nil && n < len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if n > 0 {
			if size < 0 || a.f.Truncate(size) != nil {
				fl.cut = true
			}
		}
		fl.failed(a, err)
		return
	}
	if fl.failing {
		fl.failing = false
		a.log.Info("proxy: access log writes again", "file", a.path)
	}
}

func (fl *flusher) failed(a *accessLog, err error) {
	if !fl.failing {
		fl.failing = true
		a.log.Error("proxy: access log write failed; lines are lost until it works again", "file", a.path, "err", err.Error())
	}
}

// reportDrops logs lines dropped on a full queue, at most once a minute,
// from its own goroutine so that the warning comes also while the writer
// is stuck in a write.
func (a *accessLog) reportDrops() {
	t := time.NewTicker(a.every)
	defer t.Stop()
	var last time.Time
	report := func() {
		if n := a.dropped.Swap(0); n > 0 {
			last = time.Now()
			a.log.Warn("proxy: access log is behind; lines dropped", "file", a.path, "dropped", n)
		}
	}
	for {
		select {
		case <-t.C:
			if time.Since(last) >= a.dropEvery {
				report()
			}
		case <-a.done:
			report()
			return
		}
	}
}

// close stops taking lines (later ones go to a's successor), then waits at
// most a second for the writer to write what is queued and close the file.
func (a *accessLog) close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	close(a.lines)
	a.mu.Unlock()
	if a.f != nil {
		// A FIFO named as the file stalls like a pipe; its writes
		// (not a regular file's) take a deadline.
		a.f.SetWriteDeadline(time.Now().Add(accessLogCloseWait))
	}
	select {
	case <-a.done:
	case <-time.After(accessLogCloseWait):
		a.log.Warn("proxy: access log closed with lines still queued; its reader is stalled", "file", a.path)
	}
}

// accessEntry is what the pool adds to a request's line: which origin
// answered, after how many tries, and when its head arrived.
type accessEntry struct {
	pool     string
	origin   string
	tries    int
	upstream time.Duration // request start to the answering origin's head
	// grpcStatus is a gRPC call's grpc-status (trailer or trailers-only
	// head), "" for other requests.
	grpcStatus string
	// A WebSocket tunnel's bytes, origin to client and client to origin,
	// after the 101 head.
	tunnel               bool
	tunnelDown, tunnelUp int64
	requestID            string // the request's ID (Config.RequestID), "" when off
	clientIP             string // the client a trusted proxy named (trusted_proxies), "" for none

	// The tries made, in order (the access log's upstreams): the first
	// ones in ups, so that a request's entry needs no allocation of its
	// own for them, the rest (retry.tries > 3) in more.
	ups  [3]upstreamTry
	nups int
	more []upstreamTry
	// aborted says why an answer that had begun was cut off ("" when it
	// ended whole): abortSendTimeout, abortWriteTimeout, abortClientClosed, abortClientBody,
	// abortOrigin.
	aborted string
}

// upstreamTry is one try of a request: the origin it went to, and its
// outcome: the status of the answer it got (0: none) and the cause it
// failed with ("" when it did not; with a status, the answer's body broke
// after its head).
type upstreamTry struct {
	origin string
	status int
	cause  string
	detail string // what went wrong within cause, where it says more (headDetail)
}

// The values of the access log's aborted.
const (
	abortSendTimeout  = "send_timeout"  // a write to the client made no progress for send_timeout
	abortWriteTimeout = "write_timeout" // write_timeout (the whole answer's limit) ran out while the client took bytes
	abortClientClosed = "client_closed" // the client went away
	abortClientBody   = "client_body"   // the client's request body broke while the answer streamed
	abortOrigin       = "origin"        // the origin's body broke (the last upstream's cause says how)
)

// tryDetail sets the detail of the try recorded last; e may be nil.
func (e *accessEntry) tryDetail(d string) {
	if e == nil || e.nups == 0 {
		return
	}
	if i := e.nups - 1; i < len(e.ups) {
		e.ups[i].detail = d
	} else {
		e.more[i-len(e.ups)].detail = d
	}
}

// addTry records a try; e may be nil (no access log).
func (e *accessEntry) addTry(origin string, status int, cause string) {
	if e == nil {
		return
	}
	t := upstreamTry{origin: origin, status: status, cause: cause}
	if e.nups < len(e.ups) {
		e.ups[e.nups] = t
	} else {
		e.more = append(e.more, t)
	}
	e.nups++
}

// lastTry is the last try recorded, nil when none (or e is nil).
func (e *accessEntry) lastTry() *upstreamTry {
	switch {
	case e == nil || e.nups == 0:
		return nil
	case e.nups <= len(e.ups):
		return &e.ups[e.nups-1]
	}
	return &e.more[len(e.more)-1]
}

// abort records why the answer was cut off (the first reason given
// stands); e may be nil.
func (e *accessEntry) abort(why string) {
	if e != nil && e.aborted == "" {
		e.aborted = why
	}
}

// countWriter counts an answer's status and body bytes for the access log
// on net/http's ResponseWriter (the fast engine's respWriter counts them
// itself). It keeps the interfaces the proxy uses: Flusher, Hijacker, and
// Unwrap for http.ResponseController.
type countWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (c *countWriter) WriteHeader(code int) {
	if c.status == 0 || c.status < 200 && code >= 200 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := c.ResponseWriter.Write(p)
	c.bytes += int64(n)
	return n, err
}

func (c *countWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *countWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if c.status == 0 {
		c.status = http.StatusSwitchingProtocols
	}
	return http.NewResponseController(c.ResponseWriter).Hijack()
}

func (c *countWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// write appends one line: time, client, request, answer, pool, origin,
// tries, times. Header values a user may not want on disk (Authorization,
// Cookie) are never logged; the query string only with access_log_query.
func (a *accessLog) write(start time.Time, r *http.Request, status int, bytes int64, e *accessEntry) {
	end := time.Now()
	b := make([]byte, 0, 448)
	b = append(b, `{"ts":"`...)
	b = start.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, `","remote":`...)
	b = appendJSONString(b, r.RemoteAddr)
	if e.clientIP != "" {
		b = append(b, `,"client_ip":`...)
		b = appendJSONString(b, e.clientIP)
	}
	b = append(b, `,"method":`...)
	b = appendJSONString(b, r.Method)
	b = append(b, `,"host":`...)
	b = appendJSONString(b, r.Host)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, r.URL.EscapedPath())
	if a.query && r.URL.RawQuery != "" {
		b = append(b, `,"query":`...)
		b = appendJSONString(b, r.URL.RawQuery)
	}
	b = append(b, `,"proto":`...)
	b = appendJSONString(b, r.Proto)
	b = append(b, `,"tls":`...)
	b = strconv.AppendBool(b, r.TLS != nil)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	if e.grpcStatus != "" {
		b = append(b, `,"grpc_status":`...)
		b = appendJSONString(b, e.grpcStatus)
	}
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, bytes+e.tunnelDown, 10)
	if e.tunnel {
		b = append(b, `,"bytes_up":`...)
		b = strconv.AppendInt(b, e.tunnelUp, 10)
	}
	b = append(b, `,"duration":`...)
	b = strconv.AppendFloat(b, end.Sub(start).Seconds(), 'f', 6, 64)
	if e.pool != "" {
		b = append(b, `,"pool":`...)
		b = appendJSONString(b, e.pool)
	}
	if e.origin != "" {
		b = append(b, `,"origin":`...)
		b = appendJSONString(b, e.origin)
		b = append(b, `,"upstream_time":`...)
		b = strconv.AppendFloat(b, e.upstream.Seconds(), 'f', 6, 64)
	}
	if e.tries > 0 {
		b = append(b, `,"tries":`...)
		b = strconv.AppendInt(b, int64(e.tries), 10)
	}
	if e.nups > 0 {
		b = append(b, `,"upstreams":[`...)
		for i := 0; i < e.nups; i++ {
			var t *upstreamTry
			if i < len(e.ups) {
				t = &e.ups[i]
			} else {
				t = &e.more[i-len(e.ups)]
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"origin":`...)
			b = appendJSONString(b, t.origin)
			if t.status != 0 {
				b = append(b, `,"status":`...)
				b = strconv.AppendInt(b, int64(t.status), 10)
			}
			if t.cause != "" {
				b = append(b, `,"cause":`...)
				b = appendJSONString(b, t.cause)
			}
			if t.detail != "" {
				b = append(b, `,"detail":`...)
				b = appendJSONString(b, t.detail)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if e.aborted != "" {
		b = append(b, `,"aborted":`...)
		b = appendJSONString(b, e.aborted)
	}
	if ua := r.Header.Get("User-Agent"); ua != "" {
		b = append(b, `,"user_agent":`...)
		b = appendJSONString(b, ua)
	}
	if e.requestID != "" {
		b = append(b, `,"request_id":`...)
		b = appendJSONString(b, e.requestID)
	}
	b = append(b, "}\n"...)
	a.hand(b)
}

// hand queues line b on a, or on the log a reload replaced it with: a log
// closed by a reload hands the line to its successor, which may itself be
// closed by a later one; nil: the log was turned off.
func (a *accessLog) hand(b []byte) {
	for l := a; l != nil && !l.send(b); {
		l = l.next.Load()
	}
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, so that a
// client's bytes can never break the line or forge another.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}

// writeRefused appends the line of a request an engine refused while
// parsing it: time, client, TLS, status and the reason, which stands in for
// the request nobody could parse.
func (a *accessLog) writeRefused(r refusal) {
	b := make([]byte, 0, 192)
	b = append(b, `{"ts":"`...)
	b = time.Now().UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, `","remote":`...)
	b = appendJSONString(b, r.remote)
	b = append(b, `,"tls":`...)
	b = strconv.AppendBool(b, r.tls)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.code), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, int64(r.bytes), 10)
	b = append(b, `,"duration":0,"refused":`...)
	b = appendJSONString(b, r.reason)
	b = append(b, "}\n"...)
	a.hand(b)
}

// headCut is a client connection the fast engine cut off in the middle of
// a request head: reason is cutHeaderTimeout (read_header_timeout ran out:
// a slow client, slowloris) or cutClosedInHead (the client closed or reset
// it), start when the head began, got the bytes of it received.
type headCut struct {
	reason, remote string
	tls            bool
	start          time.Time
	got            int
}

// engineCutHead writes the access log line of a connection cut off in the
// middle of a request head, when the access log is on.
func (p *Proxy) engineCutHead(c headCut) {
	if al := p.alog.Load(); al != nil {
		al.writeCut(c)
	}
}

// writeCut appends the line of a connection cut off in the middle of a
// request head: no answer was sent, and the status is the one nginx and
// HAProxy log for it, 408 for read_header_timeout (HAProxy's cR), 400 for
// a client that left (CR). Like a refused request's line it has no method,
// host or path (the head is not whole); cut is the reason of
// vigil_proxy_client_connections_cut_total and head_bytes how much of the
// head came.
func (a *accessLog) writeCut(c headCut) {
	status := http.StatusRequestTimeout
	if c.reason != cutHeaderTimeout {
		status = http.StatusBadRequest
	}
	b := make([]byte, 0, 192)
	b = append(b, `{"ts":"`...)
	b = c.start.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, `","remote":`...)
	b = appendJSONString(b, c.remote)
	b = append(b, `,"tls":`...)
	b = strconv.AppendBool(b, c.tls)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"bytes":0,"duration":`...)
	b = strconv.AppendFloat(b, time.Since(c.start).Seconds(), 'f', 6, 64)
	b = append(b, `,"cut":`...)
	b = appendJSONString(b, c.reason)
	b = append(b, `,"head_bytes":`...)
	b = strconv.AppendInt(b, int64(c.got), 10)
	b = append(b, "}\n"...)
	a.hand(b)
}
