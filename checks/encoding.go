package checks

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"strings"
)

// The http transport runs with DisableCompression, so it neither asks for
// nor decodes a compressed body. An origin may still send one: the check
// asked with http.headers Accept-Encoding, or the origin compresses
// whatever was asked (RFC 9110 §8.4 lets it). contentDecoder undoes gzip
// and deflate so that body, json, checksum and size assertions and
// http.body_limit apply to the content, as a browser sees it; a zip bomb
// stops at body_limit like any long body.

// contentDecoder wraps r to undo the Content-Encoding header values, last
// coding first (RFC 9110 §8.4.1). "identity" is no coding; "x-gzip" is
// gzip. It returns the first coding it does not decode ("br", "zstd",
// "compress", …) as unsupported, with r unchanged.
func contentDecoder(r io.Reader, values []string) (_ io.Reader, unsupported string) {
	var codings []string
	for _, v := range values {
		for _, c := range strings.Split(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			switch c {
			case "", "identity":
			case "gzip", "x-gzip", "deflate":
				codings = append(codings, c)
			default:
				return r, c
			}
		}
	}
	src := &sourceReader{r: r}
	out := io.Reader(src)
	for i := len(codings) - 1; i >= 0; i-- {
		out = &decodeReader{coding: codings[i], src: out, origin: src}
	}
	return out, ""
}

// decodeError is a body that does not decode as its Content-Encoding
// says: the origin's fault, reported with cause protocol.
type decodeError struct {
	coding string
	err    error
}

func (e *decodeError) Error() string {
	return "body does not decode as Content-Encoding " + e.coding + ": " + e.err.Error()
}

func (e *decodeError) Unwrap() error { return e.err }

// sourceReader remembers the last error of the network read, so that a
// reset or timeout under a decoder is reported as itself, not as bad
// compressed data.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// decodeReader undoes one coding. The decompressor is made at the first
// Read, so an empty body (HEAD, 204) is an empty content, not an error.
type decodeReader struct {
	coding string
	src    io.Reader
	origin *sourceReader
	r      io.Reader
	err    error
}

func (d *decodeReader) Read(p []byte) (int, error) {
	if d.r == nil && d.err == nil {
		d.r, d.err = d.open()
		if d.err != nil && d.err != io.EOF {
			d.err = d.wrap(d.err)
		}
	}
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.r.Read(p)
	if err != nil && err != io.EOF {
		err = d.wrap(err)
	}
	return n, err
}

func (d *decodeReader) open() (io.Reader, error) {
	if d.coding != "deflate" {
		return gzip.NewReader(d.src)
	}
	// "deflate" is zlib-wrapped (RFC 9110 §8.4.1.2), but some servers send
	// raw deflate; a zlib header is two bytes whose value is a multiple of
	// 31 with compression method 8.
	br := bufio.NewReader(d.src)
	h, err := br.Peek(2)
	if len(h) == 0 {
		return nil, err
	}
	if len(h) == 2 && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
		return zlib.NewReader(br)
	}
	return flate.NewReader(br), nil
}

// wrap returns the network error when there was one, else a decodeError.
func (d *decodeReader) wrap(err error) error {
	var de *decodeError
	if errors.As(err, &de) {
		return err
	}
	if d.origin.err != nil {
		return d.origin.err
	}
	return &decodeError{coding: d.coding, err: err}
}
