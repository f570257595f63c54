//go:build !linux

package proxy

import (
	"net"
	"time"
)

// wrapConn returns c unchanged (raw socket calls are used on Linux only).
func wrapConn(c net.Conn) net.Conn { return c }

// deferWrites does nothing off Linux.
func deferWrites(net.Conn) {}

// idleUsable reports true off Linux: a stale connection is found by the
// retry on a new connection.
func idleUsable(net.Conn) (usable, extra bool) { return true, false }

// setSendTimeout makes every write to c that cannot progress for d fail.
func setSendTimeout(c net.Conn, d time.Duration) net.Conn {
	if d <= 0 {
		return c
	}
	return newSendTimeoutConn(c, d)
}

// peerClosed reports false off Linux: a client that went away is noticed
// when its answer is written.
func peerClosed(net.Conn) bool { return false }

// readShut reports false off Linux (no POLLRDHUP): a peer's half-close after
// part of a PROXY protocol header is found at the read deadline.
func readShut(uintptr) bool { return false }
