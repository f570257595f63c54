// Package tlsclient is the `tls` object of the HTTP clients vigil's
// reporting side opens: store.influxdb.tls and alerting.receivers[].tls.
// Its keys and their meaning are those of a check's http.tls (ca_file
// replaces the system pool, as there), without min_version: these clients
// always require TLS 1.2 or later.
package tlsclient

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Config is a `tls` object. The zero value verifies the server against the
// system pool (which honours SSL_CERT_FILE and SSL_CERT_DIR) and the URL's
// host, and sends no client certificate.
type Config struct {
	// CAFile is a PEM file of CA certificates to trust instead of the
	// system pool. Default: the system pool.
	CAFile string `mapstructure:"ca_file"`
	// ServerName is the SNI name and the name verified against the
	// server's certificate. Default: the host of the URL.
	ServerName string `mapstructure:"server_name"`
	// CertFile and KeyFile are a PEM client certificate (optionally
	// followed by its intermediates) and its private key, presented to a
	// server that asks for one (mutual TLS). Both or neither. Default:
	// none.
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// InsecureSkipVerify skips chain and hostname verification. Default
	// false; a warning when on.
	InsecureSkipVerify bool `mapstructure:"insecure_skip_verify"`

	roots *x509.CertPool
	cert  *tls.Certificate
	ready bool
}

// Load reads ca_file, cert_file and key_file. Each error names its key and
// file, relative to the `tls` object ("ca_file: /etc/ca.pem: no PEM
// certificate found"). Called by the sections' ValidateAndSetDefaults, so
// on every config load and reload.
func (c *Config) Load() error {
	var errs []error
	c.roots, c.cert, c.ready = nil, nil, false
	if c.CAFile != "" {
		pool, err := LoadCAFile(c.CAFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("ca_file: %w", err))
		}
		c.roots = pool
	}
	if strings.TrimSpace(c.ServerName) != c.ServerName {
		errs = append(errs, fmt.Errorf("server_name: %q: leading or trailing spaces", c.ServerName))
	}
	cert, err := loadClientCert(c.CertFile, c.KeyFile)
	errs = append(errs, err)
	c.cert = cert
	err = errors.Join(errs...)
	c.ready = err == nil
	return err
}

// Set reports whether any key is set: a zero Config leaves Go's defaults.
func (c *Config) Set() bool {
	return c.CAFile != "" || c.ServerName != "" || c.CertFile != "" || c.KeyFile != "" || c.InsecureSkipVerify
}

// TLSConfig is the client config of c, after a successful Load: nil when
// no key is set (Go's defaults: the system pool, the URL's host).
func (c *Config) TLSConfig() *tls.Config {
	if c == nil || !c.Set() {
		return nil
	}
	if !c.ready {
		// A Config used without Load: load now; on error every handshake
		// fails with the reason rather than falling back to the system pool.
		if err := c.Load(); err != nil {
			return &tls.Config{MinVersion: tls.VersionTLS12,
				VerifyConnection: func(tls.ConnectionState) error { return err }}
		}
	}
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		RootCAs:            c.roots,
		ServerName:         c.ServerName,
		InsecureSkipVerify: c.InsecureSkipVerify,
	}
	if c.cert != nil {
		cert := c.cert
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return tc
}

// Warnings lists the settings that weaken the client, keys relative to
// the `tls` object: "insecure_skip_verify: true: certificates are not
// verified".
func (c *Config) Warnings() []string {
	if c != nil && c.InsecureSkipVerify {
		return []string{"insecure_skip_verify: true: certificates are not verified"}
	}
	return nil
}

// LoadCAFile reads a PEM bundle of CA certificates into a new pool (the
// system pool is not included). The error names the file.
func LoadCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *PathError: "open /path: …"
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate found", path)
	}
	return pool, nil
}

// loadClientCert loads a client certificate; nil, nil when neither file is
// set. Errors name the key and the file.
func loadClientCert(certFile, keyFile string) (*tls.Certificate, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case keyFile == "":
		return nil, errors.New("key_file: required with cert_file")
	case certFile == "":
		return nil, errors.New("cert_file: required with key_file")
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("cert_file: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("key_file: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	switch {
	case err == nil:
		return &pair, nil
	case strings.Contains(err.Error(), "certificate input"), strings.Contains(err.Error(), "x509:"):
		return nil, fmt.Errorf("cert_file: %s: %v", certFile, err)
	case strings.Contains(err.Error(), "does not match"):
		return nil, fmt.Errorf("key_file: %s does not match cert_file %s: %v", keyFile, certFile, err)
	}
	return nil, fmt.Errorf("key_file: %s: %v", keyFile, err)
}
