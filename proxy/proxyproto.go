package proxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// The PROXY protocol (HAProxy's, versions 1 and 2): a load balancer in
// front that passes TCP through (AWS NLB, HAProxy in mode tcp, a CDN's
// TCP edge) starts every connection with a header naming the client's
// address. With proxy.proxy_protocol on, every connection to the
// listeners must come from an address of proxy_protocol_from and start
// with one; the client's address from it is the connection's remote
// address from then on: X-Forwarded-For, ip_hash, the access log, the
// logs and the refusal counts see the client, not the load balancer.
// A connection from another address, or without a well-formed header
// within read_header_timeout, is closed before anything of it is read as
// HTTP or TLS (nginx closes it too: "broken header"), counted in
// vigil_proxy_proxy_protocol_errors_total{reason} and logged at most once
// a minute.

// ppMaxHeader bounds a header: version 1's longest line is 107 bytes,
// version 2's address block 216 (AF_UNIX) plus TLVs (load balancers add a
// few short ones).
const ppMaxHeader = 2048

var ppV2Sig = []byte("\r\n\r\n\x00\r\nQUIT\n")

// Reasons of vigil_proxy_proxy_protocol_errors_total.
const (
	ppUntrusted = "untrusted" // the peer is not in proxy_protocol_from
	ppMissing   = "missing"   // the connection does not start with a header
	ppMalformed = "malformed" // it starts with one that does not parse
	ppTimeout   = "timeout"   // no whole header within read_header_timeout
	ppClosed    = "closed"    // the peer closed or reset in the middle of a header
	// ppEmpty: the peer closed or reset before its first byte, as TCP
	// health checks (a load balancer's, a kubelet's) do. Counted, never
	// logged.
	ppEmpty = "empty"
)

var ppFailReasons = []string{ppUntrusted, ppMissing, ppMalformed, ppTimeout, ppClosed, ppEmpty}

var (
	errPPMore      = errors.New("incomplete")
	errPPMissing   = errors.New("the connection does not start with a PROXY protocol header")
	errPPMalformed = errors.New("malformed PROXY protocol header")
)

// parsePPHeader parses the PROXY protocol header at the start of b. It
// returns the header's length and the client's address; src is nil when
// the header names none (v1 UNKNOWN, v2 LOCAL or an unspecified family):
// the connection's own peer stands. errPPMore: b holds only part of one.
func parsePPHeader(b []byte) (n int, src *net.TCPAddr, err error) {
	switch {
	case len(b) >= len(ppV2Sig) && bytes.Equal(b[:len(ppV2Sig)], ppV2Sig):
		return parsePPv2(b)
	case len(b) < len(ppV2Sig) && bytes.HasPrefix(ppV2Sig, b):
		return 0, nil, errPPMore
	case bytes.HasPrefix(b, []byte("PROXY ")):
		return parsePPv1(b)
	case len(b) < 6 && bytes.HasPrefix([]byte("PROXY "), b):
		return 0, nil, errPPMore
	}
	return 0, nil, errPPMissing
}

func parsePPv1(b []byte) (int, *net.TCPAddr, error) {
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 {
		if len(b) >= 107 {
			return 0, nil, errPPMalformed
		}
		return 0, nil, errPPMore
	}
	if end+2 > 107 {
		return 0, nil, errPPMalformed
	}
	f := strings.Split(string(b[6:end]), " ")
	if f[0] == "UNKNOWN" {
		return end + 2, nil, nil
	}
	if len(f) != 5 || (f[0] != "TCP4" && f[0] != "TCP6") {
		return 0, nil, errPPMalformed
	}
	ip, err1 := netip.ParseAddr(f[1])
	_, err2 := netip.ParseAddr(f[2])
	sport, err3 := ppPort(f[3])
	_, err4 := ppPort(f[4])
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || ip.Zone() != "" || ip.Is4() != (f[0] == "TCP4") {
		return 0, nil, errPPMalformed
	}
	return end + 2, net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, sport)), nil
}

// ppPort parses a version 1 port: 0-65535 in decimal, no leading zero.
func ppPort(s string) (uint16, error) {
	if s == "" || len(s) > 5 || (len(s) > 1 && s[0] == '0') {
		return 0, errPPMalformed
	}
	v, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, errPPMalformed
	}
	return uint16(v), nil
}

func parsePPv2(b []byte) (int, *net.TCPAddr, error) {
	if len(b) < 16 {
		return 0, nil, errPPMore
	}
	verCmd, fam := b[12], b[13]
	n := 16 + int(binary.BigEndian.Uint16(b[14:16]))
	if verCmd>>4 != 2 || verCmd&0xf > 1 || n > ppMaxHeader {
		return 0, nil, errPPMalformed
	}
	if len(b) < n {
		return 0, nil, errPPMore
	}
	if verCmd&0xf == 0 { // LOCAL: the load balancer's own connection (its health checks)
		return n, nil, nil
	}
	body := b[16:n]
	switch fam {
	case 0x11: // TCP over IPv4
		if len(body) < 12 {
			return 0, nil, errPPMalformed
		}
		ip := netip.AddrFrom4([4]byte(body[0:4]))
		return n, net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, binary.BigEndian.Uint16(body[8:10]))), nil
	case 0x21: // TCP over IPv6
		if len(body) < 36 {
			return 0, nil, errPPMalformed
		}
		ip := netip.AddrFrom16([16]byte(body[0:16])).Unmap()
		return n, net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, binary.BigEndian.Uint16(body[32:34]))), nil
	}
	// UNSPEC, UDP or a UNIX socket: no TCP client address to take; the
	// connection keeps the load balancer's (as nginx does).
	return n, nil, nil
}

// ppListener reads the PROXY protocol header of each connection its inner
// listener accepts, in a goroutine of the connection's own, and hands out
// the connections whose header was good, with the client's address as
// their RemoteAddr.
type ppListener struct {
	inner   net.Listener
	trusted []netip.Prefix
	timeout time.Duration
	onFail  func(reason string, peer net.Addr, err error)

	out  chan net.Conn
	errc chan error
	done chan struct{}
	once sync.Once

	pending pendingConns // headers awaited, closed with the listener
}

func newPPListener(inner net.Listener, trusted []netip.Prefix, timeout time.Duration, onFail func(string, net.Addr, error)) *ppListener {
	l := &ppListener{inner: inner, trusted: trusted, timeout: timeout, onFail: onFail,
		out: make(chan net.Conn), errc: make(chan error, 1), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

func (l *ppListener) acceptLoop() {
	for {
		c, err := l.inner.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && !errors.Is(err, net.ErrClosed) {
				time.Sleep(5 * time.Millisecond) // the consumer's Accept backs off and logs
			}
			select {
			case l.errc <- err:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if !l.trustedPeer(c.RemoteAddr()) {
			l.onFail(ppUntrusted, c.RemoteAddr(), errors.New("the peer is not in proxy_protocol_from"))
			c.Close()
			continue
		}
		if !l.pending.add(c) {
			return // closed
		}
		go l.readHeader(c)
	}
}

func (l *ppListener) trustedPeer(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return false
	}
	ip := ta.AddrPort().Addr().Unmap()
	for _, p := range l.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func (l *ppListener) readHeader(c net.Conn) {
	defer l.pending.remove(c)
	if l.timeout > 0 {
		c.SetReadDeadline(time.Now().Add(l.timeout))
	}
	n, src, seen, err := peekPPHeader(c)
	if err == nil {
		// The header's bytes, peeked, are in the socket: read them off.
		_, err = io.ReadFull(c, make([]byte, n))
	}
	if err != nil {
		select {
		case <-l.done:
			c.Close() // closed by Close: shutting down, not the peer's doing
			return
		default:
		}
		reason := ppClosed
		var ne net.Error
		switch {
		case seen == 0 && !(errors.As(err, &ne) && ne.Timeout()):
			reason = ppEmpty
		case errors.Is(err, errPPMissing):
			reason = ppMissing
		case errors.Is(err, errPPMalformed):
			reason = ppMalformed
		case errors.As(err, &ne) && ne.Timeout():
			reason = ppTimeout
		}
		l.onFail(reason, c.RemoteAddr(), err)
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	if src != nil {
		if lc, ok := c.(interface{ setRemote(net.Addr) }); ok {
			lc.setRemote(src)
		}
	}
	select {
	case l.out <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *ppListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.out:
		return c, nil
	case err := <-l.errc:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and closes the connections whose header is still
// awaited.
func (l *ppListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.pending.closeAll()
	})
	return l.inner.Close()
}

func (l *ppListener) Addr() net.Addr { return l.inner.Addr() }

// ppFailLog counts and logs (at most once a minute, with the count held
// back) connections closed for their PROXY protocol header.
type ppFailLog struct {
	m     *metrics
	log   *slog.Logger
	space units.Spacer
}

func (f *ppFailLog) fail(reason string, peer net.Addr, err error) {
	f.m.ppErrors.WithLabelValues(reason).Inc()
	if reason == ppEmpty {
		return // a TCP health check: nothing to tell
	}
	if ok, held := f.space.Allow(time.Now(), time.Minute); ok {
		f.log.Warn("proxy: connection closed: no valid PROXY protocol header (proxy_protocol)",
			"reason", reason, "peer", peer.String(), "err", err.Error(), "more_since_last", held)
	}
}
