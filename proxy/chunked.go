package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
)

// chunkedReader decodes a chunked body (RFC 9112 §7.1) up to and including
// its last chunk; the trailer section is left in br for the caller. It
// follows net/http's reader (CRLF line ends only, extensions ignored, a cap
// on bytes that are not data) except that white space before an extension
// ("5 ;name=value") is accepted: RFC 9112 allows it (BWS) and nginx takes it.
type chunkedReader struct {
	br       *bufio.Reader
	n        uint64 // data bytes left in the current chunk
	crlf     bool   // the current chunk's data ended: its CRLF comes next
	excess   int64  // bytes that were not data, less an allowance
	err      error
	declared uint64 // data bytes the chunk-size lines announced so far
	max      int64  // > 0: announcing more fails at once with *http.MaxBytesError
}

func newChunkedReader(br *bufio.Reader) *chunkedReader { return &chunkedReader{br: br} }

var (
	errChunkLine     = errors.New("malformed chunk-size line")
	errChunkEnd      = errors.New("chunk data not followed by CRLF")
	errChunkOverhead = errors.New("chunked body carries too much that is not data")
)

// maxChunkLine bounds a chunk-size line with its extensions.
const maxChunkLine = 4096

func (cr *chunkedReader) Read(p []byte) (n int, err error) {
	for cr.err == nil {
		if cr.crlf {
			if n > 0 && cr.br.Buffered() < 2 {
				break // return what we have rather than wait for the CRLF
			}
			var end [2]byte
			if _, cr.err = io.ReadFull(cr.br, end[:]); cr.err != nil {
				if cr.err == io.EOF {
					cr.err = io.ErrUnexpectedEOF
				}
				break
			}
			if end != [2]byte{'\r', '\n'} {
				cr.err = errChunkEnd
				break
			}
			cr.crlf = false
		}
		if cr.n == 0 {
			if n > 0 && !cr.lineBuffered() {
				break // do not wait for the next chunk's size with data in hand
			}
			cr.beginChunk()
			continue
		}
		if len(p) == 0 {
			break
		}
		q := p
		if uint64(len(q)) > cr.n {
			q = q[:cr.n]
		}
		var m int
		m, cr.err = cr.br.Read(q)
		n += m
		p = p[m:]
		cr.n -= uint64(m)
		if cr.n == 0 && cr.err == nil {
			cr.crlf = true
		} else if cr.err == io.EOF {
			cr.err = io.ErrUnexpectedEOF
		}
	}
	return n, cr.err
}

// lineBuffered reports whether a whole line is already buffered.
func (cr *chunkedReader) lineBuffered() bool {
	b, _ := cr.br.Peek(cr.br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// beginChunk reads a chunk-size line; a size of 0 ends the body (io.EOF).
func (cr *chunkedReader) beginChunk() {
	line, err := cr.br.ReadSlice('\n')
	switch {
	case err == io.EOF:
		cr.err = io.ErrUnexpectedEOF
		return
	case err == bufio.ErrBufferFull:
		cr.err = errChunkLine
		return
	case err != nil:
		cr.err = err
		return
	}
	// CRLF only, and no CR inside the line (request smuggling guards, as
	// net/http: RFC 9112 errata 7633 keeps bare LF out of chunked framing).
	if len(line) < 2 || bytes.IndexByte(line, '\r') != len(line)-2 || len(line)-2 > maxChunkLine {
		cr.err = errChunkLine
		return
	}
	cr.excess += int64(len(line))
	line = line[:len(line)-2]
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1]
	}
	size, ok := parseChunkSize(line)
	if !ok {
		cr.err = errChunkLine
		return
	}
	// A sender may stream a byte per chunk, but not pad each with a long
	// extension: 16 bytes of overhead per chunk plus twice its data are
	// allowed, as net/http does.
	cr.excess = max(cr.excess-16-2*int64(min(size, 1<<40)), 0)
	if cr.excess > 16<<10 {
		cr.err = errChunkOverhead
		return
	}
	if cr.declared += size; cr.max > 0 && (cr.declared > uint64(cr.max) || cr.declared < size) {
		// Over the body limit as soon as a chunk says so, not after its
		// data (a client announcing 16 MiB and sending 5 bytes would
		// otherwise hold the connection until a timeout), as nginx.
		cr.err = &http.MaxBytesError{Limit: cr.max}
		return
	}
	cr.n = size
	if size == 0 {
		cr.err = io.EOF
	}
}

// parseChunkSize parses hex digits: any number of leading zeros (RFC 9112
// chunk-size = 1*HEXDIG, as nginx), then at most 16 digits.
func parseChunkSize(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for len(b) > 1 && b[0] == '0' {
		b = b[1:]
	}
	if len(b) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	return n, true
}
