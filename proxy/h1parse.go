package proxy

import (
	"bufio"
	"errors"
	"net/http"
	"net/textproto"
	"strings"
)

// The fast engine's HTTP/1.1 request head parser (RFC 9112). It is strict
// where leniency enables request smuggling: a request with both
// Content-Length and Transfer-Encoding, several Content-Length or
// Transfer-Encoding fields, a Content-Length that is not a plain decimal, a
// line folded with obs-fold, a field name followed by white space, or a
// control character (NUL, bare CR…) in a field value is refused with 400.

// parseError is a request the engine answers with code and closes.
type parseError struct {
	code int
	msg  string
}

func (e *parseError) Error() string { return e.msg }

func perr(code int, msg string) error { return &parseError{code: code, msg: msg} }

// errHeaderTooLarge is answered with 431; errURITooLong (a request line
// alone over the limit) with 414, as nginx does.
var (
	errHeaderTooLarge = perr(http.StatusRequestHeaderFieldsTooLarge, "request header block too large")
	errURITooLong     = perr(http.StatusRequestURITooLong, "request line too long")
)

// reqHead is a parsed request head. Strings point into one string holding
// the whole head (one allocation per request).
type reqHead struct {
	method, target string
	minor          int // HTTP/1.<minor>
	host           string
	hasHost        bool
	contentLength  int64 // -1: none
	chunked        bool
	connClose      bool // Connection: close (or HTTP/1.0 without keep-alive)
	keepAlive      bool // Connection: keep-alive
	expect         bool // Expect: 100-continue
	upgrade        bool // an Upgrade field is present
	header         http.Header
	order          []string // header's names in the order they came, each once
	raw            []byte   // the head as read (for the net/http hand-over)
	// got is, after readHead failed reading (the client stalled or left),
	// how many bytes of the head had come, empty lines before the request
	// line left out: the access log's head_bytes of a cut connection.
	got int
}

// odd reports whether the request is for net/http's parser and handler
// rather than the fast path: upgrades, CONNECT, absolute-form and asterisk
// targets.
func (h *reqHead) odd() bool {
	return h.upgrade || h.method == http.MethodConnect || len(h.target) == 0 || h.target[0] != '/'
}

// readHead reads one request head from br into h (whose header map and raw
// buffer are reused), at most max bytes including the request line. It
// returns io.EOF (or a read error) when the connection ended before a
// request began, a *parseError for a malformed request.
func readHead(br *bufio.Reader, max int, h *reqHead) error {
	raw := h.raw[:0]
	lines := 0
	for {
		start := len(raw) // where this line begins in raw
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull {
				raw = append(raw, line...)
				if len(raw) > max {
					h.raw = raw[:0]
					if lines == 0 {
						return errURITooLong
					}
					return errHeaderTooLarge
				}
				line, err = br.ReadSlice('\n')
			}
		}
		if err != nil {
			// The connection ended or timed out (slow client): no answer.
			h.got = len(raw) + len(line)
			if lines == 0 && len(raw) == 0 && len(line) == 1 && line[0] == '\r' {
				h.got = 0 // the start of an empty line
			}
			h.raw = raw[:0]
			return err
		}
		// Empty lines before the request line are ignored (RFC 9112 §2.2).
		if lines == 0 && len(raw) == 0 && (len(line) == 1 || len(line) == 2 && line[0] == '\r') {
			continue
		}
		raw = append(raw, line...)
		if len(raw) > max {
			h.raw = raw[:0]
			if lines == 0 {
				return errURITooLong
			}
			return errHeaderTooLarge
		}
		lines++
		// The whole line, not its last piece: a line longer than br's
		// buffer arrives in pieces, and its last one may be "\r\n" or "\n"
		// alone (a 4095- or 4096-byte field line), which is not the empty
		// line that ends the head.
		if l := raw[start:]; len(l) == 1 || len(l) == 2 && l[0] == '\r' {
			if lines == 1 {
				h.raw = raw[:0]
				return perr(http.StatusBadRequest, "empty request line")
			}
			break
		}
	}
	h.raw = raw
	return parseHead(string(raw), h)
}

// parseHead parses a complete head (ending in an empty line).
func parseHead(s string, h *reqHead) error {
	clear(h.header)
	h.order = h.order[:0]
	h.method, h.target, h.minor, h.host, h.hasHost = "", "", 0, "", false
	h.contentLength, h.chunked, h.connClose, h.keepAlive, h.expect, h.upgrade = -1, false, false, false, false, false

	line, rest := cutLine(s)
	sp1 := strings.IndexByte(line, ' ')
	if sp1 <= 0 {
		return perr(http.StatusBadRequest, "malformed request line")
	}
	h.method = line[:sp1]
	line = line[sp1+1:]
	sp2 := strings.IndexByte(line, ' ')
	if sp2 <= 0 {
		return perr(http.StatusBadRequest, "malformed request line")
	}
	h.target, line = line[:sp2], line[sp2+1:]
	if !isToken(h.method) {
		return perr(http.StatusBadRequest, "malformed method")
	}
	for i := 0; i < len(h.target); i++ {
		if c := h.target[i]; c <= ' ' || c == 0x7f {
			return perr(http.StatusBadRequest, "malformed request target")
		}
	}
	switch line {
	case "HTTP/1.1":
		h.minor = 1
	case "HTTP/1.0":
		h.minor = 0
	default:
		if len(line) == 8 && strings.HasPrefix(line, "HTTP/") && line[6] == '.' &&
			line[5] >= '0' && line[5] <= '9' && line[7] >= '0' && line[7] <= '9' {
			return perr(http.StatusHTTPVersionNotSupported, "HTTP version not supported")
		}
		return perr(http.StatusBadRequest, "malformed HTTP version")
	}

	// Count the fields first so their values share one backing array.
	n := strings.Count(rest, "\n")
	vals := make([]string, n)
	var te, cl int
	unsupportedTE := false // 501, unless the head is malformed (400) too
	for nv := 0; ; {
		line, rest = cutLine(rest)
		if line == "" {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return perr(http.StatusBadRequest, "obsolete line folding")
		}
		colon := strings.IndexByte(line, ':')
		if colon <= 0 {
			return perr(http.StatusBadRequest, "malformed header field")
		}
		name := line[:colon]
		if !isToken(name) {
			return perr(http.StatusBadRequest, "malformed header field name")
		}
		v := trimOWS(line[colon+1:])
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
				return perr(http.StatusBadRequest, "control character in header field value")
			}
		}
		key := canonicalKey(name)
		switch key {
		case "Host":
			if h.hasHost {
				return perr(http.StatusBadRequest, "more than one Host")
			}
			h.host, h.hasHost = v, true
			continue // as net/http: Host is not in the header map
		case "Content-Length":
			if cl++; cl > 1 {
				return perr(http.StatusBadRequest, "more than one Content-Length")
			}
			n, ok := parseContentLength(v)
			if !ok {
				return perr(http.StatusBadRequest, "malformed Content-Length")
			}
			h.contentLength = n
		case "Transfer-Encoding":
			if te++; te > 1 {
				return perr(http.StatusBadRequest, "more than one Transfer-Encoding")
			}
			if !strings.EqualFold(v, "chunked") {
				unsupportedTE = true
			}
			h.chunked = true
		case "Connection":
			for f := range strings.SplitSeq(v, ",") {
				switch f = textproto.TrimString(f); {
				case strings.EqualFold(f, "close"):
					h.connClose = true
				case strings.EqualFold(f, "keep-alive"):
					h.keepAlive = true
				}
			}
		case "Expect":
			if !strings.EqualFold(v, "100-continue") {
				return perr(http.StatusExpectationFailed, "unsupported expectation")
			}
			h.expect = true
		case "Upgrade":
			h.upgrade = true
		}
		vals[nv] = v
		if prev, ok := h.header[key]; ok {
			h.header[key] = append(prev, v)
		} else {
			h.header[key] = vals[nv : nv+1 : nv+1]
			h.order = append(h.order, key)
		}
		nv++
	}
	if h.chunked && cl > 0 {
		return perr(http.StatusBadRequest, "both Content-Length and Transfer-Encoding")
	}
	if h.chunked && h.minor == 0 {
		return perr(http.StatusBadRequest, "Transfer-Encoding in an HTTP/1.0 request")
	}
	if unsupportedTE {
		return perr(http.StatusNotImplemented, "unsupported transfer coding")
	}
	if h.minor == 1 && !h.hasHost {
		return perr(http.StatusBadRequest, "missing Host")
	}
	for i := 0; i < len(h.host); i++ {
		if c := h.host[i]; c <= ' ' || c == 0x7f || c == '/' || c == '@' {
			return perr(http.StatusBadRequest, "malformed Host")
		}
	}
	if h.minor == 0 && !h.keepAlive {
		h.connClose = true
	}
	if !h.expect || (h.contentLength <= 0 && !h.chunked) || h.minor == 0 {
		// No 100 Continue to an HTTP/1.0 client (RFC 9110 §15.2).
		h.expect = false
	}
	return nil
}

// cutLine splits s after the first line, dropping its CRLF or LF.
func cutLine(s string) (line, rest string) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s, ""
	}
	line, rest = s[:i], s[i+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// parseContentLength accepts 1 to 18 decimal digits, nothing else.
func parseContentLength(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// tokenTable marks the tchar bytes of RFC 9110 §5.6.2.
var tokenTable = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenTable[s[i]] {
			return false
		}
	}
	return true
}

// canonicalKey returns name in canonical form without allocating when it
// already is (the common case).
func canonicalKey(name string) string {
	upper := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if upper && c >= 'a' && c <= 'z' || !upper && c >= 'A' && c <= 'Z' {
			return textproto.CanonicalMIMEHeaderKey(name)
		}
		upper = c == '-'
	}
	return name
}

// errBadChunk is a malformed chunked request body.
var errBadChunk = errors.New("malformed chunked request body")
