package checks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/vigil-synthetics/vigil/checks/grpchealth"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

// GRPCHealthPath is the method a grpc check calls: the gRPC health
// checking protocol's Check (grpc.health.v1.Health/Check).
const GRPCHealthPath = grpchealth.Path

// GRPCSpec is a gRPC health check (config key `grpc:`): one call of
// grpc.health.v1.Health/Check over HTTP/2, which passes only when the
// server answers SERVING.
type GRPCSpec struct {
	// Service is the service name asked about (HealthCheckRequest.service),
	// e.g. "helloworld.Greeter". Default "": the server as a whole.
	Service string `mapstructure:"service"`
	// TLS is the TLS client, with the keys of http.tls
	// (insecure_skip_verify, ca_file, server_name, min_version,
	// cert_file, key_file), h2 negotiated by ALPN. `tls: false` speaks
	// HTTP/2 in plain text with prior knowledge (h2c), as a gRPC server
	// without TLS expects. Default (unset, or `tls: true`): TLS with
	// verification against the system pool and the target's host, TLS 1.2
	// or later.
	TLS *GRPCTLS `mapstructure:"tls"`
	// UserAgent is the User-Agent sent. Default "vigil/<version>".
	UserAgent string `mapstructure:"user_agent"`
	// IPProtocol and IPProtocolFallback choose the address family
	// dialled, as for http checks. Default: both.
	IPProtocol         string `mapstructure:"ip_protocol"`
	IPProtocolFallback bool   `mapstructure:"ip_protocol_fallback"`

	compiled bool
	tls      *TLSOptions // nil for h2c
	body     []byte      // the framed HealthCheckRequest
}

// GRPCTLS is grpc.tls: TLS settings, or `false` for plain-text HTTP/2
// (h2c). See GRPCSpec.TLS.
type GRPCTLS struct {
	TLSOptions `mapstructure:",squash"`

	off bool // `tls: false`
}

// GRPCTLSOff is the value of `tls: false`: plain-text HTTP/2 (h2c).
func GRPCTLSOff() *GRPCTLS { return &GRPCTLS{off: true} }

// Off reports whether the value is `tls: false` (h2c).
func (t *GRPCTLS) Off() bool { return t != nil && t.off }

// UsesTLS reports whether the check speaks TLS (it does unless `tls:
// false`).
func (s *GRPCSpec) UsesTLS() bool { return !s.TLS.Off() }

// Warnings lists the settings of grpc.tls that weaken it
// (insecure_skip_verify, a min_version below 1.2), each as "key: value:
// why", keys relative to `grpc`.
func (s *GRPCSpec) Warnings() []string {
	if s.TLS == nil || s.TLS.off {
		return nil
	}
	return s.TLS.TLSOptions.warningsAt("tls.")
}

// ValidateAndSetDefaults loads the TLS settings and encodes the request.
// Errors start with the key relative to `grpc`.
func (s *GRPCSpec) ValidateAndSetDefaults() error {
	var errs []error
	if strings.ContainsAny(s.Service, "\r\n") {
		errs = append(errs, errorf(ErrBadValue, "service: %q contains a line break", s.Service))
	}
	s.tls = nil
	if s.UsesTLS() {
		if s.TLS == nil {
			s.TLS = &GRPCTLS{}
		}
		if err := s.TLS.TLSOptions.ValidateAndSetDefaults(); err != nil {
			errs = append(errs, units.Prefix("tls", err))
		}
		s.tls = &s.TLS.TLSOptions
	}
	errs = append(errs, checkIPProtocol(&s.IPProtocol, s.IPProtocolFallback))
	s.body = grpchealth.Request(s.Service)
	err := errors.Join(errs...)
	s.compiled = err == nil
	return err
}

// URLFits reports whether a target URL suits the check: an http:// URL
// is plain text, so it needs `tls: false`; an https:// or tls:// URL needs
// TLS; a user or password in it would be dropped (ErrBadURL: the check
// sends none). The error (ErrConflict) starts with the key, "grpc.tls: ". It may
// be called before or after ValidateAndSetDefaults.
func (s *GRPCSpec) URLFits(rawURL string) error {
	if pu, err := url.Parse(rawURL); err == nil && pu.User != nil {
		return errorf(ErrBadURL, "a grpc check sends no user or password: remove the \"user:…@\" from the URL")
	}
	u := strings.ToLower(rawURL)
	switch {
	case s.UsesTLS() && strings.HasPrefix(u, "http://"):
		return errorf(ErrConflict, "grpc.tls: an http:// URL is plain text: set grpc.tls: false for h2c, or use an https:// URL")
	case !s.UsesTLS() && (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "tls://")):
		return errorf(ErrConflict, "grpc.tls: false is plain-text HTTP/2 (h2c), but the URL is %s: drop tls: false, or use an http:// URL", rawURL[:strings.Index(rawURL, "://")+3])
	}
	return nil
}

// GRPC is a compiled gRPC health check. Expect keys accepted: ttfb (the
// first byte of the response head), duration and, over TLS,
// cert_min_days. Safe for concurrent Run.
type GRPC struct {
	spec   GRPCSpec
	expect Expect
	opts   Options
	ua     string
}

var _ Check = (*GRPC)(nil)

// NewGRPC compiles a gRPC health check. Errors are prefixed "grpc." and
// "expect.".
func NewGRPC(spec GRPCSpec, expect Expect, o Options) (*GRPC, error) {
	if err := compileProbe("grpc", &spec, spec.compiled, &expect); err != nil {
		return nil, err
	}
	if expect.CertMinDays > 0 && spec.tls == nil {
		return nil, errorf(ErrUnsupported, "expect.cert_min_days: a grpc check with tls: false sees no certificate")
	}
	o.setDefaults()
	g := &GRPC{spec: spec, expect: expect, opts: o, ua: spec.UserAgent}
	if g.ua == "" {
		g.ua = "vigil/" + o.Version
	}
	return g, nil
}

// transport is a one-connection HTTP/2 transport for one run: over TLS
// (h2 by ALPN, nothing else offered; a server that does not choose h2
// fails the handshake with a grpcNoH2Error) or h2c with prior knowledge.
// The TLS client is the http checks' (TLSOptions.config). The run's
// connection is noted in st.
func (g *GRPC) transport(host string, st *grpcConnState) *http.Transport {
	d := newDialer(g.spec.IPProtocol, g.spec.IPProtocolFallback)
	p := new(http.Protocols)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			fc := &firstBytesConn{Conn: c}
			st.conn.Store(fc)
			return fc, nil
		},
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 1 << 20,
		Protocols:              p,
	}
	if g.spec.tls == nil {
		p.SetUnencryptedHTTP2(true)
		return tr
	}
	p.SetHTTP2(true)
	name := g.spec.tls.ServerName
	if name == "" {
		name = host
	}
	tr.TLSClientConfig = g.spec.tls.config(name)
	// After the chain and the name are verified (or skipped): an HTTP/1.1
	// server would be sent the call in HTTP/1.1 and answer nothing
	// useful, or never.
	tr.TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error {
		if cs.NegotiatedProtocol != "h2" {
			st.setCerts(cs.PeerCertificates)
			return &grpcNoH2Error{proto: cs.NegotiatedProtocol}
		}
		return nil
	}
	return tr
}

// grpcConnState is what a run's transport saw of its connection.
type grpcConnState struct {
	conn  atomic.Pointer[firstBytesConn]
	mu    sync.Mutex
	certs []*x509.Certificate // presented by a server that did not choose h2
}

func (s *grpcConnState) setCerts(c []*x509.Certificate) {
	s.mu.Lock()
	s.certs = c
	s.mu.Unlock()
}

func (s *grpcConnState) peerCerts() []*x509.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.certs
}

// firstBytes is the start of what the server sent (nil before a
// connection).
func (s *grpcConnState) firstBytes() []byte {
	if c := s.conn.Load(); c != nil {
		return c.first()
	}
	return nil
}

// firstBytesConn keeps the first bytes read from a connection, to tell
// what answered when it was no HTTP/2.
type firstBytesConn struct {
	net.Conn
	mu  sync.Mutex
	buf []byte
}

const firstBytesKept = 128

func (c *firstBytesConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		if k := firstBytesKept - len(c.buf); k > 0 {
			c.buf = append(c.buf, p[:min(n, k)]...)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *firstBytesConn) first() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf)
}

// grpcNoH2Error: the TLS server chose a protocol other than h2 by ALPN
// ("" for none).
type grpcNoH2Error struct{ proto string }

func (e *grpcNoH2Error) Error() string {
	if e.proto == "" {
		return "it chose no ALPN protocol: an HTTP/1.1 server"
	}
	return "it chose ALPN " + strconv.Quote(e.proto)
}

// grpcNoH2Msg is the error of a run whose TLS server did not negotiate
// h2.
const grpcNoH2Msg = "protocol: the server did not negotiate HTTP/2 (ALPN h2): not a gRPC server?"

// h2cAnswer says what answered an h2c call that got no HTTP/2 back, from
// the first bytes the server sent: a TLS record, an HTTP/1.x status
// line, or nothing before the connection ended. "" when it cannot tell.
func h2cAnswer(first []byte) string {
	const tlsHint = " (a TLS server? drop tls: false)"
	switch {
	case len(first) == 0:
		// A TLS server closes on the h2c preface, which is no TLS record
		// (net/http: a reset, or "client conn could not be established").
		return "the connection was closed without an answer" + tlsHint
	case len(first) >= 3 && (first[0] == 0x15 || first[0] == 0x16) && first[1] == 0x03:
		return "the server answered in TLS (drop tls: false)"
	case bytes.HasPrefix(first, []byte("HTTP/1.")):
		line, _, _ := bytes.Cut(first, []byte("\n"))
		line = bytes.TrimRight(line, "\r")
		hint := ""
		if bytes.Contains(bytes.ToUpper(first), []byte("HTTPS")) {
			hint = tlsHint // nginx: "The plain HTTP request was sent to HTTPS port"
		}
		return fmt.Sprintf("the server answered in HTTP/1.1 (%s)%s", strconv.Quote(abbrev(string(line), 80)), hint)
	}
	return ""
}

// Run calls Health/Check on t (https://host[:port], tls://host[:port] —
// port 443 by default —, http://host[:port] with tls: false, or
// tcp://host:port) and passes when the answer is grpc-status 0 with
// SERVING.
func (g *GRPC) Run(ctx context.Context, t Target) Result {
	start := time.Now()
	res := Result{Start: start}
	ctx, cancel := g.opts.runContext(ctx)
	defer cancel()
	defPort := "443"
	if g.spec.tls == nil {
		defPort = "80"
	}
	addr, err := hostPort(t.URL, defPort)
	if err != nil {
		res.Cause, res.Err = CauseInternal, err.Error()
		return res
	}
	if err := g.spec.URLFits(t.URL); err != nil {
		res.Cause, res.Err = CauseInternal, err.Error()
		return res
	}
	host, _, _ := net.SplitHostPort(addr)
	scheme := "https"
	if g.spec.tls == nil {
		scheme = "http"
	}
	tr := &runTrace{start: start, timeout: g.opts.Timeout}
	rctx := tr.withTrace(ctx)
	u := &url.URL{Scheme: scheme, Host: addr, Path: GRPCHealthPath}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, u.String(), bytes.NewReader(g.spec.body))
	if err != nil {
		res.Cause, res.Err = CauseInternal, "grpc: cannot build the request: "+err.Error()
		return res
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	req.Header.Set("User-Agent", g.ua)
	if g.opts.Check != "" {
		req.Header.Set(CheckHeader, g.opts.Check)
	}
	if dl, ok := ctx.Deadline(); ok {
		// The server gives up when the check does (gRPC over HTTP/2:
		// "grpc-timeout", at most 8 digits).
		if ms := time.Until(dl).Milliseconds(); ms > 0 && ms < 1e8 {
			req.Header.Set("Grpc-Timeout", strconv.FormatInt(ms, 10)+"m")
		}
	}
	var st grpcConnState
	rt := g.transport(host, &st)
	defer rt.CloseIdleConnections()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		end := time.Now()
		res.Phases = tr.phases(end)
		res.Phases.Transfer = 0
		res.Cause, res.Err = classify(err, tr, end.Sub(start))
		var noH2 *grpcNoH2Error
		switch {
		case errors.As(err, &noH2):
			res.Cause, res.Err = CauseProtocol, grpcNoH2Msg+" ("+noH2.Error()+")"
		case g.spec.tls != nil && strings.Contains(res.Err, "tls: no application protocol"):
			res.Cause, res.Err = CauseProtocol, grpcNoH2Msg+" (it refused h2 with the TLS alert no_application_protocol)"
		case g.spec.tls != nil && errors.As(err, new(tls.RecordHeaderError)):
			// What came back is no TLS record: an h2c gRPC server's
			// SETTINGS frame, an HTTP/1.1 server's 400.
			res.Err += " (a plain-text server? set grpc.tls: false)"
		case g.spec.tls == nil && (res.Cause == CauseInternal || res.Cause == CauseReset) && !strings.Contains(res.Err, "(HTTP/2 "):
			// Connected, but no HTTP/2 came back: an HTTP/1.1 server
			// answers the h2c preface with an error, a TLS server closes.
			what := h2cAnswer(st.firstBytes())
			if what == "" {
				what = res.Err
			}
			res.Cause, res.Err = CauseProtocol, "protocol: no HTTP/2 answer to h2c (grpc.tls: false): "+what
		}
		certs := certsFromErr(err)
		if len(certs) == 0 {
			certs = st.peerCerts()
		}
		if len(certs) > 0 {
			(certTLS{presented: certs}).expiries(&res)
		}
		return res
	}
	res.StatusCode = resp.StatusCode
	res.Proto = resp.Proto
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, grpchealth.MaxResponse+1))
	resp.Body.Close()
	end := time.Now()
	res.Phases = tr.phases(end)
	obs := observation{ttfb: res.Phases.TTFB, total: res.Phases.Total, now: start}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		obs.cert = &certTLS{presented: resp.TLS.PeerCertificates, chains: resp.TLS.VerifiedChains}
		obs.cert.expiries(&res)
	}
	if readErr != nil {
		res.Cause, res.Err = classify(readErr, tr, end.Sub(start))
		if res.Cause != CauseTimeout {
			res.Err = "reading the grpc response: " + res.Err
		}
		return res
	}

	var v verdict
	g.evalHealth(resp, body, &v)
	g.expect.evalCommon(&obs, &v)
	v.judge(&res)
	return res
}

// evalHealth judges the answer: a gRPC answer at all (HTTP 200 with a
// Content-Type application/grpc, else cause protocol), its grpc-status
// (0, else cause status) and the HealthCheckResponse's status (SERVING,
// else cause status). Each message names the service asked about.
func (g *GRPC) evalHealth(resp *http.Response, body []byte, v *verdict) {
	svc := "the server"
	if g.spec.Service != "" {
		svc = "service " + strconv.Quote(g.spec.Service)
	}
	ct := resp.Header.Get("Content-Type")
	isGRPC := resp.StatusCode == http.StatusOK && (ct == "application/grpc" || strings.HasPrefix(ct, "application/grpc+") || strings.HasPrefix(ct, "application/grpc;"))
	if !isGRPC {
		got := fmt.Sprintf("HTTP %d, Content-Type %q", resp.StatusCode, ct)
		if ct == "" {
			got = fmt.Sprintf("HTTP %d, no Content-Type", resp.StatusCode)
		}
		v.add(CauseProtocol, "grpc", false, got, "HTTP 200, application/grpc",
			fmt.Sprintf("protocol: not a gRPC answer to %s: %s over %s", GRPCHealthPath, got, resp.Proto))
		return
	}
	gs := resp.Trailer.Get("Grpc-Status")
	msg := resp.Trailer.Get("Grpc-Message")
	if gs == "" { // a trailers-only answer carries them in the head
		gs, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if m, err := url.PathUnescape(msg); err == nil {
		msg = m // grpc-message is percent-encoded
	}
	switch {
	case gs == "":
		v.add(CauseProtocol, "grpc-status", false, "(absent)", "0 (OK)",
			"protocol: the gRPC answer has no grpc-status (the stream ended without trailers)")
		return
	case gs != "0":
		got := grpchealth.StatusName(gs)
		detail := ""
		if msg != "" {
			detail = ": " + strconv.Quote(abbrev(ShownServerText(msg), 200))
		}
		hint := ""
		switch gs {
		case "5":
			hint = " (the health service does not know " + svc + ")"
		case "12":
			hint = " (the server has no grpc.health.v1 health service)"
		}
		v.add(CauseStatus, "grpc-status", false, got, "0 (OK)",
			fmt.Sprintf("grpc health of %s: grpc-status %s%s%s", svc, got, detail, hint))
		return
	}
	v.add(CauseStatus, "grpc-status", true, "0 (OK)", "0 (OK)", "")
	st, err := grpchealth.ServingStatus(body)
	if err != nil {
		v.add(CauseProtocol, "serving status", false, "("+err.Error()+")", "SERVING",
			fmt.Sprintf("protocol: grpc health of %s: grpc-status 0 (OK) but %s", svc, err))
		return
	}
	name := grpchealth.ServingNames[st]
	if name == "" {
		name = strconv.FormatUint(st, 10)
	}
	v.add(CauseStatus, "serving status", st == 1, name, "SERVING",
		fmt.Sprintf("grpc health of %s: %s (grpc-status 0 (OK)), want SERVING", svc, name))
}

// serverURL matches a URL in a server's text: a scheme, "://" and what
// follows up to a space, a quote, an angle bracket or a backtick.
var serverURL = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s<>\"'`]+")

// sensitivePair matches "key=value" and "key: value" in a server's text
// whose key is a sensitive name (see SensitiveName): the value is a
// quoted string, an Authorization scheme and its credentials ("Bearer
// …"), or a run of characters up to a space, "," ";" or "&".
var sensitivePair = regexp.MustCompile(`(?i)([A-Za-z0-9_.-]*(?:token|secret|password|credential|session|api-key|api_key|apikey|authorization|cookie)[A-Za-z0-9_.-]*)(\s*[=:]\s*)("[^"]*"|'[^']*'|(?:(?:Bearer|Basic|Token|Digest|Negotiate)\s+)?[^\s,;&"']+)`)

// ShownServerText is a text a server sent (a gRPC server's grpc-message)
// as vigil shows it in errors: a JSON object or array with the values of
// sensitive keys masked and its URLs hidden, as expect.json shows a
// value; any other text with each URL as units.RedactURL shows it (no
// userinfo, query values as "…", no fragment) and the value of each
// key=value or "key: value" whose key is a SensitiveName masked as
// MaskValue does ("password=[masked: 7 bytes, sha256:…]").
func ShownServerText(s string) string {
	if t := strings.TrimSpace(s); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && gjson.Valid(t) {
		m, _ := MaskJSON(t)
		if h, ok := HideJSONTextURLs(m); ok {
			m = h
		}
		return m
	}
	var b strings.Builder
	last := 0
	for _, loc := range serverURL.FindAllStringIndex(s, -1) {
		b.WriteString(maskPairs(s[last:loc[0]]))
		b.WriteString(units.RedactURL(s[loc[0]:loc[1]]))
		last = loc[1]
	}
	b.WriteString(maskPairs(s[last:]))
	return b.String()
}

// maskPairs masks the values of sensitive key=value pairs in s (no URL).
func maskPairs(s string) string {
	return sensitivePair.ReplaceAllStringFunc(s, func(m string) string {
		g := sensitivePair.FindStringSubmatch(m)
		v := g[3]
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		return g[1] + g[2] + MaskValue(v)
	})
}
