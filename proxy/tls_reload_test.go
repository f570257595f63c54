package proxy

import (
	"crypto/tls"
	"testing"
)

// TestTLSSettingsApplyOnReload: a reload that changes certs, cert_file or
// tls_min_version applies them to new connections of the running TLS
// listener, no restart: a name added to certs is served its certificate,
// and a TLS 1.2 client is refused once tls_min_version is "1.3". They used
// to take effect only on a restart, which drops every connection.
func TestTLSSettingsApplyOnReload(t *testing.T) {
	cfg := pool1(PolicyFirst, newBackend(t, "a").srv.URL)
	h, _, addr, _ := runTLSProxyReg(t, cfg)
	served := func(name string, max uint16) (string, error) {
		t.Helper()
		c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: name, InsecureSkipVerify: true, MaxVersion: max})
		if err != nil {
			return "", err
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
	}
	if got, err := served("new.example", 0); err != nil || got != "vigil test" {
		t.Fatalf("before the reload: %q %v, want cert_file's", got, err)
	}
	next := h.p.state.Load().cfg
	nc, nk := certFor(t, "new.example")
	next.Certs = []CertPair{{nc, nk}}
	next.TLSMinVersion = "1.3"
	if err := h.p.Reload(next); err != nil {
		t.Fatal(err)
	}
	if got, err := served("new.example", 0); err != nil || got != "new.example" {
		t.Errorf("after adding certs for new.example: served %q %v, want its certificate", got, err)
	}
	if _, err := served("new.example", tls.VersionTLS12); err == nil {
		t.Errorf("a TLS 1.2 client after tls_min_version 1.3 was reloaded: handshake succeeded")
	}
	next.TLSMinVersion = ""
	next.Certs = nil
	if err := h.p.Reload(next); err != nil {
		t.Fatal(err)
	}
	if got, err := served("new.example", tls.VersionTLS12); err != nil || got != "vigil test" {
		t.Errorf("after the certs were removed and TLS 1.2 allowed again: %q %v", got, err)
	}
}
