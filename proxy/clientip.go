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
