package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// certReloadEvery is how often the certificate files are looked at for a
// change (size or modification time of either file).
const certReloadEvery = 10 * time.Second

// certStore serves the TLS listener's certificates and picks up renewed
// ones (certbot, cert-manager, a deploy hook) without a restart: a handshake
// at most certReloadEvery after the files changed gets the new pair. A pair
// that does not load (half-written, key and certificate not matching) is
// logged and the previous one stays in use until the files are fixed.
//
// The first pair (cert_file, key_file) is the default; each further one
// (certs) is served to a client whose SNI name it covers: one the client
// can use (an ECDSA and an RSA pair for one name serve each client the kind
// it supports), an exact name before a wildcard, then the first listed, as
// nginx's and Caddy's per-name certificates.
type certStore struct {
	pairs []*certPair
	log   *slog.Logger
	now   func() time.Time

	mu      sync.Mutex
	checked time.Time
}

// certPair is one certificate of the listener and its files.
type certPair struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
	stamp             string // sizes and mtimes of the files last loaded or tried
	// said is what the log has said of cert's expiry (expiryLevel when
	// it was loaded, raised by announceExpiry; under certStore.mu once
	// the store serves).
	said expiryState
}

// loadPair loads a certificate and key, with its parsed leaf.
func loadPair(certFile, keyFile string) (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("%s, key_file %s: %w", certFile, keyFile, err)
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", certFile, err)
		}
	}
	return &cert, nil
}

func newCertStore(def CertPair, more []CertPair, log *slog.Logger) (*certStore, error) {
	s := &certStore{log: log, now: time.Now}
	for _, f := range append([]CertPair{def}, more...) {
		p := &certPair{certFile: f.CertFile, keyFile: f.KeyFile}
		stamp, err := p.fileStamp()
		if err != nil {
			return nil, err
		}
		cert, err := loadPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("proxy: tls: cert_file %w", err)
		}
		p.cert.Store(cert)
		p.stamp = stamp
		// Said already: vigil logs Config.Warnings at start and reload.
		p.said = expiryLevel(cert, s.now())
		s.pairs = append(s.pairs, p)
	}
	s.checked = s.now()
	return s, nil
}

func (p *certPair) fileStamp() (string, error) {
	var stamp string
	for _, f := range []string{p.certFile, p.keyFile} {
		st, err := statStamp(f)
		if err != nil {
			return "", fmt.Errorf("proxy: tls: %w", err)
		}
		stamp += st
	}
	return stamp, nil
}

// statStamp is a file's size and modification time ("size/mtime;"), to
// notice a rewrite in place.
func statStamp(f string) (string, error) {
	fi, err := os.Stat(f)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano()), nil
}

// GetCertificate is the listener's tls.Config.GetCertificate. Among the
// pairs whose certificate covers the SNI name, cert_file's included, one the
// client can use wins (an RSA-only client gets the RSA pair beside an ECDSA
// one), then an exact name over a wildcard, then the first of certs, then
// cert_file. With no SNI name, or none covering it, cert_file, unless the
// client cannot use it and another pair it can use exists.
func (s *certStore) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.maybeReload()
	def := s.pairs[0].cert.Load()
	if name := hello.ServerName; name != "" {
		var best *tls.Certificate
		bestRank := 0
		for i := range s.pairs {
			p := s.pairs[(i+1)%len(s.pairs)] // certs in order, cert_file last
			c := p.cert.Load()
			if c.Leaf.VerifyHostname(name) != nil {
				continue
			}
			rank := 1
			if slices.ContainsFunc(c.Leaf.DNSNames, func(n string) bool { return strings.EqualFold(n, name) }) {
				rank++
			}
			if hello.SupportsCertificate(c) == nil {
				rank += 2
			}
			if rank > bestRank {
				best, bestRank = c, rank
			}
		}
		if best != nil {
			return best, nil
		}
	}
	if len(s.pairs) > 1 && hello.SupportsCertificate(def) != nil {
		for _, p := range s.pairs[1:] {
			if c := p.cert.Load(); hello.SupportsCertificate(c) == nil {
				return c, nil
			}
		}
	}
	return def, nil
}

// covers reports whether a certificate of the store is valid for host (a
// name or an IP address).
func (s *certStore) covers(host string) bool {
	for _, p := range s.pairs {
		if c := p.cert.Load(); c.Leaf != nil && c.Leaf.VerifyHostname(host) == nil {
			return true
		}
	}
	return false
}

func (s *certStore) maybeReload() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.checked) < certReloadEvery {
		return
	}
	s.checked = now
	for _, p := range s.pairs {
		p.maybeReload(s.log)
	}
}

func (p *certPair) maybeReload(log *slog.Logger) {
	stamp, err := p.fileStamp()
	if err != nil {
		if stamp != p.stamp {
			log.Error("proxy: tls: certificate files unreadable; keeping the loaded certificate", "err", err)
		}
		p.stamp = ""
		return
	}
	if stamp == p.stamp {
		return
	}
	p.stamp = stamp
	cert, err := loadPair(p.certFile, p.keyFile)
	if err != nil {
		log.Error("proxy: tls: new certificate does not load; keeping the previous one",
			"cert_file", p.certFile, "key_file", p.keyFile, "err", err)
		return
	}
	p.cert.Store(cert)
	now := time.Now()
	p.said = expiryLevel(cert, now)
	log.Info("proxy: tls: certificate reloaded", "cert_file", p.certFile)
	if note, _ := expiryNote(cert, now); note != "" {
		log.Warn("proxy: tls: "+note, "cert_file", p.certFile)
	}
}

// listenerSuites are the TLS 1.2 cipher suites the TLS listener offers:
// forward-secret AEAD ones only (Mozilla's "intermediate" list). Go's
// default also takes the CBC ones with SHA-1 (ECDHE-RSA-AES128-SHA…).
// TLS 1.3 suites are not configurable and all AEAD.
var listenerSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}
