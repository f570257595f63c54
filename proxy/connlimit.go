package proxy

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// connLimit bounds the client connections open at once over all of the
// proxy's listeners (max_client_conns). At the limit a listener holds the
// connection it accepted last, unserved, and stops calling accept(2): new
// connections wait in the kernel's accept queue (and past its backlog are
// refused by the kernel) until one closes, as HAProxy does at maxconn. That bounds the memory clients can hold with slow or idle
// connections. A connection counts from its accept to its Close (a
// WebSocket tunnel too).
type connLimit struct {
	sem    chan struct{}
	m      *metrics
	log    *slog.Logger
	mu     sync.Mutex
	logged time.Time // the last "at the limit" line (one a minute)
	// per bounds each client address's connections (clientlimit.go);
	// nil: no per-client limit.
	per *clientLimit
}

// perClient bounds the connections of each client address to max (0: no
// bound), peers in exempt not counted (clientLimit). Called before the
// listeners accept.
func (l *connLimit) perClient(max int, exempt []netip.Prefix) {
	if max > 0 {
		l.per = newClientLimit(max, exempt, l.log)
	}
}

func newConnLimit(n int, m *metrics, log *slog.Logger) *connLimit {
	return &connLimit{sem: make(chan struct{}, n), m: m, log: log}
}

// listener wraps a TCP listener.
func (l *connLimit) listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, lim: l, done: make(chan struct{})}
}

func (l *connLimit) release(k netip.Addr) {
	<-l.sem
	l.m.clients.Dec()
	if l.per != nil {
		l.per.give(k)
	}
}

type limitListener struct {
	net.Listener
	lim  *connLimit
	once sync.Once
	done chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	var c net.Conn
	var k netip.Addr // the client's key in the per-client limit
	for {
		var err error
		c, err = l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.lim.per == nil {
			break
		}
		var ok bool
		if k, ok = l.lim.per.take(c.RemoteAddr()); ok {
			break
		}
		// Over max_conns_per_client: closed before it takes a slot of
		// max_client_conns; the listener goes on accepting.
		l.lim.m.perClientRefused.Inc()
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset: nothing was read, nothing lingers
		}
		c.Close()
	}
	// A slot is taken once a connection is accepted, not while waiting in
	// accept(2) (a listener waiting there must not hold one another
	// listener's client needs). At the limit this connection waits for a
	// slot, and so the listener stops accepting: the next ones wait in
	// the kernel's accept queue.
	select {
	case l.lim.sem <- struct{}{}:
	default:
		l.lim.m.clientWait.Inc()
		l.lim.mu.Lock()
		if now := time.Now(); now.Sub(l.lim.logged) >= time.Minute {
			l.lim.logged = now
			l.lim.log.Warn("proxy: max_client_conns client connections are open; new ones wait in the accept queue until one closes",
				"max_client_conns", cap(l.lim.sem), "addr", l.Addr().String())
		}
		l.lim.mu.Unlock()
		select {
		case l.lim.sem <- struct{}{}:
		case <-l.done:
			c.Close()
			if l.lim.per != nil {
				l.lim.per.give(k)
			}
			return nil, net.ErrClosed
		}
	}
	l.lim.m.clients.Inc()
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return &limitConn{Conn: c, lim: l.lim, key: k}, nil
	}
	return &limitTCPConn{TCPConn: tc, lim: l.lim, key: k}, nil
}

func (l *limitListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitTCPConn is an accepted TCP connection that gives its slot back when
// closed. It keeps *net.TCPConn's methods (SyscallConn for the raw reads
// and peeks, CloseWrite for the lingering close, ReadFrom for sendfile).
type limitTCPConn struct {
	*net.TCPConn
	lim    *connLimit
	once   sync.Once
	remote net.Addr   // the client's address from a PROXY protocol header, if any
	key    netip.Addr // the client's key in the per-client limit
}

func (c *limitTCPConn) setRemote(a net.Addr) { c.remote = a }

// RemoteAddr is the client's address: from the PROXY protocol header
// when there was one (proxyproto.go), else the TCP peer's.
func (c *limitTCPConn) RemoteAddr() net.Addr {
	if c.remote != nil {
		return c.remote
	}
	return c.TCPConn.RemoteAddr()
}

func (c *limitTCPConn) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(func() { c.lim.release(c.key) })
	return err
}

// limitConn is limitTCPConn for another kind of connection.
type limitConn struct {
	net.Conn
	lim  *connLimit
	once sync.Once
	key  netip.Addr
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.lim.release(c.key) })
	return err
}
