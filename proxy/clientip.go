package proxy

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// The client behind trusted proxies (trusted_proxies, client_ip_header),
// as nginx's realip module, Caddy's trusted_proxies and Envoy's
// xff_num_trusted_hops find it. A request whose TCP peer (or PROXY
// protocol client) is in trusted_proxies is taken to come from the client
// its client_ip_header names: in X-Forwarded-For, the rightmost address
// not in trusted_proxies (each hop appends the address it saw, so the
// addresses left of the first untrusted one are the client's own claims);
// in another header, its one address. ip_hash and hash.key ip hash that
// client, origins get it in X-Real-IP, and the access log adds it as
// client_ip; X-Forwarded-For still gets the peer appended, so the chain
// stays whole. A request from any other peer, or whose header holds no
// usable address, or names it in Connection (hop-by-hop: not passed on, so
// not believed either), keeps the peer as its client: nobody else can
// choose the address the proxy believes.

type clientIPKey struct{}

// peerIP is the address of the request's TCP peer (or of the client a
// PROXY protocol header named), without its port.
func peerIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// clientIP is the request's client address: the one realClientIP found
// behind a trusted proxy, else the peer's.
func clientIP(r *http.Request) string {
	return clientOf(r, "")
}

// clientOf is clientIP for a request whose peerIP is peer, when the
// caller has it already ("" when not).
func clientOf(r *http.Request, peer string) string {
	if ip, ok := r.Context().Value(clientIPKey{}).(string); ok {
		return ip
	}
	if peer == "" {
		peer = peerIP(r)
	}
	return peer
}

// withClientIP returns r carrying the client address that cfg's trusted
// proxies name, and that address; r itself and "" when there is none
// (no trusted_proxies, an untrusted peer, no usable address).
func withClientIP(cfg *Config, r *http.Request) (*http.Request, string) {
	if len(cfg.trusted) == 0 {
		return r, ""
	}
	peer, err := netip.ParseAddr(peerIP(r))
	if err != nil || !trustedAddr(cfg.trusted, peer) {
		return r, ""
	}
	if namedIn(r.Header["Connection"], cfg.clientIPKey) {
		// Named in Connection, the header is hop-by-hop: it is not passed
		// on (copyHeaders), so X-Forwarded-For gets the peer alone, and
		// X-Real-IP must say the same rather than name an address the
		// chain the origin sees does not hold.
		return r, ""
	}
	ip, ok := realClientIP(cfg, r.Header[cfg.clientIPKey])
	if !ok {
		return r, ""
	}
	s := ip.String()
	return r.WithContext(context.WithValue(r.Context(), clientIPKey{}, s)), s
}

// realClientIP reads the client's address from the values of
// client_ip_header of a request from a trusted proxy.
func realClientIP(cfg *Config, vals []string) (netip.Addr, bool) {
	if len(vals) == 0 {
		return netip.Addr{}, false
	}
	if cfg.clientIPKey != "X-Forwarded-For" {
		if len(vals) != 1 {
			return netip.Addr{}, false
		}
		return parseHopAddr(vals[0])
	}
	// One list over every X-Forwarded-For line, rightmost first.
	var last netip.Addr
	for i := len(vals) - 1; i >= 0; i-- {
		v := vals[i]
		for v != "" {
			var part string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				part, v = v[j+1:], v[:j]
			} else {
				part, v = v, ""
			}
			a, ok := parseHopAddr(part)
			if !ok {
				return netip.Addr{}, false
			}
			if !trustedAddr(cfg.trusted, a) {
				return a, true
			}
			last = a
		}
	}
	// Every address is a trusted proxy's: the leftmost is the client.
	return last, last.IsValid()
}

// parseHopAddr parses one address of a forwarding header: an IP, or an
// IP with a port ("203.0.113.7:4711", "[2001:db8::7]:4711").
func parseHopAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// trustedAddr reports whether a is in one of the prefixes.
func trustedAddr(list []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// What a trusted proxy said of the client's request: the scheme, host and
// port the client used at that proxy (a CDN or load balancer that ends
// TLS). Origins get them in X-Forwarded-Proto, -Host, -Port and Forwarded
// in place of the proxy's own view (plain HTTP from the CDN's edge), as
// Caddy keeps them from its trusted_proxies. From any other peer they are
// the client's claims and are replaced.

type trustedFwdKey struct{}

// trustedFwd holds the values a trusted peer sent that passed validation;
// an empty field is not one.
type trustedFwd struct {
	proto []string // protoHTTP or protoHTTPS
	host  string
	port  string
}

// withTrustedForwarding returns r carrying what its peer, when a trusted
// proxy, said of the client's scheme, host and port: X-Forwarded-Proto
// (http or https), X-Forwarded-Host (a valid host[:port]) and
// X-Forwarded-Port (1–65535), each one value; a field missing or not
// valid is taken from the last element of its Forwarded (the one the peer
// added), else left to the proxy's own view. Fields the request names in
// Connection are hop-by-hop and not believed. r itself when there is
// nothing to keep.
func withTrustedForwarding(cfg *Config, r *http.Request) *http.Request {
	if len(cfg.trusted) == 0 {
		return r
	}
	peer, err := netip.ParseAddr(peerIP(r))
	if err != nil || !trustedAddr(cfg.trusted, peer) {
		return r
	}
	conn := r.Header["Connection"]
	one := func(k string) string {
		if v := r.Header[k]; len(v) == 1 && !namedIn(conn, k) {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	var tf trustedFwd
	tf.proto = protoOf(one("X-Forwarded-Proto"))
	if h := one("X-Forwarded-Host"); h != "" && validHost(h) {
		tf.host = h
	}
	if p := one("X-Forwarded-Port"); validPort(p) {
		tf.port = p
	}
	if tf.proto == nil || tf.host == "" {
		if fw := r.Header["Forwarded"]; len(fw) > 0 && !namedIn(conn, "Forwarded") {
			proto, host := lastForwarded(fw[len(fw)-1])
			if tf.proto == nil {
				tf.proto = protoOf(proto)
			}
			if tf.host == "" && host != "" && validHost(host) {
				tf.host = host
			}
		}
	}
	if tf.proto == nil && tf.host == "" && tf.port == "" {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), trustedFwdKey{}, &tf))
}

// trustedForwarding is what withTrustedForwarding kept for r, nil if
// nothing.
func trustedForwarding(r *http.Request) *trustedFwd {
	tf, _ := r.Context().Value(trustedFwdKey{}).(*trustedFwd)
	return tf
}

// viaHTTPS reports whether a trusted proxy said the client used https
// (a CDN that ends TLS and sends plain HTTP on): redirect_https leaves
// such a request alone, which it would otherwise send back to https://
// forever.
func viaHTTPS(r *http.Request) bool {
	tf := trustedForwarding(r)
	return tf != nil && len(tf.proto) == 1 && tf.proto[0] == "https"
}

func protoOf(v string) []string {
	switch {
	case strings.EqualFold(v, "https"):
		return protoHTTPS
	case strings.EqualFold(v, "http"):
		return protoHTTP
	}
	return nil
}

// validPort reports whether p is a port number 1–65535 in decimal.
func validPort(p string) bool {
	if p == "" || len(p) > 5 || p[0] == '0' {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n <= 65535
}

// lastForwarded returns the proto and host parameters of the last element
// of a Forwarded field line (RFC 7239 §4), unquoted; "" where absent.
func lastForwarded(line string) (proto, host string) {
	el := line
	if i := strings.LastIndexByte(line, ','); i >= 0 {
		el = line[i+1:]
	}
	for _, pair := range strings.Split(el, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			continue
		}
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		switch strings.ToLower(k) {
		case "proto":
			proto = v
		case "host":
			host = v
		}
	}
	return proto, host
}
