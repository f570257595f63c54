package checks_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// TestTLSClientCertWaitNotTimed: a tls check presenting a client
// certificate over TLS 1.3 still waits for a refusal after the handshake,
// but that wait is not the origin's time: expect.duration judges (and
// total reports) the handshake, so a fast origin passes a 200ms limit. A
// refused certificate still fails.
func TestTLSClientCertWaitNotTimed(t *testing.T) {
	dir := t.TempDir()
	ca := newClientCA(t, "vigil test client CA")
	certFile, keyFile := ca.issue(t, dir, "probe")
	strangerCert, strangerKey := newClientCA(t, "some other CA").issue(t, dir, "stranger")
	srv := mtlsServer(t, ca, tls.VersionTLS13)
	caFile := httptestCAFile(t, srv)
	target := checks.Target{URL: "tls://" + strings.TrimPrefix(srv.URL, "https://")}
	expect := checks.Expect{Duration: 200 * time.Millisecond}

	c, err := checks.NewTLS(checks.TLSSpec{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}, expect, checks.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Run(context.Background(), target)
	if !r.OK || r.Phases.Total >= 200*time.Millisecond {
		t.Fatalf("accepted certificate: ok %v cause %q err %q total %s; want a pass well under 200ms", r.OK, r.Cause, r.Err, r.Phases.Total)
	}

	c, err = checks.NewTLS(checks.TLSSpec{CAFile: caFile, CertFile: strangerCert, KeyFile: strangerKey}, expect, checks.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r = c.Run(context.Background(), target)
	if r.OK || r.Cause != checks.CauseTLS || !strings.Contains(r.Err, "(the server refused the client certificate)") {
		t.Fatalf("refused certificate: ok %v cause %q err %q; want cause tls naming the refusal", r.OK, r.Cause, r.Err)
	}
}
