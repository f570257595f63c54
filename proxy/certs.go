package proxy

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// certReloadEvery is how often the certificate files are looked at for a
// change (size or modification time of either file).
const certReloadEvery = 10 * time.Second

// certStore serves the TLS listener's certificate and picks up a renewed one
// (certbot, cert-manager, a deploy hook) without a restart: a handshake at
// most certReloadEvery after the files changed gets the new pair. A pair that
// does not load (half-written, key and certificate not matching) is logged
// and the previous one stays in use until the files are fixed.
type certStore struct {
	certFile, keyFile string
	log               *slog.Logger
	now               func() time.Time

	cert atomic.Pointer[tls.Certificate]

	mu      sync.Mutex
	checked time.Time
	stamp   string // sizes and mtimes of the files last loaded or tried
}

func newCertStore(certFile, keyFile string, log *slog.Logger) (*certStore, error) {
	s := &certStore{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	stamp, err := s.fileStamp()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("proxy: tls: cert_file %s, key_file %s: %w", certFile, keyFile, err)
	}
	s.cert.Store(&cert)
	s.stamp, s.checked = stamp, s.now()
	return s, nil
}

func (s *certStore) fileStamp() (string, error) {
	var stamp string
	for _, f := range []string{s.certFile, s.keyFile} {
		fi, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("proxy: tls: %w", err)
		}
		stamp += fmt.Sprintf("%d/%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return stamp, nil
}

// GetCertificate is the listener's tls.Config.GetCertificate.
func (s *certStore) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.maybeReload()
	return s.cert.Load(), nil
}

func (s *certStore) maybeReload() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.checked) < certReloadEvery {
		return
	}
	s.checked = now
	stamp, err := s.fileStamp()
	if err != nil {
		if stamp != s.stamp {
			s.log.Error("proxy: tls: certificate files unreadable; keeping the loaded certificate", "err", err)
		}
		s.stamp = ""
		return
	}
	if stamp == s.stamp {
		return
	}
	s.stamp = stamp
	cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		s.log.Error("proxy: tls: new certificate does not load; keeping the previous one",
			"cert_file", s.certFile, "key_file", s.keyFile, "err", err)
		return
	}
	s.cert.Store(&cert)
	s.log.Info("proxy: tls: certificate reloaded", "cert_file", s.certFile)
}
