package checks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// Defaults of DNSSpec.
const (
	// DefaultDNSPort is the port of dns.server when it names none.
	DefaultDNSPort = "53"
	// DefaultDoTPort is the port of dns.server (or of a dns:// target)
	// that names none when dns.transport is tcp-tls: 853, DNS over TLS's
	// (RFC 7858 §3.1).
	DefaultDoTPort = "853"
	// DefaultDNSQueryType is dns.query_type when unset. (blackbox_exporter
	// asks ANY, which RFC 8482 lets servers answer with one record or
	// refuse.)
	DefaultDNSQueryType = "A"
	// DNSUDPSize is the EDNS0 UDP payload size every query advertises:
	// 1232 bytes, DNS Flag Day 2020's value, small enough not to be
	// fragmented. A larger answer comes back truncated and is asked again
	// over TCP.
	DNSUDPSize = 1232
	// ResolvConf is where the system resolver is read from when dns.server
	// is unset and the target is no dns:// URL.
	ResolvConf = "/etc/resolv.conf"
)

// Values of dns.transport, miekg/dns's names of the networks
// (dns.Client.Net).
const (
	DNSTransportUDP = "udp"
	DNSTransportTCP = "tcp"
	// DNSTransportTLS is DNS over TLS (RFC 7858): TCP framing over a TLS
	// connection, by default to port 853, verified with dns.tls.
	DNSTransportTLS = "tcp-tls"
)

// DNSSpec is one DNS query (config key `dns:`), as blackbox_exporter's dns
// prober asks it.
type DNSSpec struct {
	// QueryName is the name asked, e.g. "www.example.com" (a trailing dot
	// is optional). Default: the target's host, for a target that is no
	// dns:// URL (an http, https, tcp or tls origin: "does its name
	// resolve?"); with a dns:// target (the server) it is required.
	QueryName string `mapstructure:"query_name"`
	// QueryType is the record type asked: A, AAAA, CNAME, MX, TXT, NS,
	// SOA, SRV, PTR, CAA or any other type name miekg/dns knows, in any
	// case. Default "A".
	QueryType string `mapstructure:"query_type"`
	// QueryClass is the class asked: IN, CH, HS, NONE or ANY. Default
	// "IN".
	QueryClass string `mapstructure:"query_class"`
	// Server is the DNS server asked, "host:port" or "host" (port 53, or
	// 853 with transport tcp-tls); an IPv6 literal in brackets with a port
	// ("[::1]:53"). Default: the target, when its URL is dns://host[:port];
	// else the first nameserver of /etc/resolv.conf, read on every run
	// (not with tcp-tls, which needs the server named).
	Server string `mapstructure:"server"`
	// Transport is "udp", "tcp" or "tcp-tls" (DNS over TLS, RFC 7858:
	// TCP framing inside TLS, port 853 by default, the server verified
	// with TLS's settings). Over udp an answer with the TC (truncated)
	// flag is asked again over tcp, as resolvers do (RFC 7766 §5).
	// Default "udp".
	Transport string `mapstructure:"transport"`
	// TLS is the TLS client of transport tcp-tls, with the keys of
	// http.tls (insecure_skip_verify, ca_file, server_name, min_version,
	// cert_file, key_file); `tls: true` or no key is TLS with their
	// defaults: the chain verified against the system pool and the name
	// against the server's host (an IP address against the certificate's
	// IP addresses), TLS 1.2 or later. Only with tcp-tls. Default: nil.
	TLS *TLSOptions `mapstructure:"tls"`
	// RecursionDesired sets the RD flag. Default true (nil): ask a
	// resolver; set false to ask an authoritative server about its own
	// zone only.
	RecursionDesired *bool `mapstructure:"recursion_desired"`
	// IPProtocol limits the server's addresses dialled to one family
	// ("ip4" or "ip6"), as for http checks; with IPProtocolFallback the
	// other family when the server's name has none. Default: both.
	IPProtocol         string `mapstructure:"ip_protocol"`
	IPProtocolFallback bool   `mapstructure:"ip_protocol_fallback"`

	compiled bool
	qtype    uint16
	qclass   uint16
	server   string // Server with its port, "" for none
	rd       bool
	tls      *TLSOptions // the compiled TLS client of tcp-tls; nil otherwise
}

// Warnings lists the settings of dns.tls that weaken it
// (insecure_skip_verify, a min_version below 1.2), each as
// "key: value: why", keys relative to `dns`.
func (s *DNSSpec) Warnings() []string {
	return s.TLS.warningsAt("tls.")
}

// ValidateAndSetDefaults parses query_type, query_class, server and
// transport. Errors start with the key relative to `dns`.
func (s *DNSSpec) ValidateAndSetDefaults() error {
	var errs []error
	if s.QueryName != "" {
		if _, ok := dns.IsDomainName(s.QueryName); !ok || strings.ContainsAny(s.QueryName, " \t\r\n") {
			errs = append(errs, errorf(ErrBadValue, "query_name: %q is not a domain name", s.QueryName))
		}
	}
	qt := strings.ToUpper(strings.TrimSpace(s.QueryType))
	if qt == "" {
		qt = DefaultDNSQueryType
	}
	if t, ok := dns.StringToType[qt]; ok && (t == dns.TypeAXFR || t == dns.TypeIXFR) {
		errs = append(errs, errorf(ErrBadValue, "query_type: %q: zone transfers (AXFR, IXFR) are not supported: ask for a record type (SOA for the zone's serial)", s.QueryType))
	} else if ok && qt != "NONE" && qt != "OPT" {
		s.QueryType, s.qtype = qt, t
	} else {
		errs = append(errs, errorf(ErrBadValue, "query_type: %q: want a record type (A, AAAA, CNAME, MX, TXT, NS, SOA, SRV, PTR, CAA, …)", s.QueryType))
	}
	qc := strings.ToUpper(strings.TrimSpace(s.QueryClass))
	if qc == "" {
		qc = "IN"
	}
	if c, ok := dns.StringToClass[qc]; ok {
		s.QueryClass, s.qclass = qc, c
	} else {
		errs = append(errs, errorf(ErrBadValue, "query_class: %q: want IN, CH, HS, NONE or ANY", s.QueryClass))
	}
	switch v := strings.ToLower(strings.TrimSpace(s.Transport)); v {
	case "", DNSTransportUDP:
		s.Transport = DNSTransportUDP
	case DNSTransportTCP, DNSTransportTLS:
		s.Transport = v
	default:
		hint := ""
		switch v {
		case "tls", "dot", "tcp+tls", "tcp_tls":
			hint = " (write \"tcp-tls\" for DNS over TLS)"
		case "https", "doh":
			hint = " (DNS over HTTPS is not supported)"
		}
		errs = append(errs, errorf(ErrBadValue, "transport: %q: want \"udp\", \"tcp\" or \"tcp-tls\"%s", s.Transport, hint))
	}
	s.server = ""
	if strings.TrimSpace(s.Server) != "" {
		hp, err := dnsServerAddr(strings.TrimSpace(s.Server), s.defaultPort())
		if err != nil {
			errs = append(errs, fmt.Errorf("server: %w", err))
		}
		s.server = hp
	}
	s.tls = nil
	switch {
	case s.Transport == DNSTransportTLS:
		s.tls = s.TLS
		if s.tls == nil {
			s.tls = &TLSOptions{}
		}
		if err := s.tls.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix("tls", err))
		}
	case s.TLS != nil:
		errs = append(errs, errorf(ErrConflict, "tls: set transport: tcp-tls for DNS over TLS (over %s the query is plain text)", s.Transport))
	}
	s.rd = s.RecursionDesired == nil || *s.RecursionDesired
	errs = append(errs, checkIPProtocol(&s.IPProtocol, s.IPProtocolFallback))
	err := errors.Join(errs...)
	s.compiled = err == nil
	return err
}

// defaultPort is the server's port when dns.server or a dns:// target
// names none: 853 for tcp-tls, else 53.
func (s *DNSSpec) defaultPort() string {
	if strings.EqualFold(strings.TrimSpace(s.Transport), DNSTransportTLS) {
		return DefaultDoTPort
	}
	return DefaultDNSPort
}

// dnsServerAddr is a dns.server value with its port: "host:port", "host"
// (port defPort), "[v6]:port" or a bare IPv6 literal.
func dnsServerAddr(v, defPort string) (string, error) {
	if strings.Contains(v, "://") {
		return "", errorf(ErrBadValue, "%q: want host:port (no scheme)", units.RedactURL(v))
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		if ip := net.ParseIP(strings.Trim(v, "[]")); ip != nil {
			return net.JoinHostPort(ip.String(), defPort), nil
		}
		if strings.ContainsAny(v, ":[]/ ") {
			return "", errorf(ErrBadValue, "%q: want host:port or host", v)
		}
		host, port = v, defPort
	}
	if host == "" {
		return "", errorf(ErrBadValue, "%q: no host", v)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", errorf(ErrBadValue, "%q: port %q: want a number from 1 to 65535", v, port)
	}
	return net.JoinHostPort(host, port), nil
}

// TargetFits reports whether a target URL suits the check: a dns:// URL
// is the server asked, so the check then needs query_name, and it carries
// no user or password (ErrBadURL: a DNS query has none to send); any other
// target names the question by its host, so one whose host is an IP
// address needs query_name too, and with transport tcp-tls it needs
// dns.server (ErrConflict: the system resolver is no DNS over TLS server).
// A query_name error (ErrBadValue) starts with the key, "dns.query_name:
// ". It may be called before or after ValidateAndSetDefaults.
func (s *DNSSpec) TargetFits(rawURL string) error {
	if strings.HasPrefix(strings.ToLower(rawURL), "dns://") {
		if u, err := url.Parse(rawURL); err == nil && u.User != nil {
			return errorf(ErrBadURL, "a dns:// URL carries no user or password (a DNS query has none to send): remove the \"user:…@\"")
		}
		if s.QueryName == "" {
			return errorf(ErrBadValue, "dns.query_name: required when the target is a dns:// server (a dns check of an http, https, tcp or tls target asks for that target's host)")
		}
		return nil
	}
	if s.QueryName == "" {
		if ip := targetIP(rawURL); ip != "" {
			return ipTargetError(ip)
		}
	}
	if strings.TrimSpace(s.Server) == "" && strings.EqualFold(strings.TrimSpace(s.Transport), DNSTransportTLS) {
		return errNoDoTServer
	}
	return nil
}

// errNoDoTServer: transport tcp-tls without a server to ask.
var errNoDoTServer = errorf(ErrConflict, "dns.server: required with transport tcp-tls when the target is no dns:// server (the system resolver of %s is asked in plain DNS, not over TLS)", ResolvConf)

// targetIP is the host of a target URL (or host:port) when it is an IP
// address, "" otherwise.
func targetIP(raw string) string {
	host := ""
	if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	} else if h, _, err := net.SplitHostPort(raw); err == nil {
		host = h
	}
	if net.ParseIP(host) != nil {
		return host
	}
	return ""
}

// ipTargetError: the target's host, the default question, is an IP
// address: there is no name to resolve.
func ipTargetError(ip string) error {
	return errorf(ErrBadValue, "dns.query_name: required: the target's host %s is an IP address, not a name to resolve (set dns.query_name to the name to ask for)", ip)
}

// DNS is a compiled DNS check: one query to one server, its rcode and the
// records of its answer, authority and additional sections asserted on.
// Expect keys accepted: rcode, answer, authority, additional, ttfb (the
// answer's arrival) and duration. Safe for concurrent Run.
type DNS struct {
	spec   DNSSpec
	expect Expect
	opts   Options
	d      *dialer
	// resolvConf is the file the system resolver is read from; ResolvConf
	// unless a test changes it.
	resolvConf string
}

var _ Check = (*DNS)(nil)

// NewDNS compiles a DNS check. Errors are prefixed "dns." and "expect.".
func NewDNS(spec DNSSpec, expect Expect, o Options) (*DNS, error) {
	if err := compileProbe("dns", &spec, spec.compiled, &expect); err != nil {
		return nil, err
	}
	o.setDefaults()
	return &DNS{spec: spec, expect: expect, opts: o, d: newDialer(spec.IPProtocol, spec.IPProtocolFallback), resolvConf: ResolvConf}, nil
}

// serverAndName picks the server asked and the name asked for a target
// (see DNSSpec.Server and QueryName).
func (c *DNS) serverAndName(t Target) (server, name string, err error) {
	server, name = c.spec.server, c.spec.QueryName
	isDNS := strings.HasPrefix(strings.ToLower(t.URL), "dns://")
	switch {
	case isDNS && server == "":
		server, err = hostPort(t.URL, c.spec.defaultPort())
		if err != nil {
			return "", "", err
		}
	case isDNS:
		// dns.server wins; the target still names the pair.
	case name == "" && t.URL != "":
		u, perr := url.Parse(t.URL)
		if perr != nil || u.Hostname() == "" {
			h, _, serr := net.SplitHostPort(t.URL)
			if serr != nil {
				return "", "", errorf(ErrBadURL, "target %q: no host to ask for (set dns.query_name)", units.RedactURL(t.URL))
			}
			name = h
		} else {
			name = u.Hostname()
		}
		if net.ParseIP(name) != nil {
			return "", "", ipTargetError(name)
		}
	}
	if name == "" {
		return "", "", errorf(ErrBadValue, "dns.query_name: required when the target is a dns:// server")
	}
	if server == "" && c.spec.Transport == DNSTransportTLS {
		return "", "", errNoDoTServer
	}
	if server == "" {
		cc, rerr := dns.ClientConfigFromFile(c.resolvConf)
		if rerr != nil {
			return "", name, &resolvConfError{fmt.Sprintf("no dns.server set and the system resolver could not be read: %v", rerr)}
		}
		if len(cc.Servers) == 0 {
			return "", name, &resolvConfError{fmt.Sprintf("no dns.server set and %s lists no nameserver", c.resolvConf)}
		}
		port := cc.Port
		if port == "" {
			port = DefaultDNSPort
		}
		server = net.JoinHostPort(cc.Servers[0], port)
	}
	return server, name, nil
}

// resolvConfError: no server to ask (the system resolver's file is missing
// or lists none); the run could not ask anything, cause dns.
type resolvConfError struct{ msg string }

func (e *resolvConfError) Error() string { return e.msg }

// Run sends the query to the server (see DNSSpec.Server) and evaluates
// expect.rcode, the section assertions, ttfb and duration.
func (c *DNS) Run(ctx context.Context, t Target) Result {
	start := time.Now()
	res := Result{Start: start}
	ctx, cancel := c.opts.runContext(ctx)
	defer cancel()
	server, name, err := c.serverAndName(t)
	if err != nil {
		res.Phases.Total = time.Since(start)
		var rc *resolvConfError
		if errors.As(err, &rc) {
			res.Cause, res.Err = CauseDNS, "dns: "+err.Error()
			return res
		}
		res.Cause, res.Err = CauseInternal, err.Error()
		return res
	}
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), c.spec.qtype)
	q.Question[0].Qclass = c.spec.qclass
	q.RecursionDesired = c.spec.rd
	q.SetEdns0(DNSUDPSize, false)

	tr := &runTrace{start: start, timeout: c.opts.Timeout}
	tctx := tr.withTrace(ctx)
	transport := c.spec.Transport
	var v verdict
	var reply *dns.Msg
	if transport == DNSTransportTLS {
		conn, ok := c.dialTLS(tctx, tr, server, &res, &v)
		if !ok {
			return res
		}
		reply, err = c.exchangeOn(tctx, tr, conn, transport, q)
		conn.Close()
	} else {
		reply, err = c.exchange(tctx, tr, transport, server, q)
	}
	retried := false
	if err == nil && reply.Truncated && transport == DNSTransportUDP {
		// RFC 7766 §5: a truncated answer over UDP is asked again over
		// TCP. The TCP hop's dns and connect add to the UDP one's; ttfb
		// stays the first answer's arrival (the UDP one).
		first := tr.firstByteAt()
		tr.newHop()
		transport, retried = DNSTransportTCP, true
		reply, err = c.exchange(tctx, tr, transport, server, q)
		tr.setFirstByte(first)
	}
	end := time.Now()
	res.Phases = tr.phases(end)
	res.Phases.Transfer = 0
	res.Proto = "DNS/" + strings.ToUpper(transport)
	if transport == DNSTransportTLS {
		res.Proto = "DNS/TLS"
	}
	if err != nil {
		res.Cause, res.Err = c.classify(err, tr, end.Sub(start), server, transport)
		if retried {
			res.Cause, res.Err = retryFailed(res.Cause, res.Err)
		}
		res.Assertions = v.list
		return res
	}

	c.expect.evalRcode(reply.Rcode, name, c.spec.QueryType, &v)
	c.expect.evalSections(reply, &v)
	obs := observation{ttfb: res.Phases.TTFB, total: res.Phases.Total, now: start}
	c.expect.evalCommon(&obs, &v)
	v.judge(&res)
	return res
}

// firstByteAt is the current hop's first byte (zero if none yet).
func (t *runTrace) firstByteAt() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.firstByte
}

// setFirstByte sets the current hop's first byte.
func (t *runTrace) setFirstByte(at time.Time) {
	t.mu.Lock()
	t.firstByte = at
	t.mu.Unlock()
}

// retryFailed is the cause and message of a run whose UDP answer was
// truncated and whose TCP retry failed. The server did answer, so a
// retry refused (nothing listens on TCP, which RFC 7766 requires of every
// DNS server) is cause protocol, not connect_refused; any other failure
// keeps its cause. The message says which answer came and which did not.
func retryFailed(cause Cause, msg string) (Cause, string) {
	prefix := ""
	for _, p := range []string{"protocol: ", "timeout: ", "connect: ", "dns: "} {
		if strings.HasPrefix(msg, p) {
			prefix, msg = p, msg[len(p):]
			break
		}
	}
	if cause == CauseConnectRefused {
		cause, prefix = CauseProtocol, "protocol: "
		msg += " (a DNS server must answer over tcp too)"
	}
	return cause, prefix + "the answer over udp was truncated; the retry over tcp (RFC 7766): " + msg
}

// dnsMaxOtherIDs bounds the replies with another ID one UDP exchange
// reads past while it waits for the answer to its own query.
const dnsMaxOtherIDs = 32

// exchange sends q over a fresh connection to server and reads the
// answer to it, marking its arrival as the hop's first byte. The answer
// must answer q: its ID, QR set, opcode QUERY and q's question (see
// answersQuery). Over UDP a DNS message with another ID is read past, as
// resolvers do (an answer to an earlier query), and named if the wait
// then times out; over TCP it is an error. A UDP reply that is no DNS
// message at all fails at once.
// An answer that does not parse is an error, except a truncated UDP one
// (TC and QR set, q's ID): a message cut short may end mid-record, and
// its header is enough to ask again over TCP; it comes back with only
// its header.
func (c *DNS) exchange(ctx context.Context, tr *runTrace, transport, server string, q *dns.Msg) (*dns.Msg, error) {
	conn, err := c.d.DialContext(ctx, transport, server)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return c.exchangeOn(ctx, tr, conn, transport, q)
}

// dialTLS connects to server and runs dns.tls's handshake over the
// connection, as a tcp check with tcp.tls does (clientHandshake, then
// verifyPeer unless insecure_skip_verify): nothing is asked of a server
// that was not verified. It returns the TLS connection, or false with
// res's cause, error, phases and assertions set: the dial's cause, tls
// for a handshake that failed, cert for a chain or name that does not
// verify ("cert chain" and "cert hostname" assertions in v), with the
// messages of a tls check. The certificate's expiries go to res either
// way.
func (c *DNS) dialTLS(ctx context.Context, tr *runTrace, server string, res *Result, v *verdict) (net.Conn, bool) {
	fail := func(cause Cause, msg string) (net.Conn, bool) {
		end := time.Now()
		res.Phases = tr.phases(end)
		res.Phases.Transfer = 0
		res.Proto = "DNS/TLS"
		res.Cause, res.Err = cause, msg
		res.Assertions = v.list
		return nil, false
	}
	raw, err := c.d.DialContext(ctx, "tcp", server)
	if err != nil {
		return fail(classify(err, tr, time.Since(res.Start)))
	}
	o := c.spec.tls
	name := o.ServerName
	if name == "" {
		name, _, _ = net.SplitHostPort(server)
	}
	stop := watchCtx(ctx, raw)
	tc, err := clientHandshake(ctx, raw, tr, name, o.minVersion, o.clientCert)
	stop()
	if err != nil {
		raw.Close()
		return fail(classify(err, tr, time.Since(res.Start)))
	}
	state := tc.ConnectionState()
	if len(state.PeerCertificates) == 0 {
		tc.Close()
		return fail(CauseTLS, "tls: the server sent no certificate")
	}
	seen := verifyPeer(state, name, o.roots, o.InsecureSkipVerify, res.Start, v)
	seen.expiries(res)
	if v.cause != "" {
		tc.Close()
		return fail(v.cause, v.err)
	}
	return tc, true
}

// exchangeOn is exchange over a connection already made (for tcp-tls,
// the TLS connection after its handshake).
func (c *DNS) exchangeOn(ctx context.Context, tr *runTrace, conn net.Conn, transport string, q *dns.Msg) (*dns.Msg, error) {
	stop := watchCtx(ctx, conn)
	defer stop()
	// A 64 KiB buffer: a server that ignores the EDNS0 size still gets
	// its whole datagram read.
	co := &dns.Conn{Conn: conn, UDPSize: dns.MaxMsgSize}
	if err := co.WriteMsg(q); err != nil {
		return nil, err
	}
	udp := transport == DNSTransportUDP
	otherIDs := 0
	for {
		p, err := co.ReadMsgHeader(nil)
		if err != nil {
			if otherIDs > 0 {
				return nil, &dnsOtherIDError{n: otherIDs, err: err}
			}
			return nil, err
		}
		if binary.BigEndian.Uint16(p) != q.Id {
			if !udp || otherIDs == dnsMaxOtherIDs {
				return nil, dns.ErrId
			}
			if err := new(dns.Msg).Unpack(p); err != nil {
				// No DNS message at all: no answer to wait past.
				tr.mark(&tr.firstByte, true)
				return nil, &dnsMalformedError{err}
			}
			otherIDs++
			continue
		}
		tr.mark(&tr.firstByte, true)
		qr, opcode, tc := p[2]&0x80 != 0, int(p[2]>>3)&0xF, p[2]&0x02 != 0
		m := new(dns.Msg)
		if err := m.Unpack(p); err != nil {
			if udp && qr && tc && opcode == dns.OpcodeQuery {
				h := new(dns.Msg)
				h.Id, h.Response, h.Opcode, h.Truncated = q.Id, true, opcode, true
				h.Rcode = int(p[3] & 0xF)
				return h, nil
			}
			return nil, &dnsMalformedError{err}
		}
		if err := answersQuery(m, q); err != nil {
			return nil, err
		}
		return m, nil
	}
}

// answersQuery checks that m, with q's ID, is an answer to q: QR set,
// opcode QUERY, and q's question (the name in any case, RFC 4343; the
// type; the class). An answer without a question section passes only
// with an error rcode (a server that could not parse a query may leave
// it out, RFC 1035 §4.1.1 makes no demand): expect.rcode judges it.
func answersQuery(m, q *dns.Msg) error {
	if !m.Response {
		return &dnsNotAnswerError{"the reply is no DNS answer (the QR bit is clear, as in a query: the query echoed back by a service that is no DNS server?)"}
	}
	if m.Opcode != dns.OpcodeQuery {
		return &dnsNotAnswerError{fmt.Sprintf("the answer has opcode %s, not QUERY", opcodeName(m.Opcode))}
	}
	asked := q.Question[0]
	if len(m.Question) == 0 {
		if m.Rcode == dns.RcodeSuccess || m.Rcode == dns.RcodeNameError {
			return &dnsNotAnswerError{fmt.Sprintf("the %s answer has no question section (asked %s)", rcodeName(m.Rcode), questionText(asked))}
		}
		return nil
	}
	got := m.Question[0]
	if len(m.Question) != 1 || !strings.EqualFold(got.Name, asked.Name) || got.Qtype != asked.Qtype || got.Qclass != asked.Qclass {
		more := ""
		if len(m.Question) > 1 {
			more = fmt.Sprintf(" and %d more", len(m.Question)-1)
		}
		return &dnsNotAnswerError{fmt.Sprintf("answered another query (question %s%s, asked %s)", questionText(got), more, questionText(asked))}
	}
	return nil
}

// questionText is a question as dig writes it: "www.example.com. IN A".
func questionText(q dns.Question) string {
	name := q.Name
	if len(name) > 100 {
		name = name[:100] + "…"
	}
	return strconv.Quote(name + " " + className(q.Qclass) + " " + typeName(q.Qtype))
}

func className(c uint16) string {
	if s, ok := dns.ClassToString[c]; ok {
		return s
	}
	return "CLASS" + strconv.Itoa(int(c))
}

func typeName(t uint16) string {
	if s, ok := dns.TypeToString[t]; ok {
		return s
	}
	return "TYPE" + strconv.Itoa(int(t))
}

func opcodeName(o int) string {
	if s, ok := dns.OpcodeToString[o]; ok {
		return s
	}
	return strconv.Itoa(o)
}

// dnsMalformedError: an answer arrived and does not parse as DNS.
type dnsMalformedError struct{ err error }

func (e *dnsMalformedError) Error() string { return "answer does not parse: " + e.err.Error() }

// dnsNotAnswerError: a reply with the query's ID that is no answer to it.
type dnsNotAnswerError struct{ msg string }

func (e *dnsNotAnswerError) Error() string { return e.msg }

// dnsOtherIDError: a UDP exchange ended (err: the deadline, mostly)
// after n replies with another ID than the query's, and none with its.
type dnsOtherIDError struct {
	n   int
	err error
}

func (e *dnsOtherIDError) Error() string { return e.err.Error() }
func (e *dnsOtherIDError) Unwrap() error { return e.err }

// note is the timeout message's addition: what came instead.
func (e *dnsOtherIDError) note() string {
	replies := "1 reply"
	if e.n > 1 {
		replies = fmt.Sprintf("%d replies", e.n)
	}
	return fmt.Sprintf(" (%s with another ID came: answers to other queries, or a server that does not copy the query's ID)", replies)
}

// classify maps an exchange error to a cause: the dial's (dns for the
// server's name, connect_refused — over UDP an ICMP port unreachable —,
// connect_timeout), timeout when no answer came, reset when a TCP server
// closed without one, protocol for an answer that does not parse or
// answers another query.
func (c *DNS) classify(err error, tr *runTrace, elapsed time.Duration, server, transport string) (Cause, string) {
	var me *dnsMalformedError
	var na *dnsNotAnswerError
	switch {
	case errors.As(err, &me):
		return CauseProtocol, fmt.Sprintf("protocol: dns server %s over %s: %s", server, transport, me.Error())
	case errors.As(err, &na):
		return CauseProtocol, fmt.Sprintf("protocol: dns server %s over %s: %s", server, transport, na.Error())
	case errors.Is(err, dns.ErrId):
		return CauseProtocol, fmt.Sprintf("protocol: dns server %s over %s answered another query (id mismatch)", server, transport)
	case errors.Is(err, dns.ErrShortRead):
		return CauseProtocol, fmt.Sprintf("protocol: dns server %s over %s sent a message shorter than a DNS header", server, transport)
	}
	cause, msg := classify(err, tr, elapsed)
	switch cause {
	case CauseTimeout:
		msg = strings.Replace(msg, "timeout: no response", "timeout: no answer from dns server "+server+" over "+transport, 1)
		var oid *dnsOtherIDError
		if errors.As(err, &oid) {
			msg += oid.note()
		}
	case CauseConnectRefused:
		if transport == DNSTransportUDP {
			msg = "connection refused by " + server + " (udp: ICMP port unreachable, nothing listening)"
		}
	case CauseReset:
		msg = fmt.Sprintf("dns server %s over %s: %s", server, transport, msg)
	}
	return cause, msg
}

// RecordExpect asserts on the records of one section of a DNS answer
// (expect.answer, expect.authority, expect.additional). Each regex is
// matched, unanchored, against every record in zone-file form, as dig
// prints it and blackbox_exporter matches it: "www.example.com.\t300\tIN\tA\t192.0.2.1".
// An empty list is a config error, as is an empty regex.
type RecordExpect struct {
	// Regex: for each regex, at least one record of the section matches
	// (blackbox_exporter's fail_if_none_matches_regexp). An empty section
	// fails.
	Regex []string `mapstructure:"regex"`
	// NotRegex: no record matches any of them (fail_if_matches_regexp).
	// An empty section passes.
	NotRegex []string `mapstructure:"not_regex"`
	// AllRegex: every record matches each of them
	// (fail_if_not_matches_regexp). An empty section fails, as
	// blackbox_exporter fails it.
	AllRegex []string `mapstructure:"all_regex"`
	// NotAllRegex: for each regex, at least one record does not match it
	// (fail_if_all_match_regexp). An empty section passes.
	NotAllRegex []string `mapstructure:"not_all_regex"`

	regex, notRegex, allRegex, notAllRegex []*recordRegex
}

// isSet reports whether any list is set.
func (r RecordExpect) isSet() bool {
	return r.Regex != nil || r.NotRegex != nil || r.AllRegex != nil || r.NotAllRegex != nil
}

// recordRegex is a compiled record regex and its source, as written.
type recordRegex struct {
	src string
	re  *regexp.Regexp
}

// compile compiles every list; errors start with key ("answer").
func (r *RecordExpect) compile(key string) []error {
	var errs []error
	for _, l := range []struct {
		name string
		src  []string
		out  *[]*recordRegex
	}{{"regex", r.Regex, &r.regex}, {"not_regex", r.NotRegex, &r.notRegex},
		{"all_regex", r.AllRegex, &r.allRegex}, {"not_all_regex", r.NotAllRegex, &r.notAllRegex}} {
		*l.out = nil
		if l.src != nil && len(l.src) == 0 {
			errs = append(errs, errorf(ErrBadValue, "%s.%s: empty list (omit the key)", key, l.name))
		}
		for i, src := range l.src {
			if src == "" {
				errs = append(errs, errorf(ErrBadValue, "%s.%s[%d]: empty regex (it matches every record)", key, l.name, i))
				continue
			}
			re, err := compileRegex(src)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.%s[%d]: %w", key, l.name, i, err))
				continue
			}
			*l.out = append(*l.out, &recordRegex{src: src, re: re})
		}
	}
	return errs
}

// compileRcodes parses expect.rcode into the accepted codes, sorted.
func compileRcodes(names []string) ([]int, []error) {
	var errs []error
	if names != nil && len(names) == 0 {
		return nil, []error{errorf(ErrBadValue, "rcode: empty list (omit the key for the default NOERROR)")}
	}
	seen := map[int]bool{}
	var out []int
	for i, n := range names {
		key := "rcode"
		if len(names) > 1 {
			key = fmt.Sprintf("rcode[%d]", i)
		}
		for _, part := range strings.Split(n, ",") {
			p := strings.ToUpper(strings.TrimSpace(part))
			code, ok := dns.StringToRcode[p]
			if !ok {
				if x, err := strconv.Atoi(p); err == nil && x >= 0 && x <= 0xFFF {
					code, ok = x, true
				}
			}
			if !ok {
				errs = append(errs, errorf(ErrBadValue, "%s: %q: want an rcode name (NOERROR, NXDOMAIN, SERVFAIL, REFUSED, …) or number", key, strings.TrimSpace(part)))
				continue
			}
			if !seen[code] {
				seen[code] = true
				out = append(out, code)
			}
		}
	}
	sort.Ints(out)
	return out, errs
}

// rcodeName is "NXDOMAIN" for 3; an unnamed code is its number.
func rcodeName(c int) string {
	if s, ok := dns.RcodeToString[c]; ok {
		return s
	}
	return strconv.Itoa(c)
}

// evalRcode runs expect.rcode (default NOERROR): cause status.
func (e *Expect) evalRcode(rcode int, name, qtype string, v *verdict) {
	want := []int{dns.RcodeSuccess}
	if e.rcodes != nil {
		want = e.rcodes
	}
	ok := false
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = rcodeName(w)
		ok = ok || w == rcode
	}
	ws := strings.Join(names, ", ")
	v.add(CauseStatus, "rcode", ok, rcodeName(rcode), ws,
		fmt.Sprintf("dns rcode %s for %s %s, want %s (expect.rcode)", rcodeName(rcode), strings.TrimSuffix(name, "."), qtype, ws))
}

// evalSections runs expect.answer, authority and additional: cause body.
// The additional section is matched without the OPT pseudo-record that
// EDNS0 adds (RFC 6891).
func (e *Expect) evalSections(m *dns.Msg, v *verdict) {
	var extra []dns.RR
	for _, rr := range m.Extra {
		if rr.Header().Rrtype != dns.TypeOPT {
			extra = append(extra, rr)
		}
	}
	for _, s := range []struct {
		key string
		x   *RecordExpect
		rrs []dns.RR
	}{{"answer", &e.Answer, m.Answer}, {"authority", &e.Authority, m.Ns}, {"additional", &e.Additional, extra}} {
		if !s.x.isSet() {
			continue
		}
		recs := make([]string, len(s.rrs))
		for i, rr := range s.rrs {
			recs[i] = rr.String()
		}
		s.x.eval(s.key, recs, v)
	}
}

// dnsRecordsShown is how many records a failed section assertion quotes.
const dnsRecordsShown = 3

// shownRecords quotes up to dnsRecordsShown records: `2 records: "…", "…"`.
func shownRecords(recs []string) string {
	if len(recs) == 0 {
		return "no records"
	}
	q := make([]string, 0, dnsRecordsShown)
	for i, r := range recs {
		if i == dnsRecordsShown {
			break
		}
		q = append(q, strconv.Quote(abbrev(r, 200)))
	}
	s := strings.Join(q, ", ")
	if len(recs) > dnsRecordsShown {
		s += fmt.Sprintf(", … (%d more)", len(recs)-dnsRecordsShown)
	}
	noun := "records"
	if len(recs) == 1 {
		noun = "record"
	}
	return fmt.Sprintf("%d %s: %s", len(recs), noun, s)
}

// eval runs the section's assertions over its records (zone-file form).
func (r *RecordExpect) eval(key string, recs []string, v *verdict) {
	for _, re := range r.regex {
		ok := false
		for _, rec := range recs {
			if re.re.MatchString(rec) {
				ok = true
				break
			}
		}
		got := "match"
		if !ok {
			got = shownRecords(recs)
		}
		v.add(CauseBody, key+" regex", ok, got, "~"+re.src,
			fmt.Sprintf("dns %s: no record matches ~%s (expect.%s.regex; %s)", key, re.src, key, shownRecords(recs)))
	}
	for _, re := range r.notRegex {
		bad := ""
		for _, rec := range recs {
			if re.re.MatchString(rec) {
				bad = rec
				break
			}
		}
		got := "no match"
		if bad != "" {
			got = strconv.Quote(abbrev(bad, 200))
		}
		v.add(CauseBody, key+" not_regex", bad == "", got, "not ~"+re.src,
			fmt.Sprintf("dns %s: record %s matches ~%s (expect.%s.not_regex)", key, got, re.src, key))
	}
	for _, re := range r.allRegex {
		bad, ok := "", len(recs) > 0
		for _, rec := range recs {
			if !re.re.MatchString(rec) {
				bad, ok = rec, false
				break
			}
		}
		got, msg := "all match", ""
		switch {
		case len(recs) == 0:
			got = "no records"
			msg = fmt.Sprintf("dns %s: no records, want every record to match ~%s (expect.%s.all_regex)", key, re.src, key)
		case !ok:
			got = strconv.Quote(abbrev(bad, 200))
			msg = fmt.Sprintf("dns %s: record %s does not match ~%s (expect.%s.all_regex)", key, got, re.src, key)
		}
		v.add(CauseBody, key+" all_regex", ok, got, "every record ~"+re.src, msg)
	}
	for _, re := range r.notAllRegex {
		ok := len(recs) == 0
		for _, rec := range recs {
			if !re.re.MatchString(rec) {
				ok = true
				break
			}
		}
		got := "not all match"
		if !ok {
			got = shownRecords(recs)
		}
		v.add(CauseBody, key+" not_all_regex", ok, got, "not every record ~"+re.src,
			fmt.Sprintf("dns %s: every record matches ~%s (expect.%s.not_all_regex; %s)", key, re.src, key, shownRecords(recs)))
	}
}
