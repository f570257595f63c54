package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The expiry of the TLS listener's certificates (cert_file, certs). Clients
// refuse an expired one ("certificate has expired") while the proxy, its
// health and its metrics looked fine; now a certificate that has expired or
// expires within certExpiryWarn is a `vigil validate` warning and a WARN
// line at start and at every reload (Config.Warnings, which vigil logs when
// it loads the file), a WARN line when a renewed file is taken
// (certPair.maybeReload), a /healthz reason (expired) or warning
// (CertReport), and every served certificate's expiry is exported as
// vigil_proxy_certificate_expiry_timestamp_seconds, as Envoy exports
// days_until_first_cert_expiring.

// certExpiryWarn is how long before its expiry a certificate is warned about.
const certExpiryWarn = 14 * 24 * time.Hour

// chainExpiry returns the earliest NotAfter of a loaded pair's chain (the
// leaf and the intermediates its file holds: the chain clients get breaks
// when any of them expires) and the certificate that has it.
func chainExpiry(c *tls.Certificate) (time.Time, *x509.Certificate) {
	first := c.Leaf
	for _, der := range c.Certificate[1:] {
		if ic, err := x509.ParseCertificate(der); err == nil && ic.NotAfter.Before(first.NotAfter) {
			first = ic
		}
	}
	return first.NotAfter, first
}

// certNames names a leaf the way clients match it: its DNS names and IP
// addresses, or its subject when it has none.
func certNames(leaf *x509.Certificate) string {
	names := append([]string(nil), leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		return leaf.Subject.String()
	}
	return strings.Join(names, ",")
}

// expiryNote describes a pair whose chain has expired at now, or expires
// within certExpiryWarn, naming the certificate (subject and names) and the
// date; "" when it does not.
func expiryNote(c *tls.Certificate, now time.Time) (note string, expired bool) {
	at, first := chainExpiry(c)
	left := at.Sub(now)
	if left > certExpiryWarn {
		return "", false
	}
	what := fmt.Sprintf("certificate %q (%s)", c.Leaf.Subject.String(), certNames(c.Leaf))
	if first != c.Leaf {
		what = fmt.Sprintf("intermediate %q of the %s", first.Subject.String(), what)
	}
	when := at.UTC().Format(time.RFC3339)
	if left <= 0 {
		return fmt.Sprintf("%s expired %s: clients refuse it; put a renewed one in the file", what, when), true
	}
	return fmt.Sprintf("%s expires %s, in %s: renew it before then", what, when, daysLeft(left)), false
}

// daysLeft writes a duration of up to certExpiryWarn for people: "3 days",
// "1 day", "5 hours".
func daysLeft(d time.Duration) string {
	switch days := int(d / (24 * time.Hour)); {
	case days > 1:
		return fmt.Sprintf("%d days", days)
	case days == 1:
		return "1 day"
	}
	h := int(d / time.Hour)
	if h == 1 {
		return "1 hour"
	}
	return fmt.Sprintf("%d hours", h)
}

// servedCert is a certificate of the listener as ValidateAndSetDefaults
// loaded it, for Warnings.
type servedCert struct {
	key, file string
	cert      *tls.Certificate
}

// pairKey is the config key of the store's i-th pair.
func pairKey(i int) string {
	if i == 0 {
		return "cert_file"
	}
	return fmt.Sprintf("certs[%d].cert_file", i-1)
}

// CertReport lists the TLS listener's certificates (cert_file, certs, as
// served now: a file renewed in place is taken first) that expire within
// 14 days, as warnings, and those that have expired, as an error (one per
// line of it): every client refuses them, so vigil's /healthz answers 503
// for them, as for client TLS files that do not load. Nothing without a
// running TLS listener.
func (p *Proxy) CertReport() (warnings []string, expired error) {
	s := p.tlsCerts.Load()
	if s == nil {
		return nil, nil
	}
	s.maybeReload()
	now := time.Now()
	var errs []error
	for i, pr := range s.pairs {
		note, exp := expiryNote(pr.cert.Load(), now)
		if note == "" {
			continue
		}
		line := fmt.Sprintf("tls: %s %s: %s", pairKey(i), pr.certFile, note)
		if exp {
			errs = append(errs, errors.New(line))
		} else {
			warnings = append(warnings, line)
		}
	}
	return warnings, errors.Join(errs...)
}

var certExpiryDesc = prometheus.NewDesc("vigil_proxy_certificate_expiry_timestamp_seconds",
	"When each certificate the TLS listener serves (cert_file, certs) expires: the earliest NotAfter of the file's chain (leaf and intermediates), Unix seconds, by file and by the leaf's DNS names and IP addresses (its subject when it has none), as served now (a renewed file is taken within 10s, a reload's files at once); absent without tls_listen.",
	[]string{"file", "names"}, nil)

// certExpiryCollector exports vigil_proxy_certificate_expiry_timestamp_seconds
// from the certificates served at scrape time, so a renewal or a reload
// that changes the files is shown without a series left behind.
type certExpiryCollector struct{ p *Proxy }

var _ prometheus.Collector = certExpiryCollector{}

func (c certExpiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- certExpiryDesc }

func (c certExpiryCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.tlsCerts.Load()
	if s == nil {
		return
	}
	s.maybeReload()
	seen := map[string]bool{}
	for _, pr := range s.pairs {
		if seen[pr.certFile] {
			continue // one file listed twice is one certificate
		}
		seen[pr.certFile] = true
		cert := pr.cert.Load()
		at, _ := chainExpiry(cert)
		ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(at.Unix()), pr.certFile, certNames(cert.Leaf))
	}
}
