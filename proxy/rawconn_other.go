//go:build !linux

package proxy

import "net"

// wrapConn returns c unchanged (raw socket calls are used on Linux only).
func wrapConn(c net.Conn) net.Conn { return c }

// deferWrites does nothing off Linux.
func deferWrites(net.Conn) {}
