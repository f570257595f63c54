package checks_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-viper/mapstructure/v2"

	"github.com/vigil-synthetics/vigil/checks"
)

// tlsMaterial is the certificate of an httptest TLS server (valid for
// 127.0.0.1, signed by nothing in the system pool) and a CA file that
// trusts it.
func tlsMaterial(t *testing.T) (*tls.Config, string, time.Time) {
	t.Helper()
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	cfg := &tls.Config{Certificates: srv.TLS.Certificates, MinVersion: tls.VersionTLS12}
	return cfg, httptestCAFile(t, srv), srv.Certificate().NotAfter
}

// received collects what a test server read from its clients.
type received struct {
	mu sync.Mutex
	b  strings.Builder
}

func (r *received) add(s string) { r.mu.Lock(); r.b.WriteString(s); r.mu.Unlock() }
func (r *received) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.b.String()
}

// TestTCPTLS: tcp.tls handshakes right after the connect and verifies the
// server as a tls check does (cause cert for an untrusted chain or a
// wrong name, before anything is sent), reports the certificate's expiry
// and the tls phase, and then talks over TLS; cert_min_days applies.
func TestTCPTLS(t *testing.T) {
	cfg, ca, notAfter := tlsMaterial(t)
	var got received
	imaps := lineServer(t, func(c net.Conn) {
		tc := tls.Server(c, cfg)
		if err := tc.Handshake(); err != nil {
			return
		}
		tc.Write([]byte("* OK IMAP4rev1 ready\r\n"))
		b, _ := io.ReadAll(tc)
		got.add(string(b))
	})
	plain := lineServer(t, func(c net.Conn) {
		c.Write([]byte("* OK IMAP4rev1 ready\r\n"))
		time.Sleep(200 * time.Millisecond)
	})
	yes := func(o checks.TLSOptions) *checks.TLSOptions { return &o }

	cases := []struct {
		name   string
		target string
		spec   checks.TCPSpec
		expect checks.Expect
		cause  checks.Cause
		err    string
		sent   bool // the server must have read the send
	}{
		{"trusted", imaps, checks.TCPSpec{TLS: yes(checks.TLSOptions{CAFile: ca}), Send: "a1 LOGOUT\r\n", Expect: "* OK"}, checks.Expect{}, "", "", true},
		{"default verification", imaps, checks.TCPSpec{TLS: yes(checks.TLSOptions{}), Send: "a1 LOGIN user hunter2\r\n", Expect: "* OK"}, checks.Expect{},
			checks.CauseCert, "cert: signed by an unknown authority", false},
		{"wrong name", imaps, checks.TCPSpec{TLS: yes(checks.TLSOptions{CAFile: ca, ServerName: "imap.example.net"}), Send: "a1 LOGIN user hunter2\r\n"}, checks.Expect{},
			checks.CauseCert, "cert: not valid for imap.example.net (valid for example.com, *.example.com, 127.0.0.1, ::1)", false},
		{"insecure", imaps, checks.TCPSpec{TLS: yes(checks.TLSOptions{InsecureSkipVerify: true}), Expect: "* OK"}, checks.Expect{}, "", "", false},
		{"cert_min_days", imaps, checks.TCPSpec{TLS: yes(checks.TLSOptions{CAFile: ca}), Expect: "* OK"}, checks.Expect{CertMinDays: 1000000},
			checks.CauseCert, "certificate expires in", false},
		{"plain server", plain, checks.TCPSpec{TLS: yes(checks.TLSOptions{CAFile: ca}), Expect: "* OK"}, checks.Expect{},
			checks.CauseTLS, "tls: first record does not look like a TLS handshake", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := got.String()
			c, err := checks.NewTCP(tc.spec, tc.expect, checks.Options{Timeout: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			r := c.Run(context.Background(), checks.Target{URL: tc.target})
			if r.Cause != tc.cause || !strings.HasPrefix(r.Err, tc.err) {
				t.Fatalf("cause %q err %q, want %q %q (assertions %+v)", r.Cause, r.Err, tc.cause, tc.err, r.Assertions)
			}
			if tc.cause != checks.CauseTLS {
				if !r.CertExpiry.Equal(notAfter) {
					t.Errorf("cert expiry %v, want %v", r.CertExpiry, notAfter)
				}
				if r.Phases.TLS <= 0 {
					t.Errorf("tls phase %v", r.Phases.TLS)
				}
			}
			if tc.cause == "" && tc.spec.TLS.CAFile != "" && r.LastChainExpiry.IsZero() {
				t.Error("no last chain expiry for a verified chain")
			}
			// The server reads until the client closes, so its record is
			// complete a moment after the run.
			deadline := time.Now().Add(2 * time.Second)
			for tc.sent && !strings.Contains(got.String(), tc.spec.Send) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
			if sent := strings.TrimPrefix(got.String(), before); tc.sent != (sent != "") {
				t.Errorf("server read %q, want the send: %v", sent, tc.sent)
			}
		})
	}

	if _, err := checks.NewTCP(checks.TCPSpec{}, checks.Expect{CertMinDays: 7}, checks.Options{}); !errors.Is(err, checks.ErrUnsupported) ||
		!strings.Contains(err.Error(), "expect.cert_min_days: a tcp check without tcp.tls sees no certificate") {
		t.Errorf("cert_min_days without tls: %v", err)
	}
	if _, err := checks.NewTCP(checks.TCPSpec{TLS: yes(checks.TLSOptions{MinVersion: "1.4"})}, checks.Expect{}, checks.Options{}); err == nil ||
		!strings.Contains(err.Error(), `tcp.tls.min_version: "1.4"`) {
		t.Errorf("bad min_version: %v", err)
	}
}

// smtpServer is an SMTP server that offers STARTTLS; after the handshake
// it records what it reads. afterGo is written after its "220 go ahead".
func smtpServer(t *testing.T, cfg *tls.Config, afterGo string, got *received) string {
	return lineServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		c.Write([]byte("220 mail.test ESMTP\r\n"))
		if l, _ := br.ReadString('\n'); !strings.HasPrefix(l, "EHLO") {
			return
		}
		c.Write([]byte("250-mail.test\r\n250-PIPELINING\r\n250 STARTTLS\r\n"))
		if l, _ := br.ReadString('\n'); l != "STARTTLS\r\n" {
			c.Write([]byte("500 what\r\n"))
			return
		}
		c.Write([]byte("220 go ahead\r\n" + afterGo))
		tc := tls.Server(c, cfg)
		if err := tc.Handshake(); err != nil {
			return
		}
		tbr := bufio.NewReader(tc)
		l, _ := tbr.ReadString('\n')
		got.add(l)
		if strings.HasPrefix(l, "EHLO") {
			tc.Write([]byte("250-mail.test\r\n250 AUTH PLAIN\r\n"))
		}
		tbr.ReadString('\n')
	})
}

// TestTCPStartTLS: a tcp.query step with starttls upgrades the connection
// to TLS in the middle of the conversation (SMTP STARTTLS, RFC 3207),
// verified as tcp.tls is, and the later steps talk over TLS. Bytes the
// server sends after the 220 and before the handshake fail the run.
func TestTCPStartTLS(t *testing.T) {
	cfg, ca, notAfter := tlsMaterial(t)
	var got received
	good := smtpServer(t, cfg, "", &got)
	injecting := smtpServer(t, cfg, "250 injected\r\n", &got)
	query := []checks.TCPQueryStep{
		{Expect: "~^220 "},
		{Send: "EHLO vigil\r\n"},
		{Expect: "~^250 STARTTLS"},
		{Send: "STARTTLS\r\n"},
		{Expect: "~^220 "},
		{StartTLS: true, Send: "EHLO vigil-tls\r\n"},
		{Expect: "~^250 AUTH"},
		{Send: "QUIT\r\n"},
	}
	run := func(target string, o *checks.TLSOptions) checks.Result {
		t.Helper()
		c, err := checks.NewTCP(checks.TCPSpec{Query: query, TLS: o}, checks.Expect{CertMinDays: 1}, checks.Options{Timeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return c.Run(context.Background(), checks.Target{URL: target})
	}

	r := run(good, &checks.TLSOptions{CAFile: ca})
	if !r.OK || !r.CertExpiry.Equal(notAfter) || r.Phases.TLS <= 0 {
		t.Fatalf("ok %v %s %s, expiry %v, tls %v; assertions %+v", r.OK, r.Cause, r.Err, r.CertExpiry, r.Phases.TLS, r.Assertions)
	}
	if s := got.String(); s != "EHLO vigil-tls\r\n" {
		t.Errorf("over TLS the server read %q", s)
	}

	// starttls without tcp.tls verifies against the system pool.
	r = run(good, nil)
	if r.Cause != checks.CauseCert || !strings.HasPrefix(r.Err, "cert: signed by an unknown authority") {
		t.Errorf("default verification: %s %s", r.Cause, r.Err)
	}
	if s := got.String(); s != "EHLO vigil-tls\r\n" {
		t.Errorf("sent over an unverified connection: %q", s)
	}

	r = run(injecting, &checks.TLSOptions{CAFile: ca})
	if want := `tls: tcp query[5].starttls: the server sent 14 more bytes before the TLS handshake ("250 injected\r\n")`; r.Cause != checks.CauseTLS || r.Err != want {
		t.Errorf("injection: %s %q, want tls %q", r.Cause, r.Err, want)
	}
}

// TestTCPTLSDecode: the loader's decode hook reads tcp.tls as true (the
// defaults), false or "false" (plain TCP), or a map of TLS settings, and
// any other text is an error naming what is wanted.
func TestTCPTLSDecode(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want *checks.TLSOptions
		err  string
	}{
		{true, &checks.TLSOptions{}, ""},
		{"true", &checks.TLSOptions{}, ""},
		{false, nil, ""},
		{"false", nil, ""},
		{map[string]any{"server_name": "db.internal"}, &checks.TLSOptions{ServerName: "db.internal"}, ""},
		{"yes", nil, `"yes": want true, false or a map of TLS settings`},
	} {
		var spec checks.TCPSpec
		d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &spec, DecodeHook: checks.DecodeHook})
		if err != nil {
			t.Fatal(err)
		}
		err = d.Decode(map[string]any{"tls": tc.in})
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.in, err)
		case (spec.TLS == nil) != (tc.want == nil) || spec.TLS != nil && *spec.TLS != *tc.want:
			t.Errorf("%v: got %+v, want %+v", tc.in, spec.TLS, tc.want)
		}
	}
}
