package checks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
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
	return &TLS{spec: spec, expect: expect, opts: o, d: newDialer()}, nil
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
	tr := &runTrace{start: start}
	raw, err := c.d.DialContext(tr.withTrace(ctx), "tcp", addr)
	if err != nil {
		end := time.Now()
		res.Phases = tr.phases(end)
		res.Cause, res.Err = classify(err, tr, end.Sub(start))
		return res
	}
	defer raw.Close()
	// Verification is done below, step by step, so that chain and hostname
	// are reported separately and a bad certificate still reports expiry.
	conn := tls.Client(raw, &tls.Config{ServerName: name, InsecureSkipVerify: true, MinVersion: c.spec.minVersion})
	tr.mark(&tr.tlsStart, true)
	err = conn.HandshakeContext(ctx)
	tr.mark(&tr.tlsDone, true)
	if err != nil {
		end := time.Now()
		tr.mu.Lock()
		tr.tlsErr = err
		if errors.Is(err, context.DeadlineExceeded) || isTimeout(err) {
			tr.tlsDone = time.Time{} // still in the handshake when time ran out
		}
		tr.mu.Unlock()
		res.Phases = tr.phases(end)
		res.Cause, res.Err = classify(err, tr, end.Sub(start))
		return res
	}
	state := conn.ConnectionState()
	conn.Close()
	end := time.Now()
	res.Phases = tr.phases(end)
	if len(state.PeerCertificates) == 0 {
		res.Cause, res.Err = CauseTLS, "tls: the server sent no certificate"
		return res
	}
	leaf := state.PeerCertificates[0]
	seen := &certTLS{presented: state.PeerCertificates}

	var v verdict
	if !c.spec.InsecureSkipVerify {
		inter := x509.NewCertPool()
		for _, ic := range state.PeerCertificates[1:] {
			inter.AddCert(ic)
		}
		chains, chainErr := leaf.Verify(x509.VerifyOptions{Roots: c.spec.roots, Intermediates: inter, CurrentTime: start})
		seen.chains = chains
		got := "trusted (issuer " + issuerName(leaf) + ")"
		msg := ""
		if chainErr != nil {
			_, msg, _ = certCause(chainErr)
			got = strings.TrimPrefix(msg, "cert: ")
		}
		v.add(CauseCert, "cert chain", chainErr == nil, got, "trusted", msg)

		hostErr := leaf.VerifyHostname(name)
		got = "matches"
		if hostErr != nil {
			got = "names: " + certNames(leaf)
		}
		v.add(CauseCert, "cert hostname", hostErr == nil, got, name,
			fmt.Sprintf("cert: not valid for %s (valid for %s)", name, certNames(leaf)))
	}
	seen.expiries(&res)
	obs := observation{cert: seen, total: res.Phases.Total, now: start}
	c.expect.evalCommon(&obs, &v)
	res.Assertions = v.list
	if v.cause != "" {
		res.Cause, res.Err = v.cause, v.err
		return res
	}
	res.OK = true
	return res
}

func issuerName(c *x509.Certificate) string {
	if c.Issuer.CommonName != "" {
		return c.Issuer.CommonName
	}
	return c.Issuer.String()
}

func certNames(c *x509.Certificate) string {
	var names []string
	names = append(names, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 && c.Subject.CommonName != "" {
		names = append(names, c.Subject.CommonName)
	}
	if len(names) == 0 {
		return "(no names)"
	}
	return strings.Join(names, ", ")
}
