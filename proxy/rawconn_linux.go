package proxy

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// rawConn reads and writes a non-blocking TCP socket with raw read(2) and
// write(2) calls inside syscall.RawConn, so the goroutine keeps its P across
// the call. On a non-blocking socket these calls never block; skipping the
// runtime's syscall entry and exit saves CPU per call and keeps the
// runtime's monitor from handing the P to another thread while a short
// loopback write runs, which otherwise costs a thread wake-up and a context
// switch per request under load. Waiting (EAGAIN), deadlines and Close work
// as for net.TCPConn, through the runtime's network poller.
type rawConn struct {
	net.Conn
	rc syscall.RawConn

	rbuf  []byte
	rn    int
	rerr  syscall.Errno
	readF func(uintptr) bool

	wbuf   []byte
	wn     int
	werr   syscall.Errno
	writeF func(uintptr) bool

	// sendTimeout, when set (client connections), bounds each wait for the
	// socket to take more bytes: see Write. dlMu guards wdl, the write
	// deadline last set through SetDeadline or SetWriteDeadline, which the
	// send timeout is capped by and gives way to after a wait.
	sendTimeout time.Duration
	dlMu        sync.Mutex
	wdl         time.Time
	armed       atomic.Bool // the send timeout's deadline is in force

	// Deferred writes (deferWrites): sent by the next Read from inside the
	// poller's read wait, so that the read is not first tried on an empty
	// socket.
	deferW     bool
	pending    []byte
	wstate     int // 0: pending not written yet, 1: written, 2: EAGAIN, 3: error
	writeReadF func(uintptr) bool
}

// wrapConn returns c with raw reads and writes when it is a TCP connection,
// c itself otherwise.
func wrapConn(c net.Conn) net.Conn {
	var sc syscall.Conn
	switch v := c.(type) {
	case *net.TCPConn:
		sc = v
	case *limitTCPConn:
		sc = v
	default:
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	r := &rawConn{Conn: c, rc: rc}
	r.readF = r.doRead
	r.writeF = r.doWrite
	r.writeReadF = r.doWriteRead
	return r
}

// deferWrites makes the writes until the next Read wait for that Read. The
// caller must only use it when the peer sends nothing before it has the
// written bytes (a request to an origin): the first read is then skipped,
// as the answer cannot be there yet, and the read waits for the poller.
func deferWrites(c net.Conn) {
	if r, ok := c.(*rawConn); ok {
		r.deferW = true
	}
}

func (c *rawConn) doWriteRead(fd uintptr) bool {
	if c.wstate != 0 {
		return c.doRead(fd)
	}
	for c.wn < len(c.pending) {
		rest := c.pending[c.wn:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch e {
		case 0:
			c.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			c.wstate = 2
			return true
		default:
			c.wstate, c.werr = 3, e
			return true
		}
	}
	// Written before the wait began: the answer's arrival wakes the wait.
	c.wstate = 1
	return false
}

// flushDeferred sends the deferred bytes, then reads into p.
func (c *rawConn) flushDeferred(p []byte) (int, error) {
	c.deferW = false
	c.wn, c.werr, c.wstate = 0, 0, 0
	c.rbuf, c.rn, c.rerr = p, 0, 0
	err := c.rc.Read(c.writeReadF)
	c.rbuf = nil
	pending := c.pending
	c.pending = c.pending[:0]
	switch {
	case c.wstate == 3:
		return 0, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", c.werr)}
	case c.wstate == 2 || c.wstate == 0 && err == nil:
		if _, err := c.Write(pending[c.wn:]); err != nil {
			return 0, err
		}
		return c.Read(p)
	case err != nil:
		return 0, err
	}
	return c.readResult()
}

func (c *rawConn) doRead(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		c.rn, c.rerr = int(n), e
		return true
	}
}

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(c.pending) > 0 {
		return c.flushDeferred(p)
	}
	c.rbuf, c.rn, c.rerr = p, 0, 0
	err := c.rc.Read(c.readF)
	c.rbuf = nil
	if err != nil {
		return 0, err
	}
	return c.readResult()
}

func (c *rawConn) readResult() (int, error) {
	if c.rerr != 0 {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("read", c.rerr)}
	}
	if c.rn == 0 {
		return 0, io.EOF
	}
	return c.rn, nil
}

func (c *rawConn) doWrite(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		rest := c.wbuf[c.wn:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch e {
		case 0:
			c.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werr = e
			return true
		}
	}
	return true
}

// doWriteTimed is doWrite for a connection with a send timeout: before each
// wait in the poller (the socket's buffer is full) the write deadline is set
// to now + sendTimeout, so the wait fails when the peer takes nothing for
// that long, and every wait after some progress starts a new period.
func (c *rawConn) doWriteTimed(fd uintptr) bool {
	if c.doWrite(fd) {
		return true
	}
	c.dlMu.Lock()
	d := time.Now().Add(c.sendTimeout)
	if !c.wdl.IsZero() && c.wdl.Before(d) {
		d = c.wdl
	}
	c.armed.Store(true)
	c.Conn.SetWriteDeadline(d)
	c.dlMu.Unlock()
	return false
}

// setSendTimeout makes every write to c that cannot progress for d fail.
// Only a rawConn (Linux TCP) can do so without a syscall per write; another
// connection is wrapped in a sendTimeoutConn.
func setSendTimeout(c net.Conn, d time.Duration) net.Conn {
	if d <= 0 {
		return c
	}
	if r, ok := c.(*rawConn); ok {
		r.sendTimeout = d
		r.writeF = r.doWriteTimed
		return r
	}
	return newSendTimeoutConn(c, d)
}

func (c *rawConn) SetDeadline(t time.Time) error {
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	c.wdl = t
	c.armed.Store(false)
	return c.Conn.SetDeadline(t)
}

func (c *rawConn) SetWriteDeadline(t time.Time) error {
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	c.wdl = t
	c.armed.Store(false)
	return c.Conn.SetWriteDeadline(t)
}

func (c *rawConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.deferW {
		c.pending = append(c.pending, p...)
		return len(p), nil
	}
	c.wbuf, c.wn, c.werr = p, 0, 0
	err := c.rc.Write(c.writeF)
	n := c.wn
	c.wbuf = nil
	if c.armed.Load() {
		// Only a write that had to wait armed the send timeout: the
		// deadline set through SetWriteDeadline (none, or write_timeout's)
		// is in force again, so an expired period cannot fail a later
		// write that would not wait.
		c.dlMu.Lock()
		if c.armed.Swap(false) {
			c.Conn.SetWriteDeadline(c.wdl)
		}
		c.dlMu.Unlock()
	}
	if err != nil {
		return n, err
	}
	if c.werr != 0 {
		return n, &net.OpError{Op: "write", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("write", c.werr)}
	}
	return n, nil
}

// CloseWrite half-closes the TCP connection (lingering close).
func (c *rawConn) CloseWrite() error {
	return c.Conn.(interface{ CloseWrite() error }).CloseWrite()
}

// idleUsable reports whether an idle keep-alive connection can carry a new
// request: nothing to read (EAGAIN). End of stream (the origin closed it), a
// reset, or bytes the origin sent unasked (extra) make it unusable. One
// non-blocking peek; the read deadline must not have passed.
func idleUsable(c net.Conn) (usable, extra bool) {
	r, ok := c.(*rawConn)
	if !ok {
		return true, false
	}
	// One captured variable (b[0] is the peeked byte, b[1] the outcome):
	// each variable the closure shares is a heap allocation.
	var b [2]byte
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
				syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				b[1] = 1
			case e == 0 && n > 0:
				b[1] = 2
			}
			return true
		}
	})
	return err == nil && b[1] == 1, b[1] == 2
}

// peerClosed reports whether the peer of c closed or reset the connection:
// one non-blocking peek that reads nothing away. Bytes waiting (a pipelined
// request) or none yet (EAGAIN) mean it is still there. It does not take
// the connection's read lock, so a read in progress elsewhere does not
// block it.
//
// On a TLS connection the peek is at the TCP socket under it (the bytes of
// a record count as bytes waiting, whatever the record holds). A TLS client
// sends a close_notify alert before it closes (Go, browsers, curl), so what
// waits there after a client left is that alert and then the end of the
// stream: bytes waiting count as gone too when the client has shut its
// sending side after them (poll's POLLRDHUP), as a half-close does on a
// plain connection.
func peerClosed(c net.Conn) bool {
	isTLS := false
	for unwrapped := false; !unwrapped; {
		switch v := c.(type) {
		case *sendTimeoutConn:
			c = v.Conn
		case *tls.Conn:
			c, isTLS = v.NetConn(), true
		default:
			unwrapped = true
		}
	}
	var rc syscall.RawConn
	switch v := c.(type) {
	case *rawConn:
		rc = v.rc
	case syscall.Conn:
		rc, _ = v.SyscallConn()
	}
	if rc == nil {
		return false
	}
	closed := false
	var b [1]byte
	rc.Control(func(fd uintptr) {
		for {
			n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
				syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
			if e == syscall.EINTR {
				continue
			}
			closed = e == 0 && n == 0 || e != 0 && e != syscall.EAGAIN
			if isTLS && e == 0 && n > 0 {
				closed = readShut(fd)
			}
			return
		}
	})
	return closed
}

// poll(2) events (Linux): the peer shut down its sending side, the
// connection hung up, an error.
const (
	pollRDHUP = 0x2000
	pollHUP   = 0x10
	pollERR   = 0x8
)

// readShut reports whether the peer of the socket fd has shut down its
// sending side (sent FIN), even with bytes still waiting to be read: one
// ppoll(2) that does not wait.
func readShut(fd uintptr) bool {
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: pollRDHUP}
	var ts syscall.Timespec // zero: do not wait
	for {
		n, _, e := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		return e == 0 && n == 1 && pfd.revents&(pollRDHUP|pollHUP|pollERR) != 0
	}
}
