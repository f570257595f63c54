//go:build !linux

package proxy

import "net"

// wrapConn returns c unchanged (raw socket calls are used on Linux only).
func wrapConn(c net.Conn) net.Conn { return c }

// deferWrites does nothing off Linux.
func deferWrites(net.Conn) {}

// idleUsable reports true off Linux: a stale connection is found by the
// retry on a new connection.
func idleUsable(net.Conn) bool { return true }
