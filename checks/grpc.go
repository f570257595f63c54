package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

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
	var out []string
	for _, w := range s.TLS.TLSOptions.Warnings() {
		out = append(out, "tls."+w)
	}
	return out
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
// TLS. The error (ErrConflict) starts with the key, "grpc.tls: ". It may
// be called before or after ValidateAndSetDefaults.
func (s *GRPCSpec) URLFits(rawURL string) error {
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
// (h2 by ALPN, nothing else offered) or h2c with prior knowledge. The TLS
// client is the http checks' (TLSOptions.config).
func (g *GRPC) transport(host string) *http.Transport {
	d := newDialer(g.spec.IPProtocol, g.spec.IPProtocolFallback)
	p := new(http.Protocols)
	tr := &http.Transport{
		DialContext:            d.DialContext,
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
	return tr
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
	rt := g.transport(host)
	defer rt.CloseIdleConnections()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		end := time.Now()
		res.Phases = tr.phases(end)
		res.Phases.Transfer = 0
		res.Cause, res.Err = classify(err, tr, end.Sub(start))
		if g.spec.tls == nil && (res.Cause == CauseInternal || res.Cause == CauseReset) && !strings.Contains(res.Err, "(HTTP/2 ") {
			// Connected, but no HTTP/2 came back: an HTTP/1.1 server
			// answers the h2c preface with an error or a close.
			res.Cause, res.Err = CauseProtocol, "protocol: no HTTP/2 answer to h2c (grpc.tls: false): "+res.Err
		}
		if certs := certsFromErr(err); len(certs) > 0 {
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
	res.Assertions = v.list
	if v.cause != "" {
		res.Cause, res.Err = v.cause, v.err
		return res
	}
	res.OK = true
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
			detail = ": " + strconv.Quote(abbrev(msg, 200))
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
