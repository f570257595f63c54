package proxy

import (
	"html"
	"io"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// Handler returns the data plane. It serves only configured hosts: a request
// whose Host matches no pool gets 421, an absolute-form request target
// ("GET http://other.example/ HTTP/1.1") for a host no pool names (exactly
// or by a wildcard; "*" does not count), or whose scheme is not http or
// https, gets 400, and CONNECT gets 405, so vigil is never an open proxy. It always
// forwards to configured origins, whatever the request names. "OPTIONS *"
// (RFC 9110 §9.3.7, a question about the server, not a resource) is answered
// by the proxy itself: 200 with Content-Length: 0; any other method with the
// asterisk-form target gets 400.
func (p *Proxy) Handler() http.Handler { return http.HandlerFunc(p.serveHTTP) }

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if al := p.alog.Load(); al != nil {
		p.serveLogged(al, w, r)
		return
	}
	p.route(w, r, nil)
}

// serveLogged serves r and writes its access log line when the answer is
// done (also when the client went away: status 499).
func (p *Proxy) serveLogged(al *accessLog, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ae := &accessEntry{}
	rw, fast := w.(*respWriter)
	var cw *countWriter
	if !fast {
		cw = &countWriter{ResponseWriter: w}
		w = cw
	}
	defer func() {
		var status int
		var bytes int64
		if fast {
			status, bytes = rw.status, rw.written+int64(len(rw.buf))
			if rw.hijacked && status == 0 {
				status = http.StatusSwitchingProtocols
			}
		} else {
			status, bytes = cw.status, cw.bytes
		}
		if status == 0 {
			status = statusClientClosed // aborted: the client went away
		}
		if isGRPC(r.Header) {
			// The origin's trailer, or its trailers-only head, copied
			// into the answer's header map.
			ae.grpcStatus = grpcStatusOf(w.Header())
		}
		al.write(start, r, status, bytes, ae)
	}()
	p.route(w, r, ae)
}

func (p *Proxy) route(w http.ResponseWriter, r *http.Request, ae *accessEntry) {
	st := p.state.Load()
	if r.TLS != nil && st.cfg.hsts != nil {
		// On every answer of the TLS listener, refusals included (nginx's
		// add_header … always). An origin's own Strict-Transport-Security
		// replaces it (respond copies the origin's fields over these).
		w.Header()["Strict-Transport-Security"] = st.cfg.hsts
	}
	if k := st.cfg.ridKey; k != "" {
		// The request's ID, to the origin and back to the client on every
		// answer, the proxy's own refusals included.
		var id []string
		// A client's ID named in Connection is hop-by-hop, not one to
		// pass on: it is replaced as a malformed one is.
		if cv := r.Header[k]; st.cfg.RequestIDFromClient && len(cv) == 1 && validRequestID(cv[0]) && !namedIn(r.Header["Connection"], k) {
			id = cv
		} else {
			id = p.rids.next()
		}
		r.Header[k] = id
		if st.cfg.ridAnswers {
			w.Header()[k] = id
		}
		if ae != nil {
			ae.requestID = id[0]
		}
	}
	if st.via != nil && st.via.seen(r.Header["Via"]) {
		if p.loops.allow(time.Now()) {
			p.log.Warn("proxy: request loop: the request already went through this proxy (its Via names it); answered 508 Loop Detected without forwarding it. An origin (or a proxy behind one) sends requests back to this proxy",
				"via", st.via.name, "host", r.Host, "path", r.URL.Path, "chain", strings.Join(r.Header["Via"], ", "))
		}
		p.refuse(w, r, http.StatusLoopDetected, "request loop: this request already went through this proxy (Via: "+st.via.name+")")
		return
	}
	r = withTrustedForwarding(&st.cfg, r)
	if r2, ip := withClientIP(&st.cfg, r); ip != "" {
		r = r2
		if ae != nil {
			ae.clientIP = ip
		}
	}
	if r.TLS != nil && !clientCertStillAccepted(r, &st.cfg) {
		p.refuse(w, r, http.StatusForbidden, "client certificate not accepted by the current client_ca_file or client_auth; reconnect")
		return
	}
	if r.TLS != nil && st.cfg.clientCRL != nil && !st.cfg.clientCRL.stillValid(p.log, r.TLS, r.RemoteAddr) {
		// A reload brought a CRL that revokes the certificate this
		// connection was made with.
		p.refuse(w, r, http.StatusForbidden, "client certificate revoked (client_crl_file)")
		return
	}
	if r.Method == http.MethodConnect {
		p.refuse(w, r, http.StatusMethodNotAllowed, "CONNECT is not supported: this is a reverse proxy")
		return
	}
	if r.Method == http.MethodTrace {
		// TRACE echoes the request, cookies and credentials included, back
		// to whoever can make a browser send it (cross-site tracing); nginx
		// refuses it too.
		p.refuse(w, r, http.StatusMethodNotAllowed, "TRACE is not supported")
		return
	}
	if r.URL.Path == "" && r.URL.Host != "" {
		// An absolute-form target without a path ("GET http://a.example
		// HTTP/1.1") asks for "/" (RFC 9112 §3.2.2).
		r.URL.Path, r.URL.RawPath = "/", ""
	}
	if r.RequestURI == "*" {
		if r.Method != http.MethodOptions {
			p.refuse(w, r, http.StatusBadRequest, "the asterisk-form request target is for OPTIONS only")
			return
		}
		p.countRefused(http.StatusOK) // answered before any pool was chosen
		serverOptions(w, r)
		return
	}
	host := hostOf(r.Host)
	if r.URL.Host != "" || (len(r.RequestURI) > 0 && r.RequestURI[0] != '/') {
		// Absolute-form target: an http or https URL (RFC 9112 §3.2.2 asks
		// for an "http" or "https" URI; another scheme, "ftp://…", asks a
		// forward proxy for another protocol), only for a host some pool
		// names, exactly or by a wildcard: a "*" pool alone does not make
		// the proxy serve any host named in a URL. nginx picks the server
		// by the URL's host too, wildcard server_names included.
		if sc := r.URL.Scheme; !strings.EqualFold(sc, "http") && !strings.EqualFold(sc, "https") {
			p.refuse(w, r, http.StatusBadRequest, "absolute request target with a scheme other than http or https")
			return
		}
		if !st.explicitHost(hostOf(r.URL.Host)) {
			p.refuse(w, r, http.StatusBadRequest, "absolute request target for a host this proxy does not serve")
			return
		}
	}
	if !validHost(r.Host) {
		p.refuse(w, r, http.StatusBadRequest, "malformed Host")
		return
	}
	if hv, ok := r.Header["Host"]; ok && (len(hv) != 1 || !strings.EqualFold(hv[0], r.Host)) {
		// HTTP/2 keeps a host field in the header map beside :authority
		// (HTTP/1 servers move it to r.Host); one that differs makes the
		// request malformed (RFC 9113 §8.3.1). An equal one is dropped
		// when the headers are copied: the origin gets one Host.
		p.refuse(w, r, http.StatusBadRequest, "host field differs from :authority")
		return
	}
	if !isToken(r.Method) {
		// HTTP/1 parsers refuse such a method; an HTTP/2 :method carries
		// any bytes ("GET /x HTTP/1.1", "G@T"), and Go's transport would
		// refuse to send it, which counted as a failure of every origin
		// tried: any client could have the pool's origins ejected.
		p.refuse(w, r, http.StatusBadRequest, "malformed method")
		return
	}
	if r.URL.User != nil {
		// "GET http://user:pw@host/ HTTP/1.1": RFC 9110 §4.2.4 makes the
		// userinfo an error (nginx answers 400); Host with one gets 400 too.
		p.refuse(w, r, http.StatusBadRequest, "user information in the request target")
		return
	}
	if r.ProtoMajor == 2 {
		if cl, ok := r.Header["Content-Length"]; ok {
			// RFC 9113 §8.1.1: a content-length that is not one number,
			// or that announces a body the stream does not carry, makes
			// the request malformed (nginx answers 400); forwarded, the
			// origin got an empty POST instead.
			// Go's HTTP/2 server sets ContentLength to the declared length
			// while the stream is open and to 0 when it ended with the
			// headers.
			n, valid := h2ContentLength(cl)
			if !valid || n != r.ContentLength {
				p.refuse(w, r, http.StatusBadRequest, "malformed content-length")
				return
			}
		}
	}
	if r.ProtoMajor == 2 && !validTarget(r.RequestURI) {
		// HTTP/1 parsers split the request line at white space; an HTTP/2
		// :path carries it as is, and written into the origin's request line
		// a space would make a lenient origin see another target or version
		// than the one routed and logged (nginx refuses it too).
		p.refuse(w, r, http.StatusBadRequest, "malformed :path (white space or a control character)")
		return
	}
	if strings.IndexByte(r.RequestURI, '#') >= 0 {
		// A request target has no fragment (RFC 9112 §3.2; a client strips
		// it). Routed on the path before it but forwarded whole, a target
		// such as /secret#/../public passed /public's path_prefix and an
		// origin that parses the target as a URL (Node, Express, Python's
		// urlsplit) served /secret. HAProxy answers 400 too.
		p.refuse(w, r, http.StatusBadRequest, "fragment (#) in the request target")
		return
	}
	if strings.IndexByte(r.URL.Path, 0) >= 0 {
		// %00 in the path: C-based origins end the path there, so it is
		// not the path routed (nginx answers 400 too).
		p.refuse(w, r, http.StatusBadRequest, "NUL (%00) in the path")
		return
	}
	if r.ProtoMajor == 2 && r.Host == "" {
		// Neither :authority nor host (RFC 9113 §8.3.1): a "*" pool would
		// forward it with an empty Host; HTTP/1.1 without Host gets 400.
		p.refuse(w, r, http.StatusBadRequest, "missing :authority and host")
		return
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && time.Now().After(r.TLS.VerifiedChains[0][0].NotAfter) {
		// The handshake checked the client certificate's validity; a
		// connection kept open past its NotAfter would go on vouching for
		// it in X-Forwarded-Client-Cert.
		p.refuse(w, r, http.StatusForbidden, "client certificate expired since the connection was made; reconnect with a valid one")
		return
	}
	rp, ok := routePath(r.URL.Path)
	if !ok {
		p.refuse(w, r, http.StatusBadRequest, "ambiguous path: a dot segment with path parameters")
		return
	}
	pl := st.route(host, rp)
	if pl == nil {
		p.refuse(w, r, http.StatusMisdirectedRequest, "no pool serves this host and path")
		return
	}
	if !st.slashReadingsAgree(host, r, pl) {
		p.refuse(w, r, http.StatusBadRequest, "ambiguous path: read with an encoded slash (%2F) kept in its segment, or a backslash (%5C) as a slash, it routes to another pool")
		return
	}
	run := p.running.Load()
	if r.TLS == nil && st.cfg.RedirectHTTPS && !viaHTTPS(r) {
		if ae != nil {
			ae.pool = pl.name
		}
		p.redirectHTTPS(w, r, pl, st)
		return
	}
	readTimeout := st.cfg.ReadTimeout
	if run != nil {
		readTimeout = run.ReadTimeout // restart-only: what the listener runs with
	}
	// send_timeout of HTTP/1 answers is the connection's (refused.go,
	// rawconn_linux.go); an HTTP/2 answer's is its stream's (respond).
	var h2Send time.Duration
	if r.ProtoMajor == 2 {
		h2Send = st.cfg.SendTimeout
		if run != nil {
			h2Send = run.SendTimeout
		}
	}
	pl.serve(w, r, int64(st.cfg.MaxBody), readTimeout, h2Send, ae)
}

// redirectHTTPS answers a plain-HTTP request with 308 Permanent Redirect to
// the same host and target on the TLS listener's port (left out when 443).
// Only requests a pool would serve get here, so the proxy never redirects
// to a host it does not serve. 308, unlike 301, keeps the method and body.
func (p *Proxy) redirectHTTPS(w http.ResponseWriter, r *http.Request, pl *pool, st *runtimeState) {
	start := time.Now()
	_, port, _ := net.SplitHostPort(st.cfg.TLSListen)
	if lp := p.tlsPort.Load(); lp != nil {
		port = *lp // the port the listener has (tls_listen is restart-only; it may say :0)
	}
	host := hostOf(r.Host)
	if host == "" {
		// No Host (HTTP/1.0, or an empty one) with a "*" pool: there is
		// no URL to send the client to.
		p.refuse(w, r, http.StatusBadRequest, "no Host to redirect to https://")
		return
	}
	if pl.anyHost(host) {
		// A "*" pool takes any Host: redirecting every one would put a
		// name of the client's choosing into Location (a cache that does
		// not key on Host would serve it to others). Only a host one of
		// the listener's certificates covers is sent to https://, as Caddy
		// redirects only the names it has certificates for.
		if cs := p.tlsCerts.Load(); cs == nil || !cs.covers(host) {
			p.refuse(w, r, http.StatusMisdirectedRequest, "no certificate of tls_listen covers this host; not redirected to https://")
			return
		}
	}
	switch {
	case port != "" && port != "443":
		host = net.JoinHostPort(host, port)
	case strings.Contains(host, ":"):
		host = "[" + host + "]"
	}
	target := r.URL.RequestURI()
	loc := "https://" + host + target
	h := w.Header()
	h["Location"] = []string{loc}
	h["Content-Type"] = []string{"text/html; charset=utf-8"}
	body := "<a href=\"" + html.EscapeString(loc) + "\">Permanent Redirect</a>.\n"
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusPermanentRedirect)
	if r.Method != http.MethodHead {
		io.WriteString(w, body)
	}
	pl.none.code(http.StatusPermanentRedirect).Inc()
	pl.none.latency.Observe(time.Since(start).Seconds())
}

// routePath is the path routing matches on: path parameters dropped, dot
// segments resolved and repeated slashes merged (RFC 3986 §5.2.4), as nginx
// matches locations and as most origins resolve paths, so "/api/../admin",
// "/api/..;/admin" or "//api/x" (also written with %2e) cannot reach one
// pool's origin through another pool's prefix. The path is the decoded one
// (%2F is a slash here, where some origins keep it as a byte: a path whose
// pool that changes is refused, see slashReadingsAgree). The request is
// forwarded as the client wrote it.
func routePath(p string) (string, bool) {
	if !strings.Contains(p, "/.") && !strings.Contains(p, "//") && !strings.Contains(p, ";") {
		return p, true
	}
	if strings.Contains(p, ";") {
		// Path parameters ("/x;jsessionid=1/y") are dropped per segment,
		// as Tomcat and Jetty do before resolving. A segment that becomes
		// "." or ".." that way ("/api/..;/admin") is read differently by
		// origins that keep parameters (nginx, Go, Node) and by those that
		// drop them: it is refused rather than guessed.
		segs := strings.Split(p, "/")
		for i, s := range segs {
			if j := strings.IndexByte(s, ';'); j >= 0 {
				if seg := s[:j]; seg == "." || seg == ".." {
					return "", false
				}
				segs[i] = s[:j]
			}
		}
		p = strings.Join(segs, "/")
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c, true
}

// slashReadingsAgree reports whether the request routes to pl however its
// origin reads an encoded slash or a backslash. Routing reads %2F as a
// slash, but the origin gets the target as written, and many keep %2F as a
// byte of its segment (Tomcat, Spring, Express's router) while others take
// a backslash for a slash (IIS, WHATWG URL parsers): with dot segments,
// "/internal/..%2F..%2Fapi" routed to /api's pool and its origin served
// /internal/.., and "/api/..%5Cadmin" reached /admin on /api's origin.
// Envoy refuses every escaped slash (path_with_escaped_slashes_action:
// REJECT_REQUEST); here only a path whose route depends on the reading is
// refused, so an ID such as /api/files/a%2Fb still goes through.
func (st *runtimeState) slashReadingsAgree(host string, r *http.Request, pl *pool) bool {
	if strings.IndexByte(r.URL.Path, '\\') >= 0 {
		// A backslash (%5C or as written) read as a slash.
		if rp, ok := routePath(strings.ReplaceAll(r.URL.Path, "\\", "/")); !ok || st.route(host, rp) != pl {
			return false
		}
	}
	// The path as the origin gets it: the fast engine and HTTP/2 forward
	// the target as written, an absolute-form one goes out re-encoded.
	raw := r.RequestURI
	if raw == "" || raw[0] != '/' {
		raw = r.URL.EscapedPath()
	} else if i := strings.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i]
	}
	if !hasEscapedSlash(raw) {
		return true
	}
	// %2F kept as a byte: a NUL stands for it (a path with a NUL got 400
	// before routing, and no prefix holds one), so it splits no segment.
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] == '%' && i+2 < len(raw) && raw[i+1] == '2' && (raw[i+2] == 'F' || raw[i+2] == 'f') {
			b.WriteString("%00")
			i += 2
			continue
		}
		b.WriteByte(raw[i])
	}
	opaque, _ := unescapeValid(b.String())
	rp, ok := routePath(opaque)
	return ok && st.route(host, rp) == pl
}

// hasEscapedSlash reports whether an escaped path holds %2F, in any case.
func hasEscapedSlash(p string) bool {
	for {
		i := strings.IndexByte(p, '%')
		if i < 0 || i+2 >= len(p) {
			return false
		}
		if p[i+1] == '2' && (p[i+2] == 'F' || p[i+2] == 'f') {
			return true
		}
		p = p[i+1:]
	}
}

// explicitHost reports whether a pool names host by an exact or wildcard
// pattern (not "*").
func (st *runtimeState) explicitHost(host string) bool {
	for i := range st.routes {
		if h := st.routes[i].host; !h.any && h.match(host) {
			return true
		}
	}
	return false
}

// serverOptions answers "OPTIONS *" as net/http's own handler for it does:
// 200, Content-Length: 0, up to 4 KiB of a body read away (a larger one
// closes the connection). No origin is asked: the question is about the
// proxy.
func serverOptions(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "0")
	if r.ContentLength != 0 {
		io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 4<<10))
	}
	w.WriteHeader(http.StatusOK)
}

// countRefused counts a request answered before any pool was chosen.
func (p *Proxy) countRefused(code int) {
	p.m.refused.WithLabelValues(strconv.Itoa(code)).Inc()
}

// engineRefused counts a request an engine refused while parsing it and
// writes its access log line: the client, the status and why (there is no
// method, host or path to log that the proxy could trust).
func (p *Proxy) engineRefused(r refusal) {
	p.countRefused(r.code)
	if al := p.alog.Load(); al != nil {
		al.writeRefused(r)
	}
}

// refuse answers a request no pool takes. An HTTP/1 connection closes
// after it (what else the client sent may not be framed as it meant); an
// HTTP/2 one stays open, its other streams unaffected: Connection: close
// would make net/http end the connection with a GOAWAY, costing the client
// a new TLS handshake for its next request.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	p.countRefused(code)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(code)
	io.WriteString(w, http.StatusText(code)+": "+msg+"\n")
}

// h2ContentLength parses an HTTP/2 request's content-length field: one
// value of digits only.
func h2ContentLength(vv []string) (int64, bool) {
	if len(vv) != 1 || vv[0] == "" || len(vv[0]) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range []byte(vv[0]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// validTarget reports whether a request target has no white space, control
// character or DEL: it goes into the origin's request line as is.
func validTarget(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// clientCertStillAccepted reports whether a TLS connection's client
// certificate (or its lack of one) is accepted by the client certificate
// settings in force now: a reload that drops a CA from client_ca_file, or
// turns client certificates on, must not leave connections made before it
// served (nginx's reload retires them). With no client_ca_file now, r.TLS
// is replaced by a copy without the verified chains, so no
// X-Forwarded-Client-Cert vouches for a certificate nothing checks anymore.
func clientCertStillAccepted(r *http.Request, cfg *Config) bool {
	chains := r.TLS.VerifiedChains
	if cfg.clientCAs == nil {
		if len(chains) > 0 {
			cs := *r.TLS
			cs.VerifiedChains = nil
			r.TLS = &cs
		}
		return true
	}
	if len(chains) == 0 {
		return cfg.ClientAuth == ClientAuthOptional && len(r.TLS.PeerCertificates) == 0
	}
	for _, ch := range chains {
		if len(ch) > 0 && cfg.clientRoots[string(ch[len(ch)-1].Raw)] {
			return true
		}
	}
	return false
}

// anyHost reports whether the pool takes host only through its "*"
// pattern (no exact or wildcard name of its hosts matches it).
func (pl *pool) anyHost(host string) bool {
	for _, h := range pl.cfg.hosts {
		if !h.any && h.match(host) {
			return false
		}
	}
	return true
}
