package proxy

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// accessLog writes one JSON line per request the router sees (access_log):
// buffered, flushed every second and when the buffer fills, so a busy proxy
// makes one write(2) per 64 KiB of lines, not one per request.
type accessLog struct {
	path  string
	query bool // access_log_query: the query string is logged

	mu     sync.Mutex
	f      *os.File // nil for stdout/stderr
	w      *bufio.Writer
	err    error // the last write error, logged once per change
	done   chan struct{}
	closed bool
	log    *slog.Logger
	// next is the log that replaced this one at a reload (nil when the
	// reload turned it off): a request that began before the reload and
	// ends after this one closed writes its line there.
	next atomic.Pointer[accessLog]
}

// openAccessLog opens path ("stdout", "stderr" or a file, appended to and
// created with mode 0640).
func openAccessLog(path string, query bool, log *slog.Logger) (*accessLog, error) {
	var out io.Writer
	var f *os.File
	switch path {
	case "stdout":
		out = os.Stdout
	case "stderr":
		out = os.Stderr
	default:
		var err error
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, err
		}
		out = f
	}
	a := &accessLog{path: path, query: query, f: f, w: bufio.NewWriterSize(out, 64<<10), done: make(chan struct{}), log: log}
	go a.flusher()
	return a, nil
}

func (a *accessLog) flusher() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			a.mu.Lock()
			a.check(a.w.Flush())
			a.mu.Unlock()
		case <-a.done:
			return
		}
	}
}

// check logs a write error when it first appears (a full disk), and its end.
func (a *accessLog) check(err error) {
	if (err == nil) == (a.err == nil) {
		return
	}
	if err != nil {
		a.log.Error("proxy: access log write failed; lines are lost until it works again", "file", a.path, "err", err.Error())
		a.w.Reset(a.writer()) // drop what could not be written
	} else {
		a.log.Info("proxy: access log writes again", "file", a.path)
	}
	a.err = err
}

func (a *accessLog) writer() io.Writer {
	switch {
	case a.f != nil:
		return a.f
	case a.path == "stderr":
		return os.Stderr
	}
	return os.Stdout
}

// close flushes and closes the log.
func (a *accessLog) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.closed = true
	close(a.done)
	a.w.Flush()
	if a.f != nil {
		a.f.Close()
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
	b := make([]byte, 0, 384)
	b = append(b, `{"ts":"`...)
	b = start.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, `","remote":`...)
	b = appendJSONString(b, r.RemoteAddr)
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
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, bytes, 10)
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
	if ua := r.Header.Get("User-Agent"); ua != "" {
		b = append(b, `,"user_agent":`...)
		b = appendJSONString(b, ua)
	}
	b = append(b, "}\n"...)
	a.mu.Lock()
	if !a.closed {
		_, err := a.w.Write(b)
		a.check(err)
	}
	a.mu.Unlock()
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
