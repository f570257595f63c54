package checks

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"strconv"
	"time"
)

// Certificate expiry, with blackbox_exporter's semantics:
//
//   - the earliest expiry is the earliest NotAfter of every certificate the
//     server presented (leaf and intermediates), verified or not
//     (probe_ssl_earliest_cert_expiry, Result.CertExpiry);
//   - the last chain expiry is, over the verified chains (the server's
//     certificates completed up to a trusted root), the latest of each
//     chain's earliest NotAfter: when the chain that expires first can be
//     replaced by another one the client also trusts (a cross-signed or
//     renewed intermediate), it is the one that lasts longest
//     (probe_ssl_last_chain_expiry_timestamp_seconds,
//     Result.LastChainExpiry).
//
// cert_min_days judges the certificate that decides the last chain expiry
// or, with nothing verified (insecure_skip_verify, or a chain that did not
// verify), the presented certificate that expires first.

// earliestCert is the certificate of certs that expires first (nil for
// none).
func earliestCert(certs []*x509.Certificate) *x509.Certificate {
	var first *x509.Certificate
	for _, c := range certs {
		if c != nil && (first == nil || c.NotAfter.Before(first.NotAfter)) {
			first = c
		}
	}
	return first
}

// lastChainCert is, over chains, the earliest-expiring certificate of the
// chain whose earliest expiry is latest (nil without chains).
func lastChainCert(chains [][]*x509.Certificate) *x509.Certificate {
	var best *x509.Certificate
	for _, ch := range chains {
		if c := earliestCert(ch); c != nil && (best == nil || c.NotAfter.After(best.NotAfter)) {
			best = c
		}
	}
	return best
}

// certTLS is what a TLS run saw of the server's certificates.
type certTLS struct {
	// presented are the server's certificates, leaf first.
	presented []*x509.Certificate
	// chains are the verified chains, leaf first and root last; none when
	// verification was skipped or failed.
	chains [][]*x509.Certificate
}

// judged is the certificate cert_min_days is checked against: the one that
// decides the last chain expiry, else the earliest presented one.
func (c certTLS) judged() *x509.Certificate {
	if b := lastChainCert(c.chains); b != nil {
		return b
	}
	return earliestCert(c.presented)
}

// expiries fills Result.CertExpiry and Result.LastChainExpiry.
func (c certTLS) expiries(r *Result) {
	if e := earliestCert(c.presented); e != nil {
		r.CertExpiry = e.NotAfter
	}
	if b := lastChainCert(c.chains); b != nil {
		r.LastChainExpiry = b.NotAfter
	}
}

// role says where c sits among the certificates seen: "leaf" (the first
// presented), "root" (self-issued) or "intermediate".
func (c certTLS) role(x *x509.Certificate) string {
	if len(c.presented) > 0 && x == c.presented[0] {
		return "leaf"
	}
	for _, ch := range c.chains {
		if len(ch) > 0 && x == ch[0] {
			return "leaf"
		}
	}
	if bytes.Equal(x.RawSubject, x.RawIssuer) {
		return "root"
	}
	return "intermediate"
}

// certLabel names a certificate for messages: its role and subject CN
// ("intermediate CN=R3"), or its whole subject when it has no CN.
func (c certTLS) certLabel(x *x509.Certificate) string {
	name := x.Subject.CommonName
	if name == "" {
		name = x.Subject.String()
	}
	if name == "" {
		return c.role(x) + " (serial " + x.SerialNumber.String() + ")"
	}
	if x.Subject.CommonName != "" {
		return c.role(x) + " CN=" + name
	}
	return c.role(x) + " " + name
}

// daysLeft is the number of whole days until NotAfter (negative once
// expired).
func daysLeft(c *x509.Certificate, now time.Time) int {
	d := c.NotAfter.Sub(now)
	days := int(d / (24 * time.Hour))
	if d < 0 && d%(24*time.Hour) != 0 {
		days--
	}
	return days
}

// expiryText says how long a certificate has left: "5 days", "1 day",
// "less than a day", or once expired "expired 3 days ago", "expired less
// than a day ago" (whole days since NotAfter).
func expiryText(c *x509.Certificate, now time.Time) (left int, got, phrase string) {
	left = daysLeft(c, now)
	days := func(n int) string {
		switch n {
		case 0:
			return "less than a day"
		case 1:
			return "1 day"
		}
		return strconv.Itoa(n) + " days"
	}
	if !c.NotAfter.After(now) {
		ago := days(int(now.Sub(c.NotAfter) / (24 * time.Hour)))
		return left, "expired " + ago + " ago", "certificate expired " + ago + " ago"
	}
	return left, days(left), "certificate expires in " + days(left)
}

// evalCertMinDays is the cert_min_days assertion over what a TLS run saw.
func evalCertMinDays(min int, c *certTLS, now time.Time, v *verdict) {
	want := ">= " + strconv.Itoa(min) + " days"
	x := (*x509.Certificate)(nil)
	if c != nil {
		x = c.judged()
	}
	if x == nil {
		v.add(CauseCert, "cert_min_days", false, "(no certificate)", want,
			"cert_min_days: no TLS certificate (plain connection)")
		return
	}
	left, got, phrase := expiryText(x, now)
	label := c.certLabel(x)
	v.add(CauseCert, "cert_min_days", left >= min, got+" ("+label+")", want,
		fmt.Sprintf("%s (%s), want at least %d: %s", phrase, x.NotAfter.UTC().Format(time.DateOnly), min, label))
}
