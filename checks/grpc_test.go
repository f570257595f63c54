package checks_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/vigil-synthetics/vigil/checks"
)

// grpcCert is a self-signed CA certificate for 127.0.0.1, as a server
// certificate and as a PEM file a client can trust (ca_file).
func grpcCert(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: "grpc.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"grpc.test"},
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, file
}

// startGRPC serves a real grpc-go server with the standard health service
// on 127.0.0.1: the server as a whole and "ok.Svc" SERVING, "down.Svc"
// NOT_SERVING; with cert, over TLS, else in plain text (h2c). Without
// healthSvc no health service is registered.
func startGRPC(t *testing.T, cert *tls.Certificate, healthSvc bool) string {
	t.Helper()
	var opts []grpc.ServerOption
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{*cert}})))
	}
	srv := grpc.NewServer(opts...)
	if healthSvc {
		h := health.NewServer()
		h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		h.SetServingStatus("ok.Svc", healthpb.HealthCheckResponse_SERVING)
		h.SetServingStatus("down.Svc", healthpb.HealthCheckResponse_NOT_SERVING)
		healthpb.RegisterHealthServer(srv, h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	if cert != nil {
		return "https://" + ln.Addr().String()
	}
	return "http://" + ln.Addr().String()
}

func grpcRun(t *testing.T, spec checks.GRPCSpec, e checks.Expect, url string) checks.Result {
	t.Helper()
	c, err := checks.NewGRPC(spec, e, checks.Options{Check: "grpc", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("NewGRPC: %v", err)
	}
	return c.Run(context.Background(), checks.Target{Name: "svc", URL: url})
}

func TestGRPCHealth(t *testing.T) {
	cert, caFile := grpcCert(t)
	tlsURL := startGRPC(t, &cert, true)
	h2cURL := startGRPC(t, nil, true)
	bareURL := startGRPC(t, nil, false)
	trusted := func(service string) checks.GRPCSpec {
		return checks.GRPCSpec{Service: service, TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{CAFile: caFile}}}
	}
	h2c := func(service string) checks.GRPCSpec {
		return checks.GRPCSpec{Service: service, TLS: checks.GRPCTLSOff()}
	}

	// A non-gRPC HTTP/2 server (h2c): a web app's 404.
	web := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("404 page not found\n"))
	}))
	web.Config.Protocols = new(http.Protocols)
	web.Config.Protocols.SetHTTP1(true)
	web.Config.Protocols.SetUnencryptedHTTP2(true)
	web.Start()
	t.Cleanup(web.Close)
	// An HTTP/1.1-only server.
	h1 := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(h1.Close)

	cases := []struct {
		name   string
		spec   checks.GRPCSpec
		expect checks.Expect
		url    string
		ok     bool
		cause  checks.Cause
		errHas string
	}{
		{name: "TLS, the server SERVING", spec: trusted(""), url: tlsURL, ok: true},
		{name: "TLS, a service SERVING", spec: trusted("ok.Svc"), url: tlsURL, ok: true,
			expect: checks.Expect{CertMinDays: 0, Duration: 4 * time.Second}},
		{name: "TLS, NOT_SERVING", spec: trusted("down.Svc"), url: tlsURL, cause: checks.CauseStatus,
			errHas: `grpc health of service "down.Svc": NOT_SERVING (grpc-status 0 (OK)), want SERVING`},
		{name: "TLS, unknown service", spec: trusted("nope.Svc"), url: tlsURL, cause: checks.CauseStatus,
			errHas: `grpc health of service "nope.Svc": grpc-status 5 (NOT_FOUND): "unknown service" (the health service does not know service "nope.Svc")`},
		{name: "TLS, certificate not trusted", spec: checks.GRPCSpec{}, url: tlsURL, cause: checks.CauseCert,
			errHas: "cert: signed by an unknown authority: leaf CN=grpc.test (self-signed)"},
		{name: "TLS, insecure_skip_verify", spec: checks.GRPCSpec{TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{InsecureSkipVerify: true}}}, url: tlsURL, ok: true},
		{name: "TLS, another name", spec: checks.GRPCSpec{TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{CAFile: caFile, ServerName: "other.test"}}}, url: tlsURL,
			cause: checks.CauseCert, errHas: "other.test"},
		{name: "TLS to a plain-text server", spec: trusted(""), url: strings.Replace(h2cURL, "http://", "https://", 1), cause: checks.CauseTLS},
		{name: "h2c, SERVING", spec: h2c(""), url: h2cURL, ok: true},
		{name: "h2c, NOT_SERVING", spec: h2c("down.Svc"), url: h2cURL, cause: checks.CauseStatus, errHas: "NOT_SERVING"},
		{name: "h2c, tcp:// target", spec: h2c("ok.Svc"), url: strings.Replace(h2cURL, "http://", "tcp://", 1), ok: true},
		{name: "no health service", spec: h2c(""), url: bareURL, cause: checks.CauseStatus,
			errHas: "grpc health of the server: grpc-status 12 (UNIMPLEMENTED)"},
		{name: "not a gRPC server", spec: h2c(""), url: web.URL, cause: checks.CauseProtocol,
			errHas: `protocol: not a gRPC answer to /grpc.health.v1.Health/Check: HTTP 404, Content-Type "text/plain; charset=utf-8" over HTTP/2.0`},
		{name: "HTTP/1.1 only", spec: h2c(""), url: h1.URL, cause: checks.CauseProtocol, errHas: "protocol: no HTTP/2 answer to h2c (grpc.tls: false)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := grpcRun(t, tc.spec, tc.expect, tc.url)
			t.Logf("cause %q: %s", r.Cause, r.Err)
			if r.OK != tc.ok || r.Cause != tc.cause {
				t.Fatalf("ok=%v cause=%q err=%q, want ok=%v cause=%q\n%+v", r.OK, r.Cause, r.Err, tc.ok, tc.cause, r.Assertions)
			}
			if !strings.Contains(r.Err, tc.errHas) {
				t.Errorf("err %q\nwant it to contain %q", r.Err, tc.errHas)
			}
			if tc.ok {
				if r.Proto != "HTTP/2.0" || r.Phases.TTFB <= 0 || r.Phases.Connect <= 0 {
					t.Errorf("proto %q phases %+v: want HTTP/2.0 with connect and ttfb", r.Proto, r.Phases)
				}
				if strings.HasPrefix(tc.url, "https://") && (r.CertExpiry.IsZero() || r.Phases.TLS <= 0) {
					t.Errorf("over TLS: cert expiry %v, tls phase %s: want both", r.CertExpiry, r.Phases.TLS)
				}
			}
		})
	}
}

// A server that never answers: the run ends at the check's timeout with
// cause timeout, and a bounded wait.
func TestGRPCTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	c, err := checks.NewGRPC(checks.GRPCSpec{TLS: checks.GRPCTLSOff()}, checks.Expect{}, checks.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := c.Run(context.Background(), checks.Target{Name: "svc", URL: "http://" + ln.Addr().String()})
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("the run took %s, want about its 1s timeout", took)
	}
	if r.Cause != checks.CauseTimeout || !strings.Contains(r.Err, "within 1s") {
		t.Errorf("cause %q err %q, want timeout within 1s", r.Cause, r.Err)
	}
	// Refused: nothing listens.
	addr := ln.Addr().String()
	ln.Close()
	r = c.Run(context.Background(), checks.Target{Name: "svc", URL: "http://" + addr})
	if r.Cause != checks.CauseConnectRefused {
		t.Errorf("dead port: cause %q err %q, want connect_refused", r.Cause, r.Err)
	}
}

func TestGRPCConfig(t *testing.T) {
	// grpc.tls decodes as tcp.tls does, but false is h2c, not "unset".
	for _, tc := range []struct {
		in  any
		off bool
		ca  string
		err string
	}{
		{true, false, "", ""},
		{false, true, "", ""},
		{"false", true, "", ""},
		{map[string]any{"ca_file": "/x.pem"}, false, "/x.pem", ""},
		{"maybe", false, "", `"maybe": want true, false or a map of TLS settings`},
	} {
		var spec checks.GRPCSpec
		d, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &spec, DecodeHook: checks.DecodeHook, ErrorUnused: true})
		if err != nil {
			t.Fatal(err)
		}
		err = d.Decode(map[string]any{"tls": tc.in, "service": "a.B"})
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.in, err)
		case spec.TLS.Off() != tc.off || spec.UsesTLS() == tc.off || spec.TLS != nil && spec.TLS.CAFile != tc.ca:
			t.Errorf("%v: got %+v (off %v), want off %v ca_file %q", tc.in, spec.TLS, spec.TLS.Off(), tc.off, tc.ca)
		}
	}
	var unset checks.GRPCSpec
	if !unset.UsesTLS() {
		t.Error("grpc without tls: want TLS on by default")
	}

	for _, tc := range []struct {
		spec   checks.GRPCSpec
		expect checks.Expect
		want   string
	}{
		{checks.GRPCSpec{TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{MinVersion: "1.4"}}}, checks.Expect{}, `grpc.tls.min_version: "1.4": want`},
		{checks.GRPCSpec{TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{CAFile: "/nonexistent/ca.pem"}}}, checks.Expect{}, `grpc.tls.ca_file: `},
		{checks.GRPCSpec{TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{CertFile: "/x.pem"}}}, checks.Expect{}, `grpc.tls.key_file: required with cert_file`},
		{checks.GRPCSpec{IPProtocol: "4"}, checks.Expect{}, `grpc.ip_protocol: "4": want "ip4" or "ip6" (write "ip4")`},
		{checks.GRPCSpec{}, checks.Expect{Status: checks.StatusList{"200"}}, `expect.status: grpc checks do not use it`},
		{checks.GRPCSpec{}, checks.Expect{RCode: []string{"NOERROR"}}, `expect.rcode: grpc checks do not use it`},
		{checks.GRPCSpec{TLS: checks.GRPCTLSOff()}, checks.Expect{CertMinDays: 7}, `expect.cert_min_days: a grpc check with tls: false sees no certificate`},
	} {
		_, err := checks.NewGRPC(tc.spec, tc.expect, checks.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to contain %q", tc.spec, err, tc.want)
		}
	}

	on, off := checks.GRPCSpec{}, checks.GRPCSpec{TLS: checks.GRPCTLSOff()}
	if err := on.URLFits("http://10.0.0.1:50051"); err == nil || !strings.Contains(err.Error(), "grpc.tls: an http:// URL is plain text") {
		t.Errorf("TLS with http://: %v", err)
	}
	if err := off.URLFits("https://10.0.0.1:50051"); err == nil || !strings.Contains(err.Error(), "grpc.tls: false is plain-text HTTP/2 (h2c), but the URL is https://") {
		t.Errorf("h2c with https://: %v", err)
	}
	for _, u := range []string{"https://h:1", "tls://h:1", "tcp://h:1"} {
		if err := on.URLFits(u); err != nil {
			t.Errorf("TLS with %s: %v", u, err)
		}
	}
	weak := checks.GRPCSpec{TLS: &checks.GRPCTLS{TLSOptions: checks.TLSOptions{InsecureSkipVerify: true}}}
	if w := weak.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0], "tls.insecure_skip_verify: true") {
		t.Errorf("warnings %q", w)
	}
}
