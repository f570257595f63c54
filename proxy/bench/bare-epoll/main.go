//go:build linux

// Command bare-epoll is a bare reverse proxy on a hand-written epoll loop,
// for proxy/bench/run.sh (BARE=1): it forwards GET requests to one origin
// over kept-alive connections with no routing, no metrics, no failover and
// no error handling. It is not part of vigil; it measures how fast a Go
// proxy with one event loop instead of a goroutine per connection can be on
// the machine: a ceiling for any engine vigil could ship. The loop waits in
// the Go runtime's network poller (its epoll descriptor is itself registered
// there), so no thread blocks in epoll_wait(2) and the runtime's monitor
// never hands the loop's P to another thread; by default it runs one loop,
// which on a 2-core machine shared with the load generator and the origin
// was as fast as two and had a far lower p99 (two loops: 10-30 ms).
package main

import (
	"bytes"
	"flag"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

type conn struct {
	fd     int
	client bool
	buf    []byte
	peer   *conn // upstream for a client while a request is in flight, client for an upstream
	need   int   // upstream: total response length once known, else -1
	hdrEnd int
}

type loop struct {
	ep    int
	lfd   int
	conns map[int]*conn
	idle  []*conn
	oaddr syscall.SockaddrInet4
}

func main() {
	listen := flag.Int("port", 19186, "listen port on 127.0.0.1")
	oport := flag.Int("oport", 19180, "origin port on 127.0.0.1")
	n := flag.Int("loops", 1, "event loops (SO_REUSEPORT listeners)")
	flag.Parse()
	for i := 0; i < *n; i++ {
		l := &loop{conns: map[int]*conn{}, oaddr: syscall.SockaddrInet4{Port: *oport, Addr: [4]byte{127, 0, 0, 1}}}
		l.lfd = listenReuse(*listen)
		l.ep, _ = syscall.EpollCreate1(0)
		syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, l.lfd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.lfd)})
		go l.run()
	}
	select {}
}

func listenReuse(port int) int {
	fd, _ := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK, 0)
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, 0xf /*SO_REUSEPORT*/, 1)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		panic(err)
	}
	syscall.Listen(fd, 1024)
	return fd
}

var crlf2 = []byte("\r\n\r\n")
var clKey = []byte("\r\nContent-Length:")

var block = flag.Bool("block", false, "wait in a blocking epoll_wait(2) instead of the Go poller")

func (l *loop) run() {
	evs := make([]syscall.EpollEvent, 128)
	rbuf := make([]byte, 64<<10)
	var n int
	// wait: one non-blocking epoll_wait; false (wait for the poller) when
	// nothing is ready.
	wait := func(fd uintptr) bool {
		r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_WAIT, fd, uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
		if e != 0 {
			n = 0
			return e != syscall.EINTR && e != syscall.EAGAIN
		}
		n = int(r)
		return n > 0
	}
	syscall.SetNonblock(l.ep, true)
	rc, err := os.NewFile(uintptr(l.ep), "epoll").SyscallConn()
	if err != nil {
		panic(err)
	}
	for {
		if *block {
			var err error
			n, err = syscall.EpollWait(l.ep, evs, -1)
			if err != nil && err != syscall.EINTR {
				panic(err)
			}
		} else if err := rc.Read(wait); err != nil {
			panic(err)
		}
		for i := 0; i < n; i++ {
			fd := int(evs[i].Fd)
			if fd == l.lfd {
				for {
					nfd, _, err := syscall.Accept4(l.lfd, syscall.SOCK_NONBLOCK)
					if err != nil {
						break
					}
					syscall.SetsockoptInt(nfd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
					l.conns[nfd] = &conn{fd: nfd, client: true}
					syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, nfd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(nfd)})
				}
				continue
			}
			c := l.conns[fd]
			if c == nil {
				continue
			}
			m, err := rawRead(fd, rbuf)
			if m <= 0 {
				if err == syscall.EAGAIN {
					continue
				}
				l.close(c)
				continue
			}
			c.buf = append(c.buf, rbuf[:m]...)
			if c.client {
				l.clientData(c)
			} else {
				l.upstreamData(c)
			}
		}
	}
}

func (l *loop) close(c *conn) {
	syscall.Close(c.fd)
	delete(l.conns, c.fd)
	if c.peer != nil {
		p := c.peer
		c.peer = nil
		p.peer = nil
		l.close(p)
	}
}

func (l *loop) clientData(c *conn) {
	if c.peer != nil {
		return // a request is in flight; pipelined bytes wait
	}
	e := bytes.Index(c.buf, crlf2)
	if e < 0 {
		return
	}
	req := c.buf[:e+4]
	var u *conn
	if k := len(l.idle); k > 0 {
		u, l.idle = l.idle[k-1], l.idle[:k-1]
	} else {
		fd, _ := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
		if err := syscall.Connect(fd, &l.oaddr); err != nil {
			syscall.Close(fd)
			l.close(c)
			return
		}
		syscall.SetNonblock(fd, true)
		syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		u = &conn{fd: fd}
		l.conns[fd] = u
		syscall.EpollCtl(l.ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)})
	}
	// Rewrite: add X-Forwarded-For before the blank line (as a real proxy does).
	out := make([]byte, 0, len(req)+40)
	out = append(out, req[:e+2]...)
	out = append(out, "X-Forwarded-For: 127.0.0.1\r\n\r\n"...)
	c.buf = c.buf[e+4:]
	u.peer, c.peer, u.need, u.buf = c, u, -1, u.buf[:0]
	rawWrite(u.fd, out)
}

func (l *loop) upstreamData(u *conn) {
	if u.need < 0 {
		e := bytes.Index(u.buf, crlf2)
		if e < 0 {
			return
		}
		h := u.buf[:e+2]
		i := bytes.Index(h, clKey)
		if i < 0 {
			l.close(u)
			return
		}
		rest := h[i+len(clKey):]
		j := bytes.IndexByte(rest, '\r')
		n, _ := strconv.Atoi(string(bytes.TrimSpace(rest[:j])))
		u.need = e + 4 + n
	}
	if len(u.buf) < u.need {
		return
	}
	c := u.peer
	if c == nil {
		l.close(u)
		return
	}
	rawWrite(c.fd, u.buf[:u.need])
	u.buf = u.buf[:0]
	u.peer, c.peer = nil, nil
	l.idle = append(l.idle, u)
	if len(c.buf) > 0 {
		l.clientData(c)
	}
}

func rawRead(fd int, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

func rawWrite(fd int, p []byte) {
	syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
}
