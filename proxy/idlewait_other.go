//go:build !linux

package proxy

import "net"

// idleWait is Linux's only (see idlewait_linux.go): elsewhere an idle
// connection keeps its buffers.
type idleWait struct{}

func newIdleWait(net.Conn) *idleWait { return nil }

func (*idleWait) wait() error { return nil }
