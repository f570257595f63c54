package checks

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	xproxy "golang.org/x/net/proxy"

	"github.com/vigil-synthetics/vigil/reporting/units"
)

// HTTP is a compiled HTTP check. It is safe for concurrent Run.
type HTTP struct {
	spec   HTTPSpec
	expect Expect
	opts   Options
	// tr carries the requests to the check's own host (the host of the
	// run's URL, on any port): its TLS name is ownName. trOther carries the
	// redirects to other hosts, each verified against its own name, as
	// browsers, curl and blackbox_exporter do.
	tr, trOther *http.Transport
	// ownName is the TLS name (SNI and verification) for the own host:
	// tls.server_name, else the host of a Host header without variables,
	// else "" (the URL's host).
	ownName string
	ua      string

	mu     sync.Mutex
	byName map[string]*http.Transport // own-host transports for Host headers built from variables
	// spare holds kept-body buffers of earlier runs (at most maxSpareBodies,
	// guarded by mu), so a run reads a kept body into memory already in
	// use instead of growing fresh buffers while its transfer is timed.
	spare [][]byte
}

// maxSpareBodies is how many kept-body buffers a check holds between runs:
// two runs of a check (two targets) at a time reuse theirs; more allocate.
const maxSpareBodies = 2

// takeBody returns the largest spare kept-body buffer (length 0), or nil.
func (h *HTTP) takeBody() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	best := -1
	for i, b := range h.spare {
		if best < 0 || cap(b) > cap(h.spare[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := h.spare[best]
	h.spare = slices.Delete(h.spare, best, best+1)
	return b[:0]
}

// putBody keeps buf for a later run once nothing refers to it any more,
// dropping the smallest buffer beyond maxSpareBodies.
func (h *HTTP) putBody(buf []byte) {
	if cap(buf) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.spare = append(h.spare, buf[:0])
	if len(h.spare) > maxSpareBodies {
		small := 0
		for i, b := range h.spare {
			if cap(b) < cap(h.spare[small]) {
				small = i
			}
		}
		h.spare = slices.Delete(h.spare, small, small+1)
	}
}

var (
	_ Check     = (*HTTP)(nil)
	_ io.Closer = (*HTTP)(nil)
)

// RunOptions adjust one run of an HTTP check (used by multi-step scripts).
type RunOptions struct {
	// Jar stores and sends cookies across runs. Default: no cookies.
	Jar http.CookieJar
	// Expand rewrites the URL, path, header values and body (text, or each
	// string inside http.json) before sending. nil = identity.
	Expand func(string) string
	// KeepBody returns the body (up to body_limit) in Response.Body.
	KeepBody bool
}

// Response is what the origin answered, returned by RunWith whenever a
// response arrived.
type Response struct {
	StatusCode int
	Header     http.Header
	// Body is the first body_limit bytes, only with RunOptions.KeepBody,
	// decoded when the Content-Encoding is gzip or deflate.
	Body []byte
	// URL is the final URL (after redirects, when followed).
	URL string
}

// NewHTTP compiles an HTTP check. It validates spec and expect (errors are
// prefixed "http." and "expect.") unless they already were, and checks that
// expect.size fits within http.body_limit.
func NewHTTP(spec HTTPSpec, expect Expect, o Options) (*HTTP, error) {
	var errs []error
	if !spec.compiled {
		if err := spec.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix("http", err))
		}
	}
	if !expect.compiled {
		if err := expect.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix("expect", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := headBodyAssertions(spec.Method, &expect); err != nil {
		return nil, err
	}
	if expect.Size.Max > spec.BodyLimit {
		return nil, errorf(ErrBadValue, "expect.size.max: %s is above http.body_limit %s", expect.Size.Max, spec.BodyLimit)
	}
	if expect.Size.Min > spec.BodyLimit {
		return nil, errorf(ErrBadValue, "expect.size.min: %s is above http.body_limit %s", expect.Size.Min, spec.BodyLimit)
	}
	o.setDefaults()
	h := &HTTP{spec: spec, expect: expect, opts: o, ua: spec.UserAgent}
	if h.ua == "" {
		h.ua = "vigil/" + o.Version
	}
	if spec.host == "" || !strings.Contains(spec.host, "${") {
		h.ownName = spec.tlsName(spec.host)
	}
	h.tr = h.newTransport(h.ownName)
	h.trOther = h.newTransport("")
	return h, nil
}

// maxNamedTransports bounds HTTP.byName; a run needing one more gets a
// transport of its own, closed after the run.
const maxNamedTransports = 8

// newTransport is a transport whose TLS client verifies serverName ("" =
// the host dialed).
func (h *HTTP) newTransport(serverName string) *http.Transport {
	spec := h.spec
	d := newDialer(spec.IPProtocol, spec.IPProtocolFallback)
	var proxy func(*http.Request) (*url.URL, error) // probes never go via $HTTP_PROXY
	var onConnect func(context.Context, *url.URL, *http.Request, *http.Response) error
	dial := markDial(d)
	if pu := spec.proxy; pu != nil {
		onConnect = func(_ context.Context, pu *url.URL, _ *http.Request, resp *http.Response) error {
			if resp.StatusCode != http.StatusOK {
				return &proxyError{proxy: pu.Host, status: resp.Status}
			}
			return nil
		}
		switch strings.ToLower(pu.Scheme) {
		case "http":
			proxy = http.ProxyURL(pu)
		case "https":
			// net/http would handshake with an https:// proxy using the
			// origin's TLS client (its server_name, its CAs) and time it
			// as the origin's tls phase. Instead the transport speaks to
			// the proxy as to an http:// one (CONNECT or absolute form,
			// Proxy-Authorization from the URL) over a connection whose
			// TLS, with http.proxy_tls, the dial has already set up.
			plain := *pu
			plain.Scheme, plain.Host = "http", proxyAddr(pu)
			proxy = http.ProxyURL(&plain)
			dial = proxyTLSDial(d, spec.proxyTLS, pu)
		case "socks5", "socks5h":
			// No HTTP with the proxy: each connection is a SOCKS5 tunnel
			// to the origin, over which the transport speaks as to the
			// origin itself (TLS with http.tls for https://).
			dial = socksDial(d, pu)
		}
	}
	return &http.Transport{
		Proxy:                  proxy,
		OnProxyConnectResponse: onConnect,
		DialContext:            dial,
		TLSClientConfig:        spec.TLS.config(serverName),
		DisableKeepAlives:      !spec.ReuseConnections,
		DisableCompression:     true, // no Accept-Encoding unless the check sends one; see contentDecoder
		MaxIdleConnsPerHost: func() int {
			if spec.ReuseConnections {
				return 4
			}
			return 0
		}(),
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		Protocols:              protocols(spec.HTTP2),
	}
}

// proxyAddr is a proxy URL's host:port, with the scheme's default port
// when it names none: 80 for http://, 443 for https://, 1080 for
// socks5:// and socks5h://.
func proxyAddr(pu *url.URL) string {
	if pu.Port() != "" {
		return pu.Host
	}
	port := "80"
	switch strings.ToLower(pu.Scheme) {
	case "https":
		port = "443"
	case "socks5", "socks5h":
		port = "1080"
	}
	return net.JoinHostPort(pu.Hostname(), port)
}

// proxyTLSDial dials an https:// proxy and runs the TLS handshake with it,
// with o (http.proxy_tls: verified against the system pool, or ca_file,
// and the proxy's host, or server_name). The handshake counts in the
// connect phase (the tls phase stays the origin's); a failed one is a
// proxyTLSError. Every connection of a transport with a proxy is to the
// proxy.
func proxyTLSDial(d *dialer, o *TLSOptions, pu *url.URL) func(context.Context, string, string) (net.Conn, error) {
	name := o.ServerName
	if name == "" {
		name = pu.Hostname()
	}
	host := proxyAddr(pu)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cfg := o.config(name)
		// Not clientCertFunc: a client certificate the proxy asks for is
		// not the origin's, whose hint (clientCertHint) it would confuse.
		cert := o.clientCert
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		}
		tc := tls.Client(raw, cfg)
		setStage(ctx, stageProxyTLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, &proxyTLSError{proxy: host, err: err}
		}
		setStage(ctx, stageTunnel)
		if t := traceFrom(ctx); t != nil {
			t.mark(&t.connDone, true)
		}
		return &markConn{Conn: tc}, nil
	}
}

// proxyTLSError is a failed TLS handshake with an https:// proxy.
type proxyTLSError struct {
	proxy string // host:port, no userinfo
	err   error
}

func (e *proxyTLSError) Error() string { return "proxy " + e.proxy + ": " + e.err.Error() }
func (e *proxyTLSError) Unwrap() error { return e.err }

// socksDial opens each connection as a SOCKS5 tunnel (RFC 1928, with
// RFC 1929 user and password auth from the URL) through the proxy, dialled
// with d. socks5h:// sends the origin's name for the proxy to resolve;
// socks5:// resolves it here (timed as the dns phase, of ip_protocol's
// family when set) and sends the address, as curl does. The tunnel's
// negotiation is in no phase, as a CONNECT is not; a refused one is a
// socksError.
func socksDial(d *dialer, pu *url.URL) func(context.Context, string, string) (net.Conn, error) {
	var auth *xproxy.Auth
	if pu.User != nil {
		pw, _ := pu.User.Password()
		auth = &xproxy.Auth{User: pu.User.Username(), Password: pw}
	}
	host := proxyAddr(pu)
	resolveHere := strings.EqualFold(pu.Scheme, "socks5")
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		target := addr
		if resolveHere {
			setStage(ctx, stageResolve)
			ip, err := d.resolveOne(ctx, addr)
			if err != nil {
				return nil, &socksResolveError{err: err}
			}
			setStage(ctx, stageNone) // the proxy's own name is the dial's
			target = ip
		}
		proxyDialed := false
		fwd := dialFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			proxyDialed = err == nil
			if proxyDialed {
				setStage(ctx, stageSOCKS)
			}
			return c, err
		})
		sd, err := xproxy.SOCKS5("tcp", host, auth, fwd)
		if err != nil {
			return nil, err
		}
		c, err := sd.(xproxy.ContextDialer).DialContext(ctx, "tcp", target)
		if err != nil {
			if !proxyDialed {
				return nil, err // the dial's error, in the trace for classify
			}
			return nil, &socksError{proxy: host, target: addr, authSent: auth != nil, err: err}
		}
		setStage(ctx, stageTunnel)
		return &markConn{Conn: c}, nil
	}
}

// dialFunc is a function as an x/net/proxy dialer.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (f dialFunc) Dial(network, addr string) (net.Conn, error) {
	return f(context.Background(), network, addr)
}

func (f dialFunc) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f(ctx, network, addr)
}

// resolveOne resolves the host of addr (host:port) to one address of the
// dialer's family (ip_protocol, with its fallback), else the resolver's
// first, and returns it with the port. A name under .invalid is NXDOMAIN
// without asking (see dialer).
func (d *dialer) resolveOne(ctx context.Context, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if net.ParseIP(host) != nil {
		return addr, nil
	}
	if isInvalidHost(host) {
		return "", &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return "", err
	}
	of := func(family string) string {
		for _, ip := range ips {
			if family == "" || (ip.IP.To4() != nil) == (family == "ip4") {
				return ip.IP.String()
			}
		}
		return ""
	}
	ip := of(d.family)
	if ip == "" && d.fallback {
		ip = of(map[string]string{"ip4": "ip6", "ip6": "ip4"}[d.family])
	}
	if ip == "" && d.family != "" {
		return "", &net.DNSError{Err: fmt.Sprintf("no IPv%s address (ip_protocol: %s)", d.family[2:], d.family), Name: host, IsNotFound: true}
	}
	if ip == "" {
		return "", &net.DNSError{Err: "no address", Name: host, IsNotFound: true}
	}
	return net.JoinHostPort(ip, port), nil
}

// socksResolveError: with a socks5:// proxy, the origin's name did not
// resolve here.
type socksResolveError struct{ err error }

func (e *socksResolveError) Error() string { return e.err.Error() }
func (e *socksResolveError) Unwrap() error { return e.err }

// socksError is a SOCKS5 tunnel the proxy refused or never set up: the
// origin was never reached.
type socksError struct {
	proxy    string // host:port, no userinfo
	target   string // the origin's host:port asked for
	authSent bool   // http.proxy_url has a user
	err      error  // x/net/proxy's
}

func (e *socksError) Error() string { return "proxy " + e.proxy + ": socks5: " + e.err.Error() }
func (e *socksError) Unwrap() error { return e.err }

// describe is the run's cause and message for the refusal. (A proxy that
// never answers is no socksError: net/http returns the run's deadline
// before the dial's error; see proxyStage.)
func (e *socksError) describe() (Cause, string) {
	inner := e.err
	var op *net.OpError
	if errors.As(inner, &op) && op.Err != nil {
		inner = op.Err
	}
	msg := inner.Error()
	switch {
	case strings.HasPrefix(msg, "unknown error "):
		// RFC 1928 §6: the proxy could not (or would not) connect.
		return CauseConnect, fmt.Sprintf("connect: proxy %s answered the SOCKS5 request for %s with %q", e.proxy, e.target, strings.TrimPrefix(msg, "unknown error "))
	case msg == "username/password authentication failed":
		return CauseConnect, fmt.Sprintf("connect: proxy %s refused the SOCKS5 user and password (username/password authentication failed)", e.proxy)
	case msg == "no acceptable authentication methods" && !e.authSent:
		return CauseConnect, fmt.Sprintf("connect: proxy %s requires SOCKS5 authentication (no acceptable authentication methods): set user:password in http.proxy_url", e.proxy)
	case msg == "no acceptable authentication methods":
		return CauseConnect, fmt.Sprintf("connect: proxy %s accepts neither no authentication nor a user and password (no acceptable authentication methods)", e.proxy)
	case errors.Is(inner, io.EOF) || errors.Is(inner, io.ErrUnexpectedEOF) || errors.Is(inner, syscall.ECONNRESET):
		return CauseConnect, fmt.Sprintf("connect: proxy %s closed the connection during the SOCKS5 handshake", e.proxy)
	}
	return CauseConnect, fmt.Sprintf("connect: proxy %s: SOCKS5 handshake failed: %s", e.proxy, rootMsg(inner))
}

// proxyStage is where a run's last dial through http.proxy_url is: the
// dial functions set it (found in the dial's context under
// proxyStageKey), so that a run whose deadline ends it there says so.
// net/http dials with the request's values but not its deadline, and
// returns the deadline's error as soon as it passes, not the dial's.
type proxyStage struct{ atomic.Int32 }

type proxyStageKey struct{}

// Values of proxyStage.
const (
	stageNone     int32 = iota
	stageProxyTLS       // in the TLS handshake with an https:// proxy
	stageSOCKS          // in the SOCKS5 negotiation
	stageResolve        // resolving the origin's name for a socks5:// proxy
	stageTunnel         // the connection through the proxy is up
)

// setStage notes the stage in ctx's proxyStage, if any.
func setStage(ctx context.Context, v int32) {
	if st, _ := ctx.Value(proxyStageKey{}).(*proxyStage); st != nil {
		st.Store(v)
	}
}

// proxyTLSCause is the cause and message of a failed TLS handshake with
// an https:// proxy: cert for a certificate that does not verify, tls
// otherwise, with the proxy named as for its dial errors. (A handshake
// the deadline cut short is no proxyTLSError: see proxyStage.)
func proxyTLSCause(e *proxyTLSError) (Cause, string) {
	suffix := " (http.proxy_url " + e.proxy + ")"
	if c, msg, ok := certCause(e.err); ok {
		return c, msg + suffix
	}
	return CauseTLS, "tls: " + strings.TrimPrefix(rootMsg(e.err), "tls: ") + suffix
}

// proxyError is a proxy's refusal of a CONNECT tunnel (http.proxy_url):
// the origin was never reached, so its cause is connect.
type proxyError struct {
	proxy  string // host:port, no userinfo
	status string // "407 Proxy Authentication Required"
}

func (e *proxyError) Error() string {
	return fmt.Sprintf("connect: proxy %s answered CONNECT with %s", e.proxy, e.status)
}

// tlsName is the TLS name for the check's own host when the request's Host
// is host ("" when none is set): tls.server_name, else the Host header's
// host without its port (as blackbox_exporter does), else "" (the URL's
// host).
func (s *HTTPSpec) tlsName(host string) string {
	if s.TLS.ServerName != "" {
		return s.TLS.ServerName
	}
	if host == "" {
		return ""
	}
	if hn, _, err := net.SplitHostPort(host); err == nil {
		return hn
	}
	return strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
}

// ownTransport is the transport for the own host when its TLS name is
// name; done releases a transport made for this run alone.
func (h *HTTP) ownTransport(name string) (rt *http.Transport, done func()) {
	if name == h.ownName {
		return h.tr, func() {}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if tr, ok := h.byName[name]; ok {
		return tr, func() {}
	}
	tr := h.newTransport(name)
	if len(h.byName) >= maxNamedTransports {
		return tr, tr.CloseIdleConnections
	}
	if h.byName == nil {
		h.byName = map[string]*http.Transport{}
	}
	h.byName[name] = tr
	return tr, func() {}
}

// headBodyAssertions rejects assertions on the body of a HEAD request,
// which gets none: not_contains and not_regex would always pass (a copy
// of a GET check's expect, say), the others always fail. The error names
// the first such key.
func headBodyAssertions(method string, e *Expect) error {
	if method != http.MethodHead {
		return nil
	}
	var key string
	switch {
	case len(e.Body.Contains) > 0:
		key = "body.contains"
	case len(e.Body.NotContains) > 0:
		key = "body.not_contains"
	case len(e.Body.Regex) > 0:
		key = "body.regex"
	case len(e.Body.NotRegex) > 0:
		key = "body.not_regex"
	case len(e.JSON) > 0:
		key = "json"
	case e.Checksum != "":
		key = "checksum"
	case e.Size.Min > 0 || e.Size.Max > 0 || e.Size.MaxSet:
		key = "size"
	default:
		return nil
	}
	return errorf(ErrConflict, "expect.%s: http.method HEAD gets no body to assert on (use GET, or drop the key)", key)
}

// markDial wraps d's connections in markConn, so a hop's first byte after
// a 1xx interim response can be timed (see runTrace.settle).
func markDial(d *dialer) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &markConn{Conn: c}, nil
	}
}

// protocols is what the transport offers for an http.http2 mode. With h2
// the transport adds "h2" to the ALPN list of its own TLS config, dials
// through DialContext and does the handshake itself, so the httptrace
// phases are the same as over HTTP/1.1. With DisableKeepAlives an h2
// connection serves one request and is closed, as an HTTP/1.1 one is.
func protocols(mode string) *http.Protocols {
	p := new(http.Protocols)
	if mode == HTTP2H2C {
		p.SetUnencryptedHTTP2(true) // prior knowledge: no HTTP/1.1 at all
		return p
	}
	p.SetHTTP1(true)
	p.SetHTTP2(mode == HTTP2Auto || mode == HTTP2Required)
	return p
}

// Close releases idle kept-alive connections (reuse_connections: true).
func (h *HTTP) Close() error {
	h.tr.CloseIdleConnections()
	h.trOther.CloseIdleConnections()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, tr := range h.byName {
		tr.CloseIdleConnections()
	}
	return nil
}

// Run performs one request against t and evaluates every assertion.
func (h *HTTP) Run(ctx context.Context, t Target) Result {
	r, _ := h.RunWith(ctx, t, RunOptions{})
	return r
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// RunWith is Run with per-run options; the Response is nil when no response
// arrived.
func (h *HTTP) RunWith(ctx context.Context, t Target, o RunOptions) (Result, *Response) {
	start := time.Now()
	res := Result{Start: start}
	ctx, cancel := h.opts.runContext(ctx)
	defer cancel()
	expand := o.Expand
	if expand == nil {
		expand = func(s string) string { return s }
	}
	target, err := h.requestURL(t, expand, o.Expand != nil)
	if err != nil {
		res.Cause, res.Err = CauseInternal, err.Error()
		res.Phases.Total = time.Since(start)
		return res, nil
	}
	if h.spec.HTTP2 == HTTP2H2C && strings.HasPrefix(strings.ToLower(target), "https://") {
		// Not caught at load when the URL is a target's: without this
		// guard net/http would speak HTTP/1.1 over TLS and the run pass
		// without any HTTP/2.
		res.Cause, res.Err = CauseInternal, "http.http2: h2c is HTTP/2 over plain http://, but this run's URL is https:// (use auto or required to negotiate h2 over TLS)"
		res.Phases.Total = time.Since(start)
		return res, nil
	}
	var body io.Reader
	switch {
	case h.spec.JSON != nil && o.Expand != nil:
		b, err := json.Marshal(expandJSON(h.spec.JSON, expand))
		if err != nil {
			res.Cause, res.Err = CauseInternal, "http.json: "+err.Error()
			return res, nil
		}
		body = bytes.NewReader(b)
	case h.spec.jsonBody != nil:
		body = bytes.NewReader(h.spec.jsonBody)
	case h.spec.Form != nil && o.Expand != nil:
		body = strings.NewReader(encodeParams(h.spec.Form, expand))
	case h.spec.Form != nil:
		body = strings.NewReader(h.spec.formBody)
	case h.spec.Body != "":
		body = strings.NewReader(expand(h.spec.Body))
	}
	tr := &runTrace{start: start, timeout: h.opts.Timeout}
	rctx := tr.withTrace(ctx)
	var stage *proxyStage
	if h.spec.proxy != nil {
		stage = new(proxyStage)
		rctx = context.WithValue(rctx, proxyStageKey{}, stage)
	}
	req, err := http.NewRequestWithContext(rctx, h.spec.Method, target, body)
	if err != nil {
		// The URL is not quoted: after expansion it may hold a secret.
		res.Cause, res.Err = CauseInternal, "http: cannot build the request: invalid method or URL"
		return res, nil
	}
	req.Header.Set("User-Agent", h.ua)
	if h.opts.Check != "" {
		req.Header.Set(CheckHeader, h.opts.Check)
	}
	for k, vs := range h.spec.headers {
		for i, v := range vs {
			v = expand(v)
			if why := badHeaderValue(v); why != "" {
				// The value is not shown: it may hold a secret.
				res.Cause, res.Err = CauseInternal, fmt.Sprintf("http.headers.%s: the value %s%s, which cannot be sent in a header", k, why, afterSubst(o.Expand != nil))
				res.Phases.Total = time.Since(start)
				return res, nil
			}
			if i == 0 {
				req.Header.Set(k, v)
			} else {
				req.Header.Add(k, v)
			}
		}
	}
	if h.spec.host != "" {
		req.Host = expand(h.spec.host)
		if why := badHeaderValue(req.Host); why != "" {
			res.Cause, res.Err = CauseInternal, fmt.Sprintf("http.headers.Host: the value %s%s, which cannot be sent in a header", why, afterSubst(o.Expand != nil))
			res.Phases.Total = time.Since(start)
			return res, nil
		}
	}
	if ba := h.spec.BasicAuth; ba != nil {
		user, pass := expand(ba.Username), expand(ba.Password)
		if o.Expand != nil && strings.Contains(user, ":") {
			res.Cause, res.Err = CauseInternal, "http.basic_auth.username: after variables are substituted it contains \":\", which Basic authentication cannot carry (RFC 7617)"
			res.Phases.Total = time.Since(start)
			return res, nil
		}
		req.SetBasicAuth(user, pass)
	}
	own, done := h.ownTransport(h.spec.tlsName(req.Host))
	defer done()
	hops := hopTransport{own: own, other: h.trOther, ownHost: req.URL.Hostname()}
	client := http.Client{Transport: hops, Jar: o.Jar}
	if !h.spec.FollowRedirects {
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	} else {
		client.CheckRedirect = h.checkRedirect
	}

	resp, err := client.Do(req)
	if err != nil {
		end := time.Now()
		res.Phases = tr.phases(end)
		res.Phases.Transfer = 0
		res.Cause, res.Err = classify(err, tr, end.Sub(start))
		if h.spec.HTTP2 == HTTP2H2C && (res.Cause == CauseInternal || res.Cause == CauseReset) && !strings.Contains(res.Err, "(HTTP/2 ") {
			// Connected, but no HTTP/2 came back: an HTTP/1.1-only origin
			// answers the h2c preface with an HTTP/1.1 error or a close.
			res.Cause, res.Err = CauseProtocol, "protocol: no HTTP/2 answer to h2c (http2: h2c): "+res.Err
		}
		var pte *proxyTLSError
		if certs := certsFromErr(err); len(certs) > 0 && !errors.As(err, &pte) {
			(certTLS{presented: certs}).expiries(&res)
		}
		if p := h.spec.proxy; p != nil {
			var se *socksError
			var sre *socksResolveError
			within, timedOut := strings.CutPrefix(res.Err, "timeout: no response within ")
			switch {
			case timedOut && stage.Load() == stageProxyTLS:
				// The dial's error or the run's deadline, whichever
				// net/http saw first.
				res.Cause, res.Err = CauseTLS, "tls: handshake not finished within "+within+" (http.proxy_url "+proxyAddr(p)+")"
				return res, nil
			case timedOut && stage.Load() == stageSOCKS:
				res.Cause, res.Err = CauseConnectTimeout, "connect: proxy "+proxyAddr(p)+" did not answer the SOCKS5 handshake within "+within
				return res, nil
			case errors.As(err, &se):
				res.Cause, res.Err = se.describe()
				return res, nil
			case errors.As(err, &sre), res.Cause == CauseDNS && stage.Load() == stageResolve:
				// The origin's name, resolved here (socks5://), not the
				// proxy's.
				res.Err += " (the origin's name, resolved here for a socks5:// http.proxy_url; socks5h:// has the proxy resolve it)"
				return res, nil
			case pte != nil:
				res.Cause, res.Err = proxyTLSCause(pte)
				return res, nil
			}
			switch res.Cause {
			case CauseDNS, CauseConnectRefused, CauseConnectTimeout, CauseConnect:
				// With a proxy every dial is to the proxy.
				if !strings.Contains(res.Err, "proxy "+p.Host) {
					res.Err += " (http.proxy_url " + p.Host + ")"
				}
			case CauseTimeout:
				// Connected to the proxy, no TLS begun and no byte back
				// on an https request: the CONNECT got no answer, so the
				// origin was never reached.
				var ue *url.Error
				tr.mu.Lock()
				waiting := tr.connected && tr.tlsStart.IsZero() && tr.firstByte.IsZero()
				tr.mu.Unlock()
				if waiting && errors.As(err, &ue) && strings.HasPrefix(ue.URL, "https:") && !strings.HasPrefix(strings.ToLower(p.Scheme), "socks") {
					if within, ok := strings.CutPrefix(res.Err, "timeout: no response within "); ok {
						res.Cause, res.Err = CauseConnectTimeout, "connect: proxy "+p.Host+" did not answer CONNECT within "+within
					}
				}
			}
		}
		return res, nil
	}
	res.StatusCode = resp.StatusCode
	res.Proto = resp.Proto

	obs := observation{status: resp.StatusCode, header: resp.Header, limit: int64(h.spec.BodyLimit), now: start}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		obs.cert = &certTLS{presented: resp.TLS.PeerCertificates, chains: resp.TLS.VerifiedChains}
		obs.cert.expiries(&res)
	}
	keep := o.KeepBody || len(h.expect.Body.Contains)+len(h.expect.Body.NotContains)+len(h.expect.bodyRegex)+len(h.expect.bodyNotRe)+len(h.expect.json) > 0
	var sum hash.Hash
	if h.expect.sum != nil {
		sum = newHash(h.expect.sum.algo)
	}
	// Content assertions see the decoded body (see contentDecoder), unless
	// raw_body; a check that asserts nothing on the content reads the bytes
	// as served.
	src, length := io.Reader(resp.Body), resp.ContentLength
	if (keep || sum != nil || h.expect.Size != (SizeExpect{})) && !h.spec.RawBody {
		if ce := resp.Header.Values("Content-Encoding"); len(ce) > 0 {
			src, obs.undecoded = contentDecoder(resp.Body, ce)
			if obs.undecoded == "" {
				length = -1
			}
		}
	}
	var spare []byte
	if keep && !o.KeepBody {
		spare = h.takeBody()
	}
	readErr := readBody(src, obs.limit, length, sum, keep, &obs, spare)
	resp.Body.Close()
	end := time.Now()
	res.Phases = tr.phases(end)
	if res.Phases.TTFB == 0 { // defensive: a response always has a first byte
		res.Phases.TTFB = res.Phases.Total
	}
	obs.ttfb, obs.total = res.Phases.TTFB, res.Phases.Total
	if sum != nil {
		obs.digest = sum.Sum(nil)
	}

	out := &Response{StatusCode: resp.StatusCode, Header: resp.Header, URL: resp.Request.URL.String()}
	if o.KeepBody {
		out.Body = obs.body
	}
	var v verdict
	if h.spec.HTTP2 == HTTP2Required {
		msg := fmt.Sprintf("protocol %s, want HTTP/2.0 (http2: required)", resp.Proto)
		if resp.TLS == nil {
			msg += "; plain http:// offers no h2"
		}
		v.add(CauseProtocol, "protocol", resp.ProtoMajor == 2, resp.Proto, "HTTP/2.0", msg)
	}
	h.expect.evalTransport(resp, &v)
	h.expect.evalHTTP(&obs, &v)
	res.Assertions = v.list
	if keep && !o.KeepBody {
		// The assertions copied what they show (Got, Err): nothing of
		// the result refers to the buffer, which the next run reuses. A
		// body handed to the caller (o.KeepBody) is the caller's.
		h.putBody(obs.body)
		obs.body = nil
	}
	var decErr *decodeError
	if errors.As(readErr, &decErr) {
		res.Cause, res.Err = CauseProtocol, "protocol: "+decErr.Error()
		return res, out
	}
	if readErr != nil {
		res.Cause, res.Err = classify(readErr, tr, end.Sub(start))
		if res.Cause != CauseTimeout {
			res.Err = "reading body: " + res.Err
		}
		return res, out
	}
	if v.cause != "" {
		res.Cause, res.Err = v.cause, v.err
		return res, out
	}
	res.OK = true
	return res, out
}

// evalTransport runs expect.fail_if_not_ssl and fail_if_ssl on the final
// response: whether it came over TLS. Both fail with cause protocol; the
// message names the final URL as every URL is shown (units.RedactURL).
func (e *Expect) evalTransport(resp *http.Response, v *verdict) {
	if !e.FailIfNotSSL && !e.FailIfSSL {
		return
	}
	got := "plain http"
	if resp.TLS != nil {
		got = "TLS " + tlsVersionName(resp.TLS.Version)
	}
	at := units.RedactURL(resp.Request.URL.String())
	if e.FailIfNotSSL {
		v.add(CauseProtocol, "fail_if_not_ssl", resp.TLS != nil, got, "TLS",
			fmt.Sprintf("protocol: the final response (%s) came over plain http, want TLS (expect.fail_if_not_ssl)", at))
	}
	if e.FailIfSSL {
		v.add(CauseProtocol, "fail_if_ssl", resp.TLS == nil, got, "plain http",
			fmt.Sprintf("protocol: the final response (%s) came over %s, want plain http (expect.fail_if_ssl)", at, got))
	}
}

// tlsVersionName is "1.2" for tls.VersionTLS12, and so on.
func tlsVersionName(v uint16) string {
	return strings.TrimPrefix(tls.VersionName(v), "TLS ")
}

// maxRedirects is how many redirects http.follow_redirects follows, as
// blackbox_exporter does: a chain of 10 is followed, an 11th redirect
// fails. (net/http's default policy stops at the 10th, following 9.)
const maxRedirects = 10

// redirectError ends a run that was redirected more than maxRedirects
// times, or to a scheme other than http(s): the origin's doing, so its
// cause is protocol, not internal.
type redirectError struct {
	// loop is true when a redirect led back to a URL already requested.
	loop bool
	// scheme is set when a Location named a scheme other than http(s).
	scheme string
}

func (e *redirectError) Error() string {
	if e.scheme != "" {
		return fmt.Sprintf("protocol: redirected to an unsupported scheme %q", e.scheme)
	}
	if e.loop {
		return fmt.Sprintf("protocol: redirect loop: stopped after %d redirects (a Location led back to a URL already requested)", maxRedirects)
	}
	return fmt.Sprintf("protocol: stopped after %d redirects", maxRedirects)
}

// checkRedirect is net/http's default redirect policy with a typed error,
// and with the request's credentials kept on the origin: net/http copies
// every header of the first request to each redirect and drops
// Authorization and Cookie only when the host name changes (not on
// another port, nor from https to http on the same host), and it adds a
// Referer holding the previous URL (query included). So on a redirect to
// another host (host:port of the first request) or from https to http,
// every header of http.headers but Content-Type is dropped, and so are
// Authorization (basic_auth's) and Cookie, as curl does since
// CVE-2022-27776 (a URL's userinfo is not carried to another host
// either: net/http builds its Authorization per request); a script's
// cookie jar still adds the cookies it holds for the new URL, by the
// cookies' own domain rules. Referer is never sent.
// URLs are not quoted: they may hold secrets.
func (h *HTTP) checkRedirect(req *http.Request, via []*http.Request) error {
	if sc := req.URL.Scheme; sc != "http" && sc != "https" {
		return &redirectError{scheme: abbrev(sc, 16)}
	}
	req.Header.Del("Referer")
	if first := via[0].URL; !sameOrigin(first, req.URL) {
		for k := range h.spec.headers {
			if k != "Content-Type" { // describes a body a 307/308 sends again
				req.Header.Del(k)
			}
		}
		// Copied from the first request by net/http when only the port
		// or the scheme changed. The jar's cookies are added after this
		// (http.Client.send), for the new URL.
		req.Header.Del("Authorization")
		req.Header.Del("Cookie")
	}
	// via holds the requests made so far: len(via) is the number of this
	// redirect.
	if len(via) <= maxRedirects {
		return nil
	}
	e := &redirectError{}
	for _, v := range via {
		if v.URL.String() == req.URL.String() {
			e.loop = true
		}
	}
	return e
}

// sameOrigin reports whether a redirect from first to next may carry the
// configured headers: same host and port, and not from https to http.
func sameOrigin(first, next *url.URL) bool {
	if first.Scheme == "https" && next.Scheme != "https" {
		return false
	}
	return strings.EqualFold(hostPortOf(first), hostPortOf(next))
}

// hostPortOf is u's host with its port, the scheme's default when none.
func hostPortOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// readBody streams up to limit bytes through sum (when set) and, when keep,
// into obs.body; it notes whether the body was longer than limit.
//
// Memory: a kept body lives in one buffer that the reads fill directly
// (no intermediate chunk, no copy for the matchers, which work on the
// bytes). The buffer is spare, a buffer of the check's earlier runs, when
// it is large enough (HTTP.takeBody): from its second run on a check reads
// a body no larger than before into memory already in use, so the timed
// transfer pays for the origin's bytes only, not for growing and faulting
// in fresh buffers (a 5 MiB chunked body took 10–20× longer kept than
// streamed on a VM slow to fault memory in). Otherwise, with a
// Content-Length the buffer is allocated once at min(length, limit);
// without one it starts at 64 KiB (or spare's size) and grows 4× at a time
// up to limit, so all buffers of a run add up to at most 4/3 of the final
// one. It grows only when a byte beyond it actually arrived (a one-byte
// probe), so a body that fills it exactly is not copied.
func readBody(r io.Reader, limit, contentLength int64, sum hash.Hash, keep bool, obs *observation, spare []byte) error {
	if !keep {
		return streamBody(r, limit, sum, obs)
	}
	size := min(int64(initialBodyBuf), limit)
	if contentLength >= 0 {
		size = min(contentLength, limit)
	}
	var buf []byte
	if c := int64(cap(spare)); c >= size || contentLength < 0 && c > 0 {
		// At most limit: a full buffer of limit bytes marks the body
		// truncated.
		buf = spare[:0:min(c, max(limit, 0))]
	} else {
		buf = make([]byte, 0, size)
	}
	var probe [1]byte
	for {
		if len(buf) == cap(buf) {
			// Full: is there more?
			k, err := io.ReadFull(r, probe[:])
			if k == 0 {
				obs.size, obs.body = int64(len(buf)), buf
				if err == io.EOF {
					return nil
				}
				return err
			}
			if int64(len(buf)) >= limit {
				obs.truncated = true
				obs.size, obs.body = int64(len(buf)), buf
				return nil
			}
			grown := make([]byte, len(buf), min(limit, max(4*int64(cap(buf)), initialBodyBuf)))
			copy(grown, buf)
			buf = append(grown, probe[0])
			if sum != nil {
				sum.Write(probe[:])
			}
		}
		k, err := r.Read(buf[len(buf):cap(buf)])
		if k > 0 {
			if sum != nil {
				sum.Write(buf[len(buf) : len(buf)+k])
			}
			buf = buf[:len(buf)+k]
		}
		if err == io.EOF {
			obs.size, obs.body = int64(len(buf)), buf
			return nil
		}
		if err != nil {
			obs.size, obs.body = int64(len(buf)), buf
			return err
		}
	}
}

// initialBodyBuf is the first buffer for a kept body of unknown length.
const initialBodyBuf = 64 << 10

// streamBody reads up to limit bytes through sum without keeping them.
func streamBody(r io.Reader, limit int64, sum hash.Hash, obs *observation) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	p := *bp
	var n int64
	lr := io.LimitReader(r, limit+1)
	for {
		k, err := lr.Read(p)
		if k > 0 {
			chunk := p[:k]
			if n+int64(k) > limit {
				chunk = chunk[:limit-n]
				obs.truncated = true
			}
			n += int64(len(chunk))
			if sum != nil {
				sum.Write(chunk)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			obs.size = n
			return err
		}
	}
	obs.size = n
	return nil
}

func newHash(algo string) hash.Hash {
	switch algo {
	case "sha1":
		return sha1.New()
	case "md5":
		return md5.New()
	case "crc32":
		return crc32.NewIEEE()
	}
	return sha256.New()
}

// requestURL builds the URL of one run: http.url, or the target base plus
// http.path, expanded, then http.query (encoded after expansion) and the
// cache-busting parameter. A URL whose query holds what cannot go in a
// request line (a substituted value with a space, say) is an error naming
// the key, never sent; the URL itself is not quoted (it may hold a
// secret).
func (h *HTTP) requestURL(t Target, expand func(string) string, substituted bool) (string, error) {
	var raw string
	key := "http.path"
	if h.spec.URL != "" {
		key = "http.url"
		raw = expand(h.spec.URL)
	} else {
		if !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "https://") {
			return "", errorf(ErrBadURL, "target %q: want an http:// or https:// URL", units.RedactURL(t.URL))
		}
		raw = JoinTargetPath(t.URL, expand(h.spec.Path))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errorf(ErrBadURL, "%s: the request URL does not parse (%s)%s", key, urlErrKind(err), queryHint(substituted))
	}
	if why := badRequestText(u.RawQuery); why != "" {
		what := "the request URL's query"
		if substituted {
			what = "after variables are substituted, the request URL's query"
		}
		return "", errorf(ErrBadURL, "%s: %s %s, which cannot be sent in a request line; put the parameters in http.query (values are percent-encoded)", key, what, why)
	}
	query := h.spec.query
	if substituted {
		query = encodeParams(h.spec.Query, expand)
	}
	if query == "" && !h.spec.CacheBust {
		return raw, nil
	}
	q := u.RawQuery
	if query != "" {
		if q != "" {
			q += "&"
		}
		q += query
	}
	if h.spec.CacheBust {
		if q != "" {
			q += "&"
		}
		q += CacheBustParam + "=" + strconv.FormatUint(rand.Uint64(), 36)
	}
	u.RawQuery = q
	return u.String(), nil
}

// afterSubst is the words that say a bad value came from substitution.
func afterSubst(substituted bool) string {
	if substituted {
		return " after variables are substituted"
	}
	return ""
}

// queryHint suggests http.query for a URL built from variables.
func queryHint(substituted bool) string {
	if !substituted {
		return ""
	}
	return "; a value substituted into it may need encoding: put query parameters in http.query"
}

// expandJSON applies expand to every string in a decoded JSON/YAML value.
func expandJSON(v any, expand func(string) string) any {
	switch x := v.(type) {
	case string:
		return expand(x)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = expandJSON(e, expand)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = expandJSON(e, expand)
		}
		return s
	}
	return v
}

// urlErrKind is a url.Parse error without the URL itself.
func urlErrKind(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return "invalid URL"
}

// JoinTargetPath joins a target's base URL and a check's path (which may
// carry its own query). Without a path the target's URL is requested as
// written ("http://h/healthz" stays /healthz; "http://h" gets "/"). A query
// on the target ("http://h/?key=k") is kept and comes after the path's; a
// fragment on the target is dropped.
func JoinTargetPath(base, path string) string {
	if i := strings.IndexByte(base, '#'); i >= 0 {
		base = base[:i]
	}
	var baseQuery string
	if i := strings.IndexByte(base, '?'); i >= 0 {
		base, baseQuery = base[:i], base[i+1:]
	}
	raw := strings.TrimRight(base, "/")
	switch {
	case path == "":
		raw = base
		hostPath := base
		if i := strings.Index(base, "://"); i >= 0 {
			hostPath = base[i+3:]
		}
		if !strings.Contains(hostPath, "/") {
			raw += "/"
		}
	case strings.HasPrefix(path, "/"):
		raw += path
	default:
		raw += "/" + path
	}
	if baseQuery != "" {
		if strings.Contains(raw, "?") {
			raw += "&" + baseQuery
		} else {
			raw += "?" + baseQuery
		}
	}
	return raw
}
