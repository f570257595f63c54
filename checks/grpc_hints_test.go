package checks_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// serveTLSHTTP1 serves handler over TLS in HTTP/1.1 only on 127.0.0.1,
// offering the ALPN protocols protos (none: ALPN ignored, as a server
// without HTTP/2 support that predates it does).
func serveTLSHTTP1(t *testing.T, cert tls.Certificate, protos []string, handler http.Handler) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: protos})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, Protocols: new(http.Protocols), ErrorLog: log.New(io.Discard, "", 0)}
	srv.Protocols.SetHTTP1(true)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "https://" + ln.Addr().String()
}

// A TLS server that does not negotiate h2 by ALPN is no gRPC server: the
// run fails at once with cause protocol instead of speaking HTTP/1.1 to
// it (and waiting for an answer that never comes).
func TestGRPCRequiresALPNH2(t *testing.T) {
	cert, caFile := grpcCert(t)
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	spec := checks.GRPCSpec{TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{CAFile: caFile}}}
	for _, tc := range []struct {
		name   string
		protos []string
	}{
		{"ALPN ignored", nil},
		{"ALPN http/1.1 only", []string{"http/1.1"}},
	} {
		url := serveTLSHTTP1(t, cert, tc.protos, hang)
		c, err := checks.NewGRPC(spec, checks.Expect{}, checks.Options{Timeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := c.Run(context.Background(), checks.Target{Name: "svc", URL: url})
		took := time.Since(start)
		t.Logf("%s: cause %q: %s", tc.name, r.Cause, r.Err)
		want := "protocol: the server did not negotiate HTTP/2 (ALPN h2): not a gRPC server?"
		if r.Cause != checks.CauseProtocol || !strings.HasPrefix(r.Err, want) {
			t.Errorf("%s: cause %q err %q\nwant protocol: %q", tc.name, r.Cause, r.Err, want)
		}
		if took > 2*time.Second {
			t.Errorf("%s: the run took %s: want it to fail at the handshake, not wait for the 3s timeout", tc.name, took)
		}
		if tc.protos == nil && r.CertExpiry.IsZero() {
			t.Errorf("%s: no cert expiry: the handshake saw the certificate", tc.name)
		}
	}
}

// The wrong transport for the server says which one would fit: TLS to a
// plain-text server, h2c to a TLS server, h2c to an HTTP/1.1 server.
func TestGRPCTransportHints(t *testing.T) {
	cert, caFile := grpcCert(t)
	tlsGRPC := startGRPC(t, &cert, true)
	h2cGRPC := startGRPC(t, nil, true)
	h1 := http.NewServeMux()
	h1.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h1srv := &http.Server{Handler: h1, Protocols: new(http.Protocols), ErrorLog: log.New(io.Discard, "", 0)}
	h1srv.Protocols.SetHTTP1(true)
	go h1srv.Serve(ln)
	t.Cleanup(func() { h1srv.Close() })
	h1URL := "http://" + ln.Addr().String()
	tlsH1URL := serveTLSHTTP1(t, cert, []string{"h2", "http/1.1"}, h1) // offers h2, is no h2c server
	lingerURL := serveHTTP1Lingering(t)

	withTLS := checks.GRPCSpec{TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{CAFile: caFile}}}
	h2c := checks.GRPCSpec{TLS: checks.GRPCTLSOff()}
	for _, tc := range []struct {
		name   string
		spec   checks.GRPCSpec
		url    string
		cause  checks.Cause
		errHas string
	}{
		{"TLS to a plain-text gRPC server", withTLS, strings.Replace(h2cGRPC, "http://", "https://", 1), checks.CauseTLS, "(a plain-text server? set grpc.tls: false)"},
		{"TLS to a plain-text HTTP/1.1 server", withTLS, strings.Replace(h1URL, "http://", "https://", 1), checks.CauseTLS, "(a plain-text server? set grpc.tls: false)"},
		{"h2c to a TLS gRPC server", h2c, strings.Replace(tlsGRPC, "https://", "http://", 1), checks.CauseProtocol, "protocol: no HTTP/2 answer to h2c (grpc.tls: false): the connection was closed without an answer (a TLS server? drop tls: false)"},
		{"h2c to a TLS HTTP server", h2c, strings.Replace(tlsH1URL, "https://", "http://", 1), checks.CauseProtocol, "(a TLS server? drop tls: false)"},
		{"h2c to an HTTP/1.1 server", h2c, lingerURL, checks.CauseProtocol, "protocol: no HTTP/2 answer to h2c (grpc.tls: false): the server answered in HTTP/1.1 (\"HTTP/1.1 "},
	} {
		r := grpcRun(t, tc.spec, checks.Expect{}, tc.url)
		t.Logf("%s: cause %q: %s", tc.name, r.Cause, r.Err)
		if r.Cause != tc.cause || !strings.Contains(r.Err, tc.errHas) {
			t.Errorf("%s: cause %q err %q\nwant %q and the error to contain %q", tc.name, r.Cause, r.Err, tc.cause, tc.errHas)
		}
	}
}

// serveHTTP1Lingering answers the first request head on each connection
// with an HTTP/1.1 505 and closes as nginx does (lingering close): it
// half-closes and reads what the client still sends until the client
// closes. net/http's server closes at once with the client's later
// frames unread, so the kernel resets the connection, and a reset that
// arrives before the client read the status line discards it: the
// client then sees no answer at all, which is a race, not the case under
// test.
func serveHTTP1Lingering(t *testing.T) string {
	t.Helper()
	return checktest.RawOrigin(t, func(c net.Conn, br *bufio.Reader) {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				break
			}
		}
		io.WriteString(c, "HTTP/1.1 505 HTTP Version Not Supported\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		c.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, br)
	})
}

// failingHealth answers every Check with code and message.
type failingHealth struct {
	healthpb.UnimplementedHealthServer
	code codes.Code
	msg  string
}

func (f *failingHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return nil, status.Error(f.code, f.msg)
}

// The server's grpc-message is shown as vigil shows every text a server
// sends: URLs without userinfo and with query values as "…", values of
// sensitive keys (password=, token: …, JSON keys) masked.
func TestGRPCMessageRedacted(t *testing.T) {
	for _, tc := range []struct {
		msg     string
		has     []string
		hasNot  []string
		service string
	}{
		{msg: "backend db down: password=hunter2 at http://admin:s3cret@db.internal/x?token=abc123&db=main",
			has:    []string{`grpc-status 14 (UNAVAILABLE): "backend db down: password=[masked: 7 bytes, sha256:`, ` at http://db.internal/x?db=…&token=…"`},
			hasNot: []string{"hunter2", "s3cret", "admin", "abc123", "main"}},
		{msg: `upstream said Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig; api_key="k-123 456", session=xyz`,
			has:    []string{"Authorization: [masked: ", `api_key=[masked: 9 bytes`, "session=[masked: 3 bytes"},
			hasNot: []string{"eyJhbGciOiJIUzI1NiJ9", "k-123", "xyz"}},
		{msg: `{"error":"db down","db_password":"hunter2","url":"https://u:p@db.internal/?sig=zz"}`,
			has:    []string{`db_password\":\"[masked: 7 bytes`, `https://db.internal/?sig=…`, `db down`},
			hasNot: []string{"hunter2", "zz", "u:p@"}},
		{msg: "unknown service", has: []string{`"unknown service"`}},
	} {
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, &failingHealth{code: codes.Unavailable, msg: tc.msg})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		r := grpcRun(t, checks.GRPCSpec{TLS: checks.GRPCTLSOff()}, checks.Expect{}, "http://"+ln.Addr().String())
		srv.Stop()
		t.Logf("cause %q: %s", r.Cause, r.Err)
		if r.Cause != checks.CauseStatus {
			t.Errorf("%q: cause %q err %q, want status", tc.msg, r.Cause, r.Err)
		}
		a, _ := assertionByName(r, "grpc-status")
		for _, s := range tc.has {
			if !strings.Contains(r.Err, s) {
				t.Errorf("%q: err %q\nwant it to contain %q", tc.msg, r.Err, s)
			}
		}
		for _, s := range tc.hasNot {
			if strings.Contains(r.Err, s) || strings.Contains(a.Got, s) {
				t.Errorf("%q: err %q (got %q) shows %q", tc.msg, r.Err, a.Got, s)
			}
		}
	}
}

// vigil sends no credentials to a gRPC server: a user or password in the
// URL is a config error rather than silently dropped.
func TestGRPCURLWithUserinfo(t *testing.T) {
	on, off := checks.GRPCSpec{}, checks.GRPCSpec{TLS: checks.GRPCTLSOff()}
	for _, tc := range []struct {
		spec checks.GRPCSpec
		url  string
	}{{on, "https://admin:s3cret@10.0.0.1:50051"}, {off, "http://admin@10.0.0.1:50051"}, {on, "tcp://u:p@10.0.0.1:50051"}} {
		err := tc.spec.URLFits(tc.url)
		if err == nil || !strings.Contains(err.Error(), `a grpc check sends no user or password: remove the "user:…@" from the URL`) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("URLFits(%s): %v", tc.url, err)
		}
	}
}
