package proxy

import (
	"net/http"
	"sync"
	"time"
)

// streamSend is send_timeout for an answer to an HTTP/2 client. Its
// streams share one connection, written by net/http's HTTP/2 server: a
// client that grants no flow-control window blocks the handler's writes,
// not a connection write the listener could time. Each write (and flush)
// of the answer runs under a timer of d; if it has not returned when the
// timer fires, the stream's write deadline is set in the past
// (http.ResponseController), which resets the stream and ends the write
// with an error, so the origin connection and its max_conns slot are
// freed. A stream that keeps taking bytes is not cut: writes are split in
// frame-sized pieces, each with its own d. Time spent waiting on the
// origin does not count (a stream deadline left in force would reset an
// SSE stream whose origin is quiet for longer than d).
type streamSend struct {
	d  time.Duration
	rc *http.ResponseController
	t  *time.Timer

	mu      sync.Mutex
	closed  bool // the handler is returning: rc must not be used any more
	timedUp bool // expire cut the stream
}

// streamSendPiece is the most a write under one timer carries: HTTP/2's
// default frame size, so the timer measures progress, not the answer.
const streamSendPiece = 16 << 10

func newStreamSend(w http.ResponseWriter, d time.Duration) *streamSend {
	s := &streamSend{d: d, rc: http.NewResponseController(w)}
	s.t = time.AfterFunc(d, s.expire)
	s.t.Stop()
	return s
}

func (s *streamSend) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.timedUp = true
		s.rc.SetWriteDeadline(time.Unix(1, 0))
	}
}

// expired reports whether expire cut the stream (false for a nil s).
func (s *streamSend) expired() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timedUp
}

// write writes p to w, each piece under the timer.
func (s *streamSend) write(w http.ResponseWriter, p []byte) error {
	for len(p) > 0 {
		n := min(len(p), streamSendPiece)
		s.t.Reset(s.d)
		_, err := w.Write(p[:n])
		s.t.Stop()
		if err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// flush flushes fl, under the timer when s is not nil.
func (s *streamSend) flush(fl http.Flusher) {
	if s == nil {
		fl.Flush()
		return
	}
	s.t.Reset(s.d)
	fl.Flush()
	s.t.Stop()
}

// close stops the timer for good; after it, expire does nothing (net/http
// forbids using the ResponseWriter once the handler returned).
func (s *streamSend) close() {
	s.t.Stop()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
