package main

import (
	"net"
	"net/http"
	"strings"
)

// hostCheck guards the agent listener against DNS rebinding: a web page on
// attacker.example whose name is made to resolve to 127.0.0.1 would
// otherwise reach the status page, the API and the demo's /demo/fault from
// the user's browser as a same-origin request. When the listener is on a
// loopback address (127.0.0.0/8, ::1) or agent.listen names the host
// "localhost", only requests whose Host is localhost, a 127.x.x.x address or
// [::1] (any port, any case, a trailing dot allowed) are served; any other
// Host is answered 421 Misdirected Request. A listener on any other address
// has been exposed on purpose and serves every Host.
func (a *app) hostCheck(next http.Handler) http.Handler {
	return loopbackHostCheck("this agent", a.loopbackOnly, next)
}

// loopbackHostCheck is hostCheck for any listener: while loopbackOnly
// reports true, a request whose Host is not a loopback name is answered
// 421 naming who (what listens: "this agent").
func loopbackHostCheck(who string, loopbackOnly func() bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopbackOnly() && !loopbackHost(r.Host) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_, _ = w.Write([]byte("421 misdirected request: " + who + " listens on a loopback address and answers only requests for Host localhost, 127.x.x.x or [::1]\n"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// listenerLoopbackOnly reports whether a listener opened for the address
// listen serves only this machine: it is on a loopback address, or
// listen names the host "localhost" (as loopbackOnly judges the agent's).
func listenerLoopbackOnly(listen string, ln net.Listener) bool {
	if h, _, err := net.SplitHostPort(listen); err == nil && strings.EqualFold(strings.TrimSuffix(h, "."), "localhost") {
		return true
	}
	t, ok := ln.Addr().(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}

// loopbackOnly reports whether the agent listens on a loopback address (or
// on the configured host "localhost").
func (a *app) loopbackOnly() bool {
	listen := a.opts.listen
	if listen == "" {
		listen = a.current().Agent.Listen
	}
	if h, _, err := net.SplitHostPort(listen); err == nil && strings.EqualFold(strings.TrimSuffix(h, "."), "localhost") {
		return true
	}
	ln := a.opts.listener
	if ln == nil {
		ln = a.ln
	}
	if ln != nil {
		if t, ok := ln.Addr().(*net.TCPAddr); ok {
			return t.IP.IsLoopback()
		}
		return false
	}
	// Not listening yet (a handler used on its own): judge the configured
	// address.
	h, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a Host header value names this machine's
// loopback interface: localhost, 127.0.0.0/8 or ::1, with or without a port.
func loopbackHost(host string) bool {
	h := host
	if sh, _, err := net.SplitHostPort(host); err == nil {
		h = sh
	} else if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "localhost" {
		return true
	}
	if strings.Contains(h, "%") { // a zone (fe80::1%eth0) is never loopback here
		return false
	}
	ip := net.ParseIP(h)
	if ip == nil {
		return false
	}
	if v4 := ip.To4(); v4 != nil && strings.Contains(h, ":") {
		return false // ::ffff:127.0.0.1 is not one of the names accepted
	}
	return ip.IsLoopback()
}
