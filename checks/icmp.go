package checks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Defaults and bounds of ICMPSpec.
const (
	// DefaultICMPPayloadSize is icmp.payload_size when unset: 28 bytes,
	// blackbox_exporter's ("Prometheus Blackbox Exporter").
	DefaultICMPPayloadSize = 28
	// MaxICMPPayloadSize is the largest icmp.payload_size: 65507 bytes,
	// what an IPv4 packet carries after its 20-byte header and the 8-byte
	// ICMP header.
	MaxICMPPayloadSize = 65535 - 20 - 8
	// PingGroupRange is the sysctl file that lets groups open unprivileged
	// ICMP ("ping") sockets, for IPv4 and IPv6 alike.
	PingGroupRange = "/proc/sys/net/ipv4/ping_group_range"
)

// ICMPSpec is one ICMP echo request (config key `icmp:`), a ping, as
// blackbox_exporter's icmp prober sends it: to the target's host, one
// echo request, passing on the echo reply.
type ICMPSpec struct {
	// IPProtocol limits the addresses pinged to one family: "ip4" or "ip6"
	// (blackbox_exporter's preferred_ip_protocol). A name without an
	// address of that family fails with cause dns, an IP literal of the
	// other family with cause connect, unless IPProtocolFallback. Default
	// "": the first address the resolver gives (in RFC 6724 order: IPv6
	// first when this host has an IPv6 route to it), or ip4 with
	// DontFragment.
	IPProtocol string `mapstructure:"ip_protocol"`
	// IPProtocolFallback pings the other family when the name has no
	// address of IPProtocol's, as blackbox_exporter's ip_protocol_fallback.
	// Requires IPProtocol. Default false.
	IPProtocolFallback bool `mapstructure:"ip_protocol_fallback"`
	// PayloadSize is the echo request's data, in bytes, from 0 to 65507;
	// its first 8 bytes are a random token of the run, which the reply must
	// echo back. Default 28 (blackbox_exporter's); 0 is the default too.
	PayloadSize int `mapstructure:"payload_size"`
	// TTL is the IPv4 TTL or IPv6 hop limit of the request, 1 to 255.
	// Default 0: the system's (64 on Linux).
	TTL int `mapstructure:"ttl"`
	// DontFragment sets IPv4's DF bit, so a request larger than the path
	// MTU fails rather than being fragmented (finding the MTU with
	// payload_size). IPv4 only: with it a name is pinged at an IPv4
	// address, and ip_protocol: ip6, ip_protocol_fallback or an IPv6
	// target is a config error (IPv6 routers never fragment). Linux only.
	// Default false.
	DontFragment bool `mapstructure:"dont_fragment"`

	compiled bool
	family   string // ip_protocol, or ip4 for dont_fragment
	payload  int
}

// ValidateAndSetDefaults checks every key and sets payload_size. Errors
// start with the key relative to `icmp`.
func (s *ICMPSpec) ValidateAndSetDefaults() error {
	var errs []error
	errs = append(errs, checkIPProtocol(&s.IPProtocol, s.IPProtocolFallback))
	switch {
	case s.PayloadSize < 0 || s.PayloadSize > MaxICMPPayloadSize:
		errs = append(errs, errorf(ErrBadValue, "payload_size: %d: want bytes from 0 to %d (0 = the default, %d)", s.PayloadSize, MaxICMPPayloadSize, DefaultICMPPayloadSize))
	case s.PayloadSize == 0:
		s.payload = DefaultICMPPayloadSize
	default:
		s.payload = s.PayloadSize
	}
	if s.TTL < 0 || s.TTL > 255 {
		errs = append(errs, errorf(ErrBadValue, "ttl: %d: want a hop count from 1 to 255 (0 or unset = the system's)", s.TTL))
	}
	s.family = s.IPProtocol
	if s.DontFragment {
		switch {
		case s.IPProtocol == "ip6":
			errs = append(errs, errorf(ErrConflict, "dont_fragment: IPv4 only (IPv6 has no DF bit: its routers never fragment), but ip_protocol is ip6"))
		case s.IPProtocolFallback:
			errs = append(errs, errorf(ErrConflict, "dont_fragment: IPv4 only, but ip_protocol_fallback would ping over IPv6"))
		case !dontFragmentSupported:
			errs = append(errs, errorf(ErrUnsupported, "dont_fragment: not supported on this operating system (Linux only)"))
		}
		s.family = "ip4"
	}
	err := errors.Join(errs...)
	s.compiled = err == nil
	return err
}

// TargetFits reports whether a target URL suits the check: an icmp:// URL
// names only a host (no port, path, user or password); any other target
// (http, https, tcp, tls, dns) is pinged at its host. With dont_fragment
// an IPv6 literal is an error (ErrConflict, starting "icmp.dont_fragment:
// "). It may be called before or after ValidateAndSetDefaults.
func (s *ICMPSpec) TargetFits(rawURL string) error {
	host, err := icmpHost(rawURL)
	if err != nil {
		return err
	}
	if s.DontFragment {
		if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
			return errorf(ErrConflict, "icmp.dont_fragment: IPv4 only, but the target's host %s is an IPv6 address", host)
		}
	}
	return nil
}

// icmpHost is the host an icmp check pings for a target URL:
// icmp://host (an IPv6 literal in brackets), or the host of any other URL.
func icmpHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", errorf(ErrBadURL, "target %q: no host to ping (want icmp://host)", units.RedactURL(raw))
	}
	if strings.EqualFold(u.Scheme, "icmp") {
		switch {
		case u.User != nil:
			return "", errorf(ErrBadURL, "an icmp:// URL carries no user or password (a ping has none to send): remove the \"user:…@\"")
		case u.Port() != "":
			return "", errorf(ErrBadURL, "an icmp:// URL has no port (ICMP has none): write icmp://%s", u.Hostname())
		case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
			return "", errorf(ErrBadURL, "an icmp:// URL names a host only, no path or query: write icmp://%s", u.Hostname())
		}
	}
	return u.Hostname(), nil
}

// ICMP is a compiled ICMP echo check (ping). Expect keys accepted: ttfb
// (the start of the run to the echo reply) and duration. Safe for
// concurrent Run: every run opens its own socket.
type ICMP struct {
	spec   ICMPSpec
	expect Expect
	opts   Options

	// networks lists the sockets tried, in order, for IPv4 and IPv6;
	// icmpNetworks unless a test changes them.
	networks map[bool][]string
	// sent, when set, is told of every echo request written (tests).
	sent func(network string, id, seq int, data []byte)
}

var _ Check = (*ICMP)(nil)

// icmpNetworks: an unprivileged ping socket first (allowed by
// net.ipv4.ping_group_range, no privilege needed), then a raw socket
// (root or CAP_NET_RAW). Keyed by "is IPv6".
var icmpNetworks = map[bool][]string{
	false: {"udp4", "ip4:icmp"},
	true:  {"udp6", "ip6:ipv6-icmp"},
}

// NewICMP compiles an ICMP echo check. Errors are prefixed "icmp." and
// "expect.".
func NewICMP(spec ICMPSpec, expect Expect, o Options) (*ICMP, error) {
	if err := compileProbe("icmp", &spec, spec.compiled, &expect); err != nil {
		return nil, err
	}
	o.setDefaults()
	return &ICMP{spec: spec, expect: expect, opts: o, networks: icmpNetworks}, nil
}

// icmpMaxOther bounds the ICMP messages one run reads past (other
// processes' echo replies, replies to other runs, neighbour discovery on
// a raw IPv6 socket) while it waits for its own reply.
const icmpMaxOther = 4096

// Run resolves the target's host, sends one echo request and waits for
// its reply: from the address pinged, an echo reply with the request's
// ID (on an unprivileged socket the ID the kernel gave the socket),
// sequence number and data. Phases: dns (the host's resolution),
// connect (opening the socket), ttfb (the start of the run to the
// reply; ttfb − dns − connect is the round-trip time) and total.
func (c *ICMP) Run(ctx context.Context, t Target) Result {
	start := time.Now()
	res := Result{Start: start}
	ctx, cancel := c.opts.runContext(ctx)
	defer cancel()
	fail := func(cause Cause, msg string) Result {
		res.Phases.Total = time.Since(start)
		res.Cause, res.Err = cause, msg
		return res
	}
	host, err := icmpHost(t.URL)
	if err != nil {
		return fail(CauseInternal, err.Error())
	}
	ip, err := c.resolve(ctx, host)
	res.Phases.DNS = time.Since(start)
	if net.ParseIP(host) != nil {
		res.Phases.DNS = 0
	}
	if err != nil {
		var fe *ipFamilyError
		if errors.As(err, &fe) {
			return fail(CauseConnect, "icmp: "+err.Error())
		}
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail(CauseInternal, "icmp: the run was canceled")
		}
		return fail(CauseDNS, "dns: "+err.Error())
	}
	v6 := ip.To4() == nil
	if v6 && c.spec.DontFragment {
		return fail(CauseConnect, fmt.Sprintf("icmp: dont_fragment is IPv4 only, and %s is an IPv6 address", ip))
	}
	res.Proto = "ICMP"
	proto, request, reply := 1, icmp.Type(ipv4.ICMPTypeEcho), icmp.Type(ipv4.ICMPTypeEchoReply)
	if v6 {
		res.Proto = "ICMPv6"
		proto, request, reply = 58, ipv6.ICMPTypeEchoRequest, ipv6.ICMPTypeEchoReply
	}
	setup := time.Now()
	// No socket (no permission, no file descriptor) or one that takes
	// no ttl: the agent's trouble, not the target's.
	conn, network, err := c.open(v6)
	if err != nil {
		return fail(CauseAgent, err.Error())
	}
	defer conn.Close()
	if err := c.configure(conn, v6); err != nil {
		return fail(CauseAgent, fmt.Sprintf("icmp: %s socket: %v", network, err))
	}
	stop := watchPacketCtx(ctx, conn)
	defer stop()

	unpriv := strings.HasPrefix(network, "udp")
	var dst net.Addr = &net.IPAddr{IP: ip}
	if unpriv {
		dst = &net.UDPAddr{IP: ip}
	}
	id, seq, data := icmpIdentity(c.spec.payload)
	wb, err := (&icmp.Message{Type: request, Body: &icmp.Echo{ID: id, Seq: seq, Data: data}}).Marshal(nil)
	if err != nil {
		return fail(CauseInternal, "icmp: "+err.Error())
	}
	sendAt := time.Now()
	res.Phases.Connect = sendAt.Sub(setup)
	if _, err := conn.WriteTo(wb, dst); err != nil {
		return fail(CauseConnect, c.sendError(err, ip, network, len(wb)))
	}
	if unpriv {
		// The kernel replaced the ID with the socket's own (its "port"),
		// and hands the socket only replies that carry it.
		id = -1
		if la, ok := conn.LocalAddr().(*net.UDPAddr); ok && la.Port != 0 {
			id = la.Port
		}
	}
	if c.sent != nil {
		c.sent(network, id, seq, data)
	}

	buf := make([]byte, c.spec.payload+512)
	other := 0
	for other < icmpMaxOther {
		n, peer, err := conn.ReadFrom(buf)
		if err != nil {
			end := time.Now()
			res.Phases.Total = end.Sub(start)
			res.Cause, res.Err = c.readError(ctx, err, ip, network, other, end.Sub(start))
			return res
		}
		m, err := icmp.ParseMessage(proto, buf[:n])
		if err != nil {
			other++
			continue
		}
		switch b := m.Body.(type) {
		case *icmp.Echo:
			if m.Type != reply || !peerIP(peer).Equal(ip) || b.Seq != seq || (id >= 0 && b.ID != id) || !bytes.Equal(b.Data, data) {
				// Our own request looped back to a raw socket, another
				// process's or run's reply, or a reply that does not
				// echo our data.
				other++
				continue
			}
			end := time.Now()
			res.Phases.TTFB = end.Sub(start)
			res.Phases.Total = end.Sub(start)
			var v verdict
			obs := observation{ttfb: res.Phases.TTFB, total: res.Phases.Total, now: start}
			c.expect.evalCommon(&obs, &v)
			v.judge(&res)
			return res
		case *icmp.DstUnreach, *icmp.TimeExceeded, *icmp.PacketTooBig, *icmp.ParamProb:
			if !quotesEcho(icmpErrorData(m.Body), v6, ip, request, id, seq) {
				other++
				continue
			}
			res.Phases.Total = time.Since(start)
			res.Cause = CauseConnect
			res.Err = fmt.Sprintf("icmp: %s from %s for the echo request to %s", icmpErrorText(m, v6), peerIP(peer), ip)
			return res
		default:
			other++
		}
	}
	res.Phases.Total = time.Since(start)
	res.Cause = CauseTimeout
	res.Err = fmt.Sprintf("timeout: no echo reply from %s among %d other ICMP messages (%s socket)", ip, other, network)
	return res
}

// resolve picks the address pinged: an IP literal as written, else the
// first address of the name in the family asked (with its fallback), or
// the resolver's first.
func (c *ICMP) resolve(ctx context.Context, host string) (net.IP, error) {
	fam := c.spec.family
	if ip := net.ParseIP(host); ip != nil {
		if fam != "" && (ip.To4() != nil) != (fam == "ip4") && !c.spec.IPProtocolFallback {
			return nil, &ipFamilyError{host: host, family: fam}
		}
		return ip, nil
	}
	if isInvalidHost(host) {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	pick := func(want string) net.IP {
		for _, a := range addrs {
			if want == "" || (a.IP.To4() != nil) == (want == "ip4") {
				return a.IP
			}
		}
		return nil
	}
	if ip := pick(fam); ip != nil {
		return ip, nil
	}
	if fam != "" && c.spec.IPProtocolFallback {
		if ip := pick(map[string]string{"ip4": "ip6", "ip6": "ip4"}[fam]); ip != nil {
			return ip, nil
		}
	}
	return nil, &net.DNSError{Err: fmt.Sprintf("no IPv%s address (ip_protocol: %s)", fam[2:], fam), Name: host, IsNotFound: true}
}

// icmpSocketError: no ICMP socket could be opened. Each attempt is
// "network: why".
type icmpSocketError struct {
	attempts []string
	denied   bool // every attempt failed for want of permission
}

func (e *icmpSocketError) Error() string {
	if e.denied {
		return "icmp: no permission to open an ICMP socket: " + strings.Join(e.attempts, "; ") +
			": run as root, grant CAP_NET_RAW, or widen net.ipv4.ping_group_range"
	}
	return "icmp: cannot open an ICMP socket: " + strings.Join(e.attempts, "; ")
}

// open opens the first socket of c.networks that the system allows.
func (c *ICMP) open(v6 bool) (net.PacketConn, string, error) {
	e := &icmpSocketError{denied: true}
	for _, network := range c.networks[v6] {
		conn, err := listenICMP(network)
		if err == nil {
			return conn, network, nil
		}
		denied := errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
		e.denied = e.denied && denied
		e.attempts = append(e.attempts, socketAttempt(network, err, denied))
	}
	return nil, "", e
}

// socketAttempt says which socket failed and why: an unprivileged one
// names the group range, a raw one the capability.
func socketAttempt(network string, err error, denied bool) string {
	var errno syscall.Errno
	why := err.Error()
	if errors.As(err, &errno) {
		why = errno.Error()
	}
	if strings.HasPrefix(network, "udp") {
		s := fmt.Sprintf("unprivileged ping socket (%s): %s", network, why)
		if denied {
			r := "unreadable"
			if b, err := os.ReadFile(PingGroupRange); err == nil {
				r = strings.Join(strings.Fields(string(b)), " ")
			}
			s += fmt.Sprintf(" (group %d is not in net.ipv4.ping_group_range %q)", os.Getgid(), r)
		}
		return s
	}
	s := fmt.Sprintf("raw socket (%s): %s", network, why)
	if denied {
		s += " (needs root or CAP_NET_RAW)"
	}
	return s
}

// configure sets ttl and dont_fragment on a socket.
func (c *ICMP) configure(conn net.PacketConn, v6 bool) error {
	if c.spec.TTL > 0 {
		var err error
		if v6 {
			err = ipv6.NewPacketConn(conn).SetHopLimit(c.spec.TTL)
		} else {
			err = ipv4.NewPacketConn(conn).SetTTL(c.spec.TTL)
		}
		if err != nil {
			return fmt.Errorf("ttl %d: %w", c.spec.TTL, err)
		}
	}
	if c.spec.DontFragment && !v6 {
		if err := setDontFragment(conn); err != nil {
			return fmt.Errorf("dont_fragment: %w", err)
		}
	}
	return nil
}

// sendError is the message of a failed send, cause connect as a failed
// dial's: a request over the path MTU with dont_fragment (EMSGSIZE), no
// route (ENETUNREACH), ….
func (c *ICMP) sendError(err error, ip net.IP, network string, n int) string {
	if errors.Is(err, syscall.EMSGSIZE) {
		return fmt.Sprintf("icmp: the echo request to %s (%d bytes of ICMP) does not fit the path MTU with dont_fragment: %v", ip, n, errnoText(err))
	}
	return fmt.Sprintf("icmp: sending the echo request to %s (%s socket): %v", ip, network, errnoText(err))
}

// readError is the cause and message of a wait for the reply that ended
// without one.
func (c *ICMP) readError(ctx context.Context, err error, ip net.IP, network string, other int, elapsed time.Duration) (Cause, string) {
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return CauseInternal, "icmp: the run was canceled"
	}
	if timedOut || ctx.Err() != nil {
		within := elapsed.Round(time.Millisecond)
		if t := c.opts.Timeout; t > 0 && elapsed >= t-t/20 {
			within = t
		}
		msg := fmt.Sprintf("timeout: no echo reply from %s within %s", ip, fmtDur(within))
		if other > 0 {
			msg += fmt.Sprintf(" (%d other ICMP messages read past: other pings' replies, or a reply that did not echo the request's ID, sequence or data)", other)
		}
		return CauseTimeout, msg
	}
	// An unprivileged socket reports an ICMP error for the request as a
	// socket error (EHOSTUNREACH, ENETUNREACH, …).
	return CauseConnect, fmt.Sprintf("icmp: echo request to %s (%s socket): %v", ip, network, errnoText(err))
}

// errnoText is an error's errno text when it has one ("message too
// long"), else the error.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// watchPacketCtx makes a blocked read on conn return when ctx ends.
func watchPacketCtx(ctx context.Context, conn net.PacketConn) (stop func() bool) {
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
	}
	return context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
}

// icmpIdentity draws a run's echo ID, sequence number and data: the data
// starts with up to 8 random bytes (the run's token) and goes on with
// "vigil ping " repeated.
func icmpIdentity(size int) (id, seq int, data []byte) {
	var r [12]byte
	rand.Read(r[:])
	id = int(binary.BigEndian.Uint16(r[0:2]))
	seq = int(binary.BigEndian.Uint16(r[2:4]))
	data = make([]byte, size)
	n := copy(data, r[4:])
	const fill = "vigil ping "
	for i := n; i < size; i++ {
		data[i] = fill[(i-n)%len(fill)]
	}
	return id, seq, data
}

// peerIP is the address of a reply's sender.
func peerIP(a net.Addr) net.IP {
	switch a := a.(type) {
	case *net.IPAddr:
		return a.IP
	case *net.UDPAddr:
		return a.IP
	}
	return nil
}

// icmpErrorData is the quoted datagram of an ICMP error message.
func icmpErrorData(b icmp.MessageBody) []byte {
	switch b := b.(type) {
	case *icmp.DstUnreach:
		return b.Data
	case *icmp.TimeExceeded:
		return b.Data
	case *icmp.PacketTooBig:
		return b.Data
	case *icmp.ParamProb:
		return b.Data
	}
	return nil
}

// quotesEcho reports whether an ICMP error's quoted datagram is the run's
// echo request: to ip, with its type, ID (any when id < 0) and sequence.
func quotesEcho(q []byte, v6 bool, ip net.IP, request icmp.Type, id, seq int) bool {
	var dst net.IP
	var rest []byte
	if v6 {
		// The fixed header; an echo request carries no extension headers.
		if len(q) < 40+8 || q[0]>>4 != 6 || q[6] != 58 {
			return false
		}
		dst, rest = net.IP(q[24:40]), q[40:]
	} else {
		if len(q) < 20 || q[0]>>4 != 4 {
			return false
		}
		hl := int(q[0]&0x0f) * 4
		if hl < 20 || len(q) < hl+8 || q[9] != 1 {
			return false
		}
		dst, rest = net.IP(q[16:20]), q[hl:]
	}
	typ := 0
	switch t := request.(type) {
	case ipv4.ICMPType:
		typ = int(t)
	case ipv6.ICMPType:
		typ = int(t)
	}
	return dst.Equal(ip) && int(rest[0]) == typ &&
		(id < 0 || int(binary.BigEndian.Uint16(rest[4:6])) == id) &&
		int(binary.BigEndian.Uint16(rest[6:8])) == seq
}

// icmpErrorText names an ICMP error: "destination unreachable (host
// unreachable)", "time exceeded (ttl exceeded in transit)".
func icmpErrorText(m *icmp.Message, v6 bool) string {
	name := fmt.Sprint(m.Type)
	name = strings.ToLower(name)
	var codes map[int]string
	switch m.Type {
	case ipv4.ICMPTypeDestinationUnreachable:
		codes = map[int]string{0: "network unreachable", 1: "host unreachable", 2: "protocol unreachable", 3: "port unreachable",
			4: "fragmentation needed and DF set", 9: "network administratively prohibited", 10: "host administratively prohibited",
			13: "communication administratively prohibited"}
	case ipv6.ICMPTypeDestinationUnreachable:
		codes = map[int]string{0: "no route to destination", 1: "communication administratively prohibited", 3: "address unreachable", 4: "port unreachable"}
	case ipv4.ICMPTypeTimeExceeded, ipv6.ICMPTypeTimeExceeded:
		codes = map[int]string{0: "ttl exceeded in transit", 1: "fragment reassembly time exceeded"}
	}
	if s, ok := codes[m.Code]; ok {
		return fmt.Sprintf("%s (%s)", name, s)
	}
	if pt, ok := m.Body.(*icmp.PacketTooBig); ok {
		return fmt.Sprintf("%s (MTU %d)", name, pt.MTU)
	}
	return fmt.Sprintf("%s (code %d)", name, m.Code)
}
