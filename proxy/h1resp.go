package proxy

import (
	"bufio"
	"io"
	"net/http"
	"net/textproto"
	"strings"
)

// The fast path's origin response reader (RFC 9112 §4, §6.3): one string
// per response head, field values sharing one backing array. A response
// with a malformed head or ambiguous framing is an error (the client gets
// 502), never guessed at: several differing Content-Length values, a
// transfer coding other than chunked, obs-fold, control characters.

// maxResponseHead bounds an origin's response head.
const maxResponseHead = 256 << 10

// protocolError is an origin answer that breaks HTTP/1.1 (a malformed head,
// ambiguous framing, endless interim answers): the try fails with cause
// protocol and the client gets 502.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

var (
	// errBadResponse is a malformed origin response head.
	errBadResponse error = &protocolError{"malformed response from origin"}
	// errHeadTooLarge is a response head over maxResponseHead (both
	// paths: Go's transport's own error is mapped to it, see headDetail).
	errHeadTooLarge error = &protocolError{"response head larger than 256 KiB from origin"}
	// errTooMany1xx is an origin that sent more interim answers than
	// max1xx before its final one (net/http's Transport fails the same way).
	errTooMany1xx error = &protocolError{"too many interim (1xx) answers from origin"}
	// errBadRespChunk is a malformed chunk or trailer in an origin's body.
	errBadRespChunk error = &protocolError{"malformed chunked body from origin"}
)

// partialHeadError is a read error after part of a response head arrived
// (io.EOF is io.ErrUnexpectedEOF instead): the origin began to answer, so
// the request is not sent again on a new connection.
type partialHeadError struct{ err error }

func (e *partialHeadError) Error() string { return e.err.Error() }
func (e *partialHeadError) Unwrap() error { return e.err }

// max1xx bounds the interim answers (103 Early Hints, a stray 100) skipped
// before a final answer.
const max1xx = 10

// respBuf is what readResponse reuses from one response to the next on a
// connection: the head buffer, the Response and its header map. The
// returned Response and header are valid until the next readResponse with
// the same respBuf (the fast path reads the next response only after the
// body was closed). Header values are freshly allocated per response: the
// client side shares them.
type respBuf struct {
	scratch []byte
	resp    http.Response
	hdr     http.Header
	order   []string // hdr's names in the order they came, each once
}

// readResponse reads one response to a request with method from br.
func readResponse(br *bufio.Reader, method string, rb *respBuf) (*http.Response, error) {
	raw := rb.scratch[:0]
	defer func() { rb.scratch = raw[:0] }()
	for {
		start := len(raw) // where this line begins in raw
		line, err := br.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			raw = append(raw, line...)
			if len(raw) > maxResponseHead {
				return nil, errHeadTooLarge
			}
			line, err = br.ReadSlice('\n')
		}
		if err != nil {
			if len(raw)+len(line) > 0 {
				// Part of a head arrived: the origin began to answer.
				if err == io.EOF {
					return nil, io.ErrUnexpectedEOF
				}
				return nil, &partialHeadError{err}
			}
			return nil, err
		}
		raw = append(raw, line...)
		if len(raw) > maxResponseHead {
			return nil, errHeadTooLarge
		}
		// The whole line, not the last piece of one longer than br's
		// buffer (which may be "\r\n" alone): see readHead.
		if l := raw[start:]; len(l) == 1 || len(l) == 2 && l[0] == '\r' {
			break
		}
	}
	s := string(raw)
	line, rest := cutLine(s)
	rb.resp = http.Response{ContentLength: -1}
	resp := &rb.resp
	// Status line: HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || !strings.HasPrefix(line, "HTTP/1.") || line[8] != ' ' ||
		(line[7] != '0' && line[7] != '1') || len(line) > 12 && line[12] != ' ' {
		return nil, errBadResponse
	}
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = line[:8], 1, int(line[7]-'0')
	code := 0
	for i := 9; i < 12; i++ {
		c := line[i]
		if c < '0' || c > '9' {
			return nil, errBadResponse
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 {
		return nil, errBadResponse
	}
	resp.StatusCode, resp.Status = code, line[9:]
	if len(line) == 12 {
		resp.Status = line[9:12] + " " + http.StatusText(code)
	}

	vals := make([]string, strings.Count(rest, "\n"))
	hdr := rb.hdr
	if hdr == nil || len(hdr) > 64 {
		hdr = make(http.Header, len(vals))
		rb.hdr = hdr
	} else {
		clear(hdr)
	}
	rb.order = rb.order[:0]
	var (
		clSeen  string
		te      int
		chunked bool
		connHdr []string
	)
	for nv := 0; ; {
		line, rest = cutLine(rest)
		if line == "" {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, errBadResponse // obs-fold: 502 (RFC 9112 §5.2)
		}
		colon := strings.IndexByte(line, ':')
		if colon <= 0 || !isToken(line[:colon]) {
			return nil, errBadResponse
		}
		v := trimOWS(line[colon+1:])
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
				return nil, errBadResponse
			}
		}
		key := canonicalKey(line[:colon])
		switch key {
		case "Content-Length":
			if clSeen != "" && v != clSeen {
				return nil, errBadResponse
			}
			n, ok := parseContentLength(v)
			if !ok {
				return nil, errBadResponse
			}
			clSeen, resp.ContentLength = v, n
		case "Transfer-Encoding":
			if te++; te > 1 || !strings.EqualFold(v, "chunked") {
				return nil, errBadResponse
			}
			chunked = true
		case "Connection":
			connHdr = append(connHdr, v)
		}
		vals[nv] = v
		if prev, ok := hdr[key]; ok {
			hdr[key] = append(prev, v)
		} else {
			hdr[key] = vals[nv : nv+1 : nv+1]
			rb.order = append(rb.order, key)
		}
		nv++
	}
	resp.Header = hdr
	if chunked && resp.ProtoMinor == 0 {
		return nil, errBadResponse // faulty framing (RFC 9112 §6.1)
	}
	if namedIn(connHdr, "close") || resp.ProtoMinor == 0 && !namedIn(connHdr, "keep-alive") {
		resp.Close = true
	}
	if chunked && clSeen != "" {
		// Both: chunked wins (RFC 9112 §6.3), and the connection is not reused.
		delete(hdr, "Content-Length")
		resp.ContentLength = -1
		resp.Close = true
	}
	switch {
	case method == http.MethodHead || code < 200 || code == http.StatusNoContent || code == http.StatusNotModified:
		resp.Body = http.NoBody
		if method != http.MethodHead {
			resp.ContentLength = 0
		}
	case chunked:
		delete(hdr, "Content-Length")
		resp.TransferEncoding = chunkedTE
		if tr := hdr["Trailer"]; len(tr) > 0 {
			resp.Trailer = http.Header{}
			for _, v := range tr {
				for f := range strings.SplitSeq(v, ",") {
					if f = textproto.TrimString(f); f != "" {
						resp.Trailer[textproto.CanonicalMIMEHeaderKey(f)] = nil
					}
				}
			}
			delete(hdr, "Trailer")
		}
		resp.Body = &chunkedBody{r: newChunkedReader(br), br: br, resp: resp}
	case resp.ContentLength == 0:
		resp.Body = http.NoBody
	case resp.ContentLength > 0:
		resp.Body = &clBody{br: br, n: resp.ContentLength}
	default:
		// Delimited by the close of the connection.
		resp.Close = true
		resp.Body = &eofBody{br: br}
	}
	return resp, nil
}

// clBody is a Content-Length body; an early end is io.ErrUnexpectedEOF.
type clBody struct {
	br *bufio.Reader
	n  int64
}

func (b *clBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.br.Read(p)
	b.n -= int64(n)
	if err == io.EOF {
		return n, io.ErrUnexpectedEOF
	}
	if err == nil && b.n == 0 {
		err = io.EOF
	}
	return n, err
}

func (b *clBody) Close() error { return nil }

// eofBody is a body delimited by the end of the connection.
type eofBody struct{ br *bufio.Reader }

func (b *eofBody) Read(p []byte) (int, error) { return b.br.Read(p) }
func (b *eofBody) Close() error               { return nil }

// chunkedBody is a chunked body; its trailer fields go to resp.Trailer.
type chunkedBody struct {
	r    io.Reader
	br   *bufio.Reader
	resp *http.Response
	err  error
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		if terr := b.readTrailer(); terr != nil {
			err = terr
		}
	} else if err != nil && !isNetErr(err) {
		err = errBadRespChunk
	}
	b.err = err
	return n, err
}

func (b *chunkedBody) readTrailer() error {
	total := 0
	for {
		line, err := b.br.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				return errBadRespChunk
			}
			return io.ErrUnexpectedEOF
		}
		if total += len(line); total > maxTrailer || len(line) < 2 || line[len(line)-2] != '\r' {
			return errBadRespChunk // trailer lines end in CRLF, as net/http requires
		}
		s := strings.TrimRight(string(line), "\r\n")
		if s == "" {
			return nil
		}
		colon := strings.IndexByte(s, ':')
		if colon <= 0 || !isToken(s[:colon]) || s[0] == ' ' || s[0] == '\t' {
			return errBadRespChunk
		}
		v := trimOWS(s[colon+1:])
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return errBadRespChunk
		}
		if b.resp.Trailer == nil {
			b.resp.Trailer = http.Header{}
		}
		k := canonicalKey(s[:colon])
		b.resp.Trailer[k] = append(b.resp.Trailer[k], v)
	}
}

func (b *chunkedBody) Close() error { return nil }
