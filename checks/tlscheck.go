package checks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// TLS is a compiled TLS handshake check. Each run connects, completes a
// handshake, then verifies the chain ("cert chain") and the hostname ("cert
// hostname") as separate assertions and reports the certificates' expiry
// in Result.CertExpiry and Result.LastChainExpiry (see certexpiry.go).
// Expect keys accepted: cert_min_days, duration. Safe for concurrent Run.
type TLS struct {
	spec   TLSSpec
	expect Expect
	opts   Options
	d      *dialer
}

var _ Check = (*TLS)(nil)

// NewTLS compiles a TLS check. Errors are prefixed "tls." and "expect.".
func NewTLS(spec TLSSpec, expect Expect, o Options) (*TLS, error) {
	if err := compileProbe("tls", &spec, spec.compiled, &expect); err != nil {
		return nil, err
	}
	o.setDefaults()
	return &TLS{spec: spec, expect: expect, opts: o, d: newDialer(spec.IPProtocol, spec.IPProtocolFallback)}, nil
}

// Run handshakes with t (tls://host:port, https://host[:port] or
// tcp://host:port).
func (c *TLS) Run(ctx context.Context, t Target) Result {
	start := time.Now()
	res := Result{Start: start}
	ctx, cancel := c.opts.runContext(ctx)
	defer cancel()
	addr, err := hostPort(t.URL, "443")
	if err != nil {
		res.Cause, res.Err = CauseInternal, err.Error()
		return res
	}
	host, _, _ := net.SplitHostPort(addr)
	name := c.spec.ServerName
	if name == "" {
		name = host
	}
	tr := &runTrace{start: start, timeout: c.opts.Timeout}
	ctx = tr.withTrace(ctx)
	raw, err := c.d.DialContext(ctx, "tcp", addr)
	if err != nil {
		end := time.Now()
		res.Phases = tr.phases(end)
		res.Cause, res.Err = classify(err, tr, end.Sub(start))
		return res
	}
	defer raw.Close()
	conn, err := clientHandshake(ctx, raw, tr, name, c.spec.minVersion, c.spec.clientCert)
	if err != nil {
		end := time.Now()
		res.Phases = tr.phases(end)
		res.Cause, res.Err = classify(err, tr, end.Sub(start))
		return res
	}
	state := conn.ConnectionState()
	// The run's time ends with the handshake: the wait below for a refusal
	// of the client certificate is vigil's, not the origin's, and would
	// otherwise put a clientCertWait floor under every TLS 1.3 mTLS run.
	handshaken := time.Now()
	if asked, _ := tr.clientCert(); asked && state.Version == tls.VersionTLS13 {
		if err := awaitClientCertVerdict(ctx, conn); err != nil {
			end := time.Now()
			res.Phases = tr.phases(end)
			res.Cause, res.Err = CauseTLS, "tls: "+strings.TrimPrefix(rootMsg(err), "tls: ")+tr.clientCertHint(err)
			return res
		}
	}
	conn.Close()
	res.Phases = tr.phases(handshaken)
	if len(state.PeerCertificates) == 0 {
		res.Cause, res.Err = CauseTLS, "tls: the server sent no certificate"
		return res
	}
	var v verdict
	seen := verifyPeer(state, name, c.spec.roots, c.spec.InsecureSkipVerify, start, &v)
	seen.expiries(&res)
	obs := observation{cert: seen, total: res.Phases.Total, now: start}
	c.expect.evalCommon(&obs, &v)
	v.judge(&res)
	return res
}

// clientHandshake runs a TLS client handshake over raw for name (SNI),
// timed in tr as the run's tls phase; a failure is left in tr for
// classify. Verification is skipped here and done by verifyPeer, step by
// step, so that chain and hostname are reported apart and a bad
// certificate still reports its expiry.
func clientHandshake(ctx context.Context, raw net.Conn, tr *runTrace, name string, minVersion uint16, cert *tls.Certificate) (*tls.Conn, error) {
	conn := tls.Client(raw, &tls.Config{ServerName: name, InsecureSkipVerify: true, MinVersion: minVersion,
		GetClientCertificate: clientCertFunc(cert)})
	tr.mark(&tr.tlsStart, true)
	err := conn.HandshakeContext(ctx)
	tr.mark(&tr.tlsDone, true)
	if err != nil {
		tr.mu.Lock()
		tr.tlsErr = err
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			tr.tlsDone = time.Time{} // still in the handshake when time ran out
		}
		tr.mu.Unlock()
		return nil, err
	}
	return conn, nil
}

// verifyPeer verifies the certificates of a handshake done by
// clientHandshake, unless insecure: the chain against roots (nil = the
// system pool) at now ("cert chain") and the leaf against name ("cert
// hostname"), as two assertions in v with cause cert. It returns what was
// seen, for the expiries and cert_min_days; state must hold a
// certificate.
func verifyPeer(state tls.ConnectionState, name string, roots *x509.CertPool, insecure bool, now time.Time, v *verdict) *certTLS {
	leaf := state.PeerCertificates[0]
	seen := &certTLS{presented: state.PeerCertificates}
	if insecure {
		return seen
	}
	inter := x509.NewCertPool()
	for _, ic := range state.PeerCertificates[1:] {
		inter.AddCert(ic)
	}
	chains, chainErr := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now})
	seen.chains = chains
	got := "trusted (issuer " + issuerName(leaf) + ")"
	msg := ""
	if chainErr != nil {
		// Wrapped as crypto/tls wraps it, so the message can name the
		// certificates presented.
		_, msg, _ = certCause(&tls.CertificateVerificationError{UnverifiedCertificates: state.PeerCertificates, Err: chainErr})
		got = strings.TrimPrefix(msg, "cert: ")
	}
	v.add(CauseCert, "cert chain", chainErr == nil, got, "trusted", msg)

	hostErr := leaf.VerifyHostname(name)
	got = "matches"
	if hostErr != nil {
		got = "names: " + certNames(leaf)
	}
	v.add(CauseCert, "cert hostname", hostErr == nil, got, name, hostnameMismatch(name, leaf))
	return seen
}

// clientCertWait is how long a tls check waits after a TLS 1.3 handshake
// in which the server asked for a client certificate, for the server to
// refuse it. The wait is not counted in the run's duration (total).
const clientCertWait = 250 * time.Millisecond

// awaitClientCertVerdict reads from a TLS 1.3 connection whose server
// asked for a client certificate until the server refuses it (the alert
// is returned) or clientCertWait passes (nil). In TLS 1.3 the client's
// handshake is over before the server has looked at its certificate
// (RFC 8446 §4.4.2.4): a refusal arrives as an alert after it, so without
// this wait a server that requires a certificate vigil does not have
// would look healthy. Session tickets are read and dropped on the way.
func awaitClientCertVerdict(ctx context.Context, conn *tls.Conn) error {
	deadline := time.Now().Add(clientCertWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetReadDeadline(deadline)
	defer conn.SetReadDeadline(time.Time{})
	var b [1]byte
	_, err := conn.Read(b[:])
	if err == nil || isTimeout(err) || errors.Is(err, io.EOF) {
		return nil // data, silence or a plain close: no refusal seen
	}
	return err
}

func issuerName(c *x509.Certificate) string {
	if c.Issuer.CommonName != "" {
		return c.Issuer.CommonName
	}
	return c.Issuer.String()
}

// hostnameMismatch is the message of a certificate c not valid for name,
// the same from every probe (http, tls, tcp, grpc, dns over TLS and an
// https:// proxy): "cert: not valid for api.example (valid for localhost,
// 127.0.0.1)", naming all of the certificate's names, DNS names first,
// where Go's own text lists only the DNS names or only the IP addresses.
// A certificate without subject alternative names is valid for no name,
// which it says: "cert: not valid for example.com (no subject alternative
// names; the common name example.com is not used)".
func hostnameMismatch(name string, c *x509.Certificate) string {
	if len(c.DNSNames)+len(c.IPAddresses) == 0 {
		return fmt.Sprintf("cert: not valid for %s (%s)", name, certNames(c))
	}
	return fmt.Sprintf("cert: not valid for %s (valid for %s)", name, certNames(c))
}

// certNames lists the names a certificate is valid for: its DNS names,
// then its IP addresses. A certificate without either says so, and that
// its subject's common name, which Go ignores, is not used.
func certNames(c *x509.Certificate) string {
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 && c.Subject.CommonName != "" {
		return "no subject alternative names; the common name " + c.Subject.CommonName + " is not used"
	}
	if len(names) == 0 {
		return "no subject alternative names"
	}
	return strings.Join(names, ", ")
}
