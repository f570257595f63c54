package proxy

import (
	"net"
	"syscall"
	"unsafe"
)

// idleWait waits for a client connection's next request without reading
// it, so that the connection holds no read or write buffer while it is idle
// between requests (the engine gives both back to their pools, and takes
// them again when bytes come). Only for raw TCP connections (rawConn): the
// wait is the runtime's network poller's, after a non-blocking MSG_PEEK.
type idleWait struct {
	rc    syscall.RawConn
	peekF func(uintptr) bool // peek, made once per connection
}

// newIdleWait returns an idleWait for c, nil when c is not a raw TCP
// connection (TLS, PROXY protocol, other systems): those keep their buffers.
func newIdleWait(c net.Conn) *idleWait {
	r, ok := c.(*rawConn)
	if !ok {
		return nil
	}
	w := &idleWait{rc: r.rc}
	w.peekF = w.peek
	return w
}

// peek reports whether the socket has something for a read: bytes, the
// peer's end, or an error. false (EAGAIN) makes the poller wait.
func (w *idleWait) peek(fd uintptr) bool {
	var b [1]byte
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		if e != syscall.EINTR {
			return e != syscall.EAGAIN
		}
	}
}

// wait blocks until the connection has something to read, or its read
// deadline passes (os.ErrDeadlineExceeded), or it is closed.
func (w *idleWait) wait() error { return w.rc.Read(w.peekF) }
