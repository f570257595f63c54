package proxy

import (
	"net"
	"sync"
)

// pendingConns are the accepted connections a listener is still
// preparing (a TLS handshake, a PROXY protocol header) before it hands
// them out: closing the listener closes them too.
type pendingConns struct {
	mu     sync.Mutex
	closed bool
	m      map[net.Conn]struct{}
}

// add records c; once closeAll has run it closes c instead and reports
// false.
func (p *pendingConns) add(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	if p.m == nil {
		p.m = map[net.Conn]struct{}{}
	}
	p.m[c] = struct{}{}
	return true
}

// remove forgets c, prepared or given up.
func (p *pendingConns) remove(c net.Conn) {
	p.mu.Lock()
	delete(p.m, c)
	p.mu.Unlock()
}

// closeAll closes every pending connection, and every one added later.
func (p *pendingConns) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for c := range p.m {
		c.Close()
	}
}
