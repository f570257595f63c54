package proxy

import (
	"context"
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
// days_until_first_cert_expiring. A served certificate that enters the
// 14-day window or expires while vigil runs, with no reload, gets the same
// WARN line once, when it happens (watchCertExpiry).

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

// expiryState is where a certificate stands against its expiry.
type expiryState int

const (
	certFine     expiryState = iota // expires later than certExpiryWarn
	certExpiring                    // expires within certExpiryWarn
	certExpired
)

// expiryLevel is where a pair's chain stands at now, as expiryNote sees it.
func expiryLevel(c *tls.Certificate, now time.Time) expiryState {
	at, _ := chainExpiry(c)
	switch left := at.Sub(now); {
	case left <= 0:
		return certExpired
	case left <= certExpiryWarn:
		return certExpiring
	}
	return certFine
}

// certWatchEvery is how often watchCertExpiry looks at the served
// certificates besides its timers for the next instant one crosses.
const certWatchEvery = time.Hour

// watchCertExpiry logs, once each, the WARN line of a served certificate
// that enters the 14-day window and of one that expires while the listener
// runs (the lines start and reload log, which said nothing of it then). It
// wakes at the earliest such instant, at least hourly, and when a reload
// serves other files; until ctx is done.
func (p *Proxy) watchCertExpiry(ctx context.Context) {
	for {
		wait := certWatchEvery
		if s := p.tlsCerts.Load(); s != nil {
			if next := s.announceExpiry(time.Now()); !next.IsZero() {
				// At least 10ms: a clock stepped back does not spin.
				wait = max(min(wait, time.Until(next)), 10*time.Millisecond)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-p.certWake:
		case <-t.C:
		}
		t.Stop()
	}
}

// announceExpiry logs the expiry note of each pair whose certificate
// crossed a line (the 14-day window, its expiry) the log has not told of,
// after taking renewed files; it returns the next instant one crosses
// (zero when none will).
func (s *certStore) announceExpiry(now time.Time) (next time.Time) {
	s.maybeReload()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.pairs {
		cert := p.cert.Load()
		if lvl := expiryLevel(cert, now); lvl > p.said {
			p.said = lvl
			note, _ := expiryNote(cert, now)
			s.log.Warn("proxy: tls: "+note, "cert_file", p.certFile, "key", pairKey(i))
		}
		at, _ := chainExpiry(cert)
		when := at.Add(-certExpiryWarn)
		if !when.After(now) {
			when = at
		}
		if when.After(now) && (next.IsZero() || when.Before(next)) {
			next = when
		}
	}
	return next
}

// daysLeft writes a duration of up to certExpiryWarn for people, rounded
// to the nearest day or hour: "3 days", "1 day", "5 hours". A certificate
// that has just entered the 14-day window reads "in 14 days", not 13.
func daysLeft(d time.Duration) string {
	if d >= 24*time.Hour {
		if days := int((d + 12*time.Hour) / (24 * time.Hour)); days > 1 {
			return fmt.Sprintf("%d days", days)
		}
		return "1 day"
	}
	switch h := int((d + 30*time.Minute) / time.Hour); h {
	case 24:
		return "1 day"
	case 0:
		return "under an hour"
	case 1:
		return "1 hour"
	default:
		return fmt.Sprintf("%d hours", h)
	}
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
