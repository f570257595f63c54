package proxy

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// Request buffering (request_buffering, nginx's proxy_request_buffering on):
// a request body larger than retry.max_buffered_body is received whole
// before any origin is chosen or dialled, into a temporary file, and then
// sent from that file with its length known. Streamed to the origin as it
// arrives instead, a slow upload (a byte a second) would hold an origin
// connection and a max_conns slot for as long as its client liked, as
// try_timeout restarts with every byte: a hundred such clients could take
// a max_conns: 100 origin from everyone else.
//
// The file is created with mode 0600 in body_temp_dir and unlinked at once
// (on Linux and other Unix systems): it has no name while it is used, and
// its space goes back when its request ends, also when the client leaves
// mid-upload or the process dies. gRPC calls and upgrades always stream
// (a streaming call's client waits for answers before it sends more).
//
// Retries: a spooled body is held whole, so a try that failed before a
// byte reached its origin (DNS, connect, TLS) moves on to another origin as
// for a buffered one. After a sent try (5xx, timeout, reset) the existing
// rule stands: only a body within max_buffered_body is sent again, as
// max_buffered_body is the size up to which the operator allowed replays.

// spoolError is the proxy's own failure to store a body (the directory is
// missing or not writable, the disk is full): the client gets 503 and the
// log names the directory.
type spoolError struct {
	dir string
	err error
}

func (e *spoolError) Error() string { return "body_temp_dir " + e.dir + ": " + e.err.Error() }
func (e *spoolError) Unwrap() error { return e.err }

// spooled is a request body received whole into a file.
type spooled struct {
	f    *os.File
	n    int64
	name string // the file's name while it still has one (unlink failed)
}

// reader returns a reader of the whole body for one try: each try reads
// with its own offset (pread), so a transport still finishing a previous
// try's write cannot disturb it.
func (s *spooled) reader() io.ReadCloser {
	return io.NopCloser(io.NewSectionReader(s.f, 0, s.n))
}

func (s *spooled) close() {
	s.f.Close()
	if s.name != "" {
		os.Remove(s.name)
	}
}

// spoolBody writes prefix and then everything src holds into a new
// temporary file in dir ("" is os.TempDir()). An error reading src is
// returned as it is (the caller answers 408, 413 or 400 as for a buffered
// body); an error of the file is a *spoolError. No file is left behind on
// error. written is how many bytes the file took, also on error (a body
// the client broke off, one over max_body, a disk that filled up).
func spoolBody(dir string, prefix []byte, src io.Reader) (s *spooled, written int64, err error) {
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "vigil-body-*") // mode 0600
	if err != nil {
		return nil, 0, &spoolError{dir: dir, err: err}
	}
	s = &spooled{f: f}
	if err := os.Remove(f.Name()); err != nil {
		// A system that cannot unlink an open file: removed at close.
		s.name = f.Name()
	}
	if len(prefix) > 0 {
		w, err := f.Write(prefix)
		s.n = int64(w)
		if err != nil {
			s.close()
			return nil, s.n, &spoolError{dir: dir, err: err}
		}
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		m, rerr := src.Read(buf)
		if m > 0 {
			w, werr := f.Write(buf[:m])
			s.n += int64(w)
			if werr != nil {
				s.close()
				return nil, s.n, &spoolError{dir: dir, err: werr}
			}
		}
		if rerr == io.EOF {
			return s, s.n, nil
		}
		if rerr != nil {
			s.close()
			return nil, s.n, rerr
		}
	}
}

// spoolBody is spoolBody into the pool's body_temp_dir, counted: a body
// received whole in vigil_proxy_request_bodies_spooled_total, one the
// proxy could not store in vigil_proxy_request_body_spool_errors_total,
// and the bytes written to the file in
// vigil_proxy_request_bodies_spooled_bytes_total whatever the end: a body
// the client broke off, stalled or sent over max_body counts no body but
// the bytes that reached the disk before.
func (pl *pool) spoolBody(prefix []byte, src io.Reader) (*spooled, error) {
	s, written, err := spoolBody(pl.cfg.spoolDir, prefix, src)
	if written > 0 {
		pl.spooledBytes.Add(float64(written))
	}
	var se *spoolError
	switch {
	case err == nil:
		pl.spooled.Inc()
	case errors.As(err, &se):
		pl.spoolErrors.Inc()
	}
	return s, err
}

// readBodyFailed answers a request whose body could not be received before
// the first try (buffered or spooled): 413 over max_body, 408 for a client
// that stopped sending (limitName: the key that bounded the wait), 503
// when the proxy could not store it, 400 for a malformed or cut-off body.
func (pl *pool) readBodyFailed(w http.ResponseWriter, r *http.Request, err error, limitName string, start time.Time) {
	var mbe *http.MaxBytesError
	var se *spoolError
	switch {
	case errors.As(err, &mbe):
		pl.answerClose(w, r, http.StatusRequestEntityTooLarge, "request body too large", start)
	case errors.Is(err, os.ErrDeadlineExceeded):
		pl.log.Info("proxy: client stopped sending its body", "pool", pl.name, "path", r.URL.Path,
			"limit", limitName)
		pl.answerClose(w, r, http.StatusRequestTimeout, "request body not received in time", start)
	case errors.As(err, &se):
		if ok, n := pl.tryLog.allow("", "body_temp_dir", time.Now().UnixNano()); ok {
			pl.log.Error("proxy: cannot store a request body for request_buffering; check that body_temp_dir is writable and has space, or set request_buffering: off",
				"pool", pl.name, "dir", se.dir, "err", se.err.Error(), "suppressed", n)
		}
		pl.answerClose(w, r, http.StatusServiceUnavailable, "the proxy cannot store the request body", start)
	default:
		// A malformed body (bad chunk framing) or a client gone
		// mid-body: nothing to forward.
		pl.log.Debug("proxy: request body unreadable", "pool", pl.name, "path", r.URL.Path, "err", err.Error())
		pl.answerClose(w, r, http.StatusBadRequest, "malformed or incomplete request body", start)
	}
}
