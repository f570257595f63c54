package checktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// CertOptions shape the certificate a TLS origin presents.
type CertOptions struct {
	// NotAfter is the leaf's expiry. Default: 90 days from now. A time in
	// the past gives an expired certificate.
	NotAfter time.Time
	// Names are the leaf's DNS names and IP addresses. Default:
	// "localhost", 127.0.0.1, ::1.
	Names []string
}

// WithCert sets the TLS origin's certificate options (ignored by
// NewOrigin).
func WithCert(c CertOptions) Option { return func(o *Origin) { o.certOpts = c } }

// certBundle is a private CA and a leaf certificate signed by it.
type certBundle struct {
	caPEM  []byte
	pool   *x509.CertPool
	leaf   *x509.Certificate
	tlsCrt tls.Certificate

	once    sync.Once
	dir     string
	file    string
	fileErr error
}

// NewTLSOrigin starts an HTTPS origin whose certificate is signed by a
// fresh private CA (not in any system pool: without CAPool/CAFile a client
// sees "unknown authority"). It panics if it cannot listen.
func NewTLSOrigin(opts ...Option) *Origin {
	probe := &Origin{}
	for _, opt := range opts {
		opt(probe)
	}
	b, err := newCertBundle(probe.certOpts)
	if err != nil {
		panic("checktest: " + err.Error())
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{b.tlsCrt}, MinVersion: tls.VersionTLS12}
	o, err := StartOrigin(cfg, opts...)
	if err != nil {
		panic("checktest: " + err.Error())
	}
	o.tlsPEM = b
	return o
}

// CAPool returns a pool holding the origin's CA (nil for a plain origin).
func (o *Origin) CAPool() *x509.CertPool {
	if o.tlsPEM == nil {
		return nil
	}
	return o.tlsPEM.pool
}

// CAPEM returns the origin's CA certificate in PEM (nil for a plain
// origin).
func (o *Origin) CAPEM() []byte {
	if o.tlsPEM == nil {
		return nil
	}
	return append([]byte(nil), o.tlsPEM.caPEM...)
}

// CAFile writes the CA PEM to a temporary file on first use and returns its
// path; Close removes it. It returns "" for a plain origin.
func (o *Origin) CAFile() (string, error) {
	if o.tlsPEM == nil {
		return "", nil
	}
	b := o.tlsPEM
	b.once.Do(func() {
		b.dir, b.fileErr = os.MkdirTemp("", "vigil-checktest-ca-")
		if b.fileErr != nil {
			return
		}
		b.file = filepath.Join(b.dir, "ca.pem")
		b.fileErr = os.WriteFile(b.file, b.caPEM, 0o600)
	})
	return b.file, b.fileErr
}

// Certificate returns the leaf certificate the origin presents (nil for a
// plain origin).
func (o *Origin) Certificate() *x509.Certificate {
	if o.tlsPEM == nil {
		return nil
	}
	return o.tlsPEM.leaf
}

// TLSClientConfig returns a client config that trusts the origin's CA.
func (o *Origin) TLSClientConfig() *tls.Config {
	return &tls.Config{RootCAs: o.CAPool(), MinVersion: tls.VersionTLS12}
}

func (b *certBundle) remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

func newCertBundle(opt CertOptions) (*certBundle, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vigil checktest CA", Organization: []string{"vigil"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	notAfter := opt.NotAfter
	if notAfter.IsZero() {
		notAfter = now.Add(90 * 24 * time.Hour)
	}
	notBefore := now.Add(-time.Hour)
	if !notAfter.After(notBefore) {
		notBefore = notAfter.Add(-24 * time.Hour)
	}
	names := opt.Names
	if len(names) == 0 {
		names = []string{"localhost", "127.0.0.1", "::1"}
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else {
			leaf.DNSNames = append(leaf.DNSNames, n)
		}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	leafCert, err := x509.ParseCertificate(leafDER)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &certBundle{
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pool:  pool,
		leaf:  leafCert,
		tlsCrt: tls.Certificate{
			Certificate: [][]byte{leafDER},
			PrivateKey:  leafKey,
			Leaf:        leafCert,
		},
	}, nil
}
