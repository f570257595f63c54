package proxy

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// clientLimit bounds the client connections one address holds open at once
// (nginx's limit_conn on $binary_remote_addr). Without it one address could
// fill max_client_conns with idle connections, reconnecting every
// read_header_timeout, and lock every other client out.
//
// The address is the TCP peer at accept, the only one known then: an IPv4
// address, or an IPv6 address's /64 (a single host is usually given a
// whole /64, and could otherwise take a new address per connection).
// Peers in exempt (trusted_proxies and proxy_protocol_from: load
// balancers and CDN edges that carry many clients' connections) are not
// limited. A connection over the limit is closed at once, before any byte
// is read or written (a TLS listener could not answer it in plain HTTP),
// and the listener goes on accepting.
type clientLimit struct {
	max    int
	exempt []netip.Prefix
	log    *slog.Logger

	mu      sync.Mutex
	open    map[netip.Addr]int // connections open per address (key)
	refused int64              // connections closed since the last line
	total   int64              // connections closed since start
	logged  time.Time          // the last "over the limit" line (one a minute)
}

func newClientLimit(max int, exempt []netip.Prefix, log *slog.Logger) *clientLimit {
	return &clientLimit{max: max, exempt: exempt, log: log, open: map[netip.Addr]int{}}
}

// clientKey is the address a connection counts under, and false for a
// peer that is not limited (exempt, or not an IP peer).
func (l *clientLimit) clientKey(a net.Addr) (netip.Addr, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	ip := ta.AddrPort().Addr().Unmap()
	for _, p := range l.exempt {
		if p.Contains(ip) {
			return netip.Addr{}, false
		}
	}
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		ip = p.Addr()
	}
	return ip, true
}

// take counts a new connection from a; false: the address is at its limit
// and the connection must be closed. key is what give takes back (the
// zero Addr for a connection that is not counted).
func (l *clientLimit) take(a net.Addr) (key netip.Addr, ok bool) {
	k, limited := l.clientKey(a)
	if !limited {
		return netip.Addr{}, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[k] >= l.max {
		l.refused++
		l.total++
		if now := time.Now(); now.Sub(l.logged) >= time.Minute {
			l.log.Warn("proxy: a client address has max_conns_per_client connections open; its new connections are closed at accept",
				"client", k.String(), "max_conns_per_client", l.max, "closed", l.refused)
			l.logged, l.refused = now, 0
		}
		return netip.Addr{}, false
	}
	l.open[k]++
	return k, true
}

// give takes back a connection counted under k by take.
func (l *clientLimit) give(k netip.Addr) {
	if !k.IsValid() {
		return
	}
	l.mu.Lock()
	if n := l.open[k]; n <= 1 {
		delete(l.open, k)
	} else {
		l.open[k] = n - 1
	}
	l.mu.Unlock()
}

// closed is how many connections the limit closed since start.
func (l *clientLimit) closed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}
