//go:build unix

package proxy

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// peekPPHeader waits (within the connection's read deadline) until the
// connection's first bytes hold a whole PROXY protocol header, without
// reading them (MSG_PEEK), and parses it: the caller reads exactly the
// header off, so nothing of what follows is taken from the socket. seen
// is how many bytes had arrived. A peer that half-closes after part of a
// header fails at once (io.ErrUnexpectedEOF), not at the deadline.
func peekPPHeader(c net.Conn) (n int, src *net.TCPAddr, seen int, err error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, nil, 0, errors.New("proxy_protocol: not a TCP connection")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, nil, 0, err
	}
	buf := make([]byte, ppMaxHeader)
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK)
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				return false
			case e != nil:
				perr = e
			case m == 0:
				perr = io.EOF
			default:
				seen = m
				n, src, perr = parsePPHeader(buf[:m])
				if perr == errPPMore {
					if readShut(fd) {
						// The peer shut its sending side after part
						// of a header: the rest will never come.
						perr = io.ErrUnexpectedEOF
						return true
					}
					return false // wait for the rest
				}
			}
			return true
		}
	})
	if err != nil {
		return 0, nil, seen, err
	}
	return n, src, seen, perr
}
