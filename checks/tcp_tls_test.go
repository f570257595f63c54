package checks_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// lineServer answers each connection with handle; it stops at test end.
func lineServer(t *testing.T, handle func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return "tcp://" + ln.Addr().String()
}

func TestTCP(t *testing.T) {
	redis := lineServer(t, func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		if line == "PING\r\n" {
			c.Write([]byte("+PONG\r\n"))
		} else {
			c.Write([]byte("-ERR unknown command\r\n"))
		}
	})
	banner := lineServer(t, func(c net.Conn) {
		time.Sleep(30 * time.Millisecond)
		c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
		time.Sleep(100 * time.Millisecond)
	})
	silent := lineServer(t, func(c net.Conn) { time.Sleep(time.Second) })
	closer := lineServer(t, func(c net.Conn) {})
	origin := checktest.NewOrigin()
	defer origin.Close()

	tests := []struct {
		name   string
		target string
		spec   checks.TCPSpec
		expect checks.Expect
		cause  checks.Cause
		errHas string
		short  bool // the case waits for the timeout
	}{
		{name: "connect only", target: closer},
		{name: "send expect", target: redis, spec: checks.TCPSpec{Send: "PING\r\n", Expect: "+PONG"}},
		{name: "send expect regex", target: redis, spec: checks.TCPSpec{Send: "PING\r\n", Expect: `~^\+PONG\r\n$`}},
		{name: "expect mismatch", target: redis, spec: checks.TCPSpec{Send: "HELLO\r\n", Expect: "+PONG"},
			cause: checks.CauseBody, errHas: "tcp expect: +PONG not received (got 22 bytes: \"-ERR unknown command\\r\\n\")"},
		{name: "banner", target: banner, spec: checks.TCPSpec{Expect: "~^SSH-2\\.0-"}, expect: checks.Expect{TTFB: time.Second}},
		{name: "banner ttfb too slow", target: banner, expect: checks.Expect{TTFB: 5 * time.Millisecond}, cause: checks.CauseTTFB},
		{name: "http over tcp", target: strings.Replace(origin.URL(), "http://", "tcp://", 1),
			spec: checks.TCPSpec{Send: "GET /healthz HTTP/1.0\r\n\r\n", Expect: "200 OK"}},
		{name: "silent", target: silent, spec: checks.TCPSpec{Expect: "hello"}, cause: checks.CauseTimeout, errHas: "no response within", short: true},
		{name: "closed without answer", target: closer, spec: checks.TCPSpec{Expect: "hello"}, cause: checks.CauseReset},
		{name: "refused", target: "tcp://" + deadAddr(t), cause: checks.CauseConnectRefused},
		{name: "dns", target: "tcp://db.invalid:5432", cause: checks.CauseDNS},
		{name: "duration", target: silent, spec: checks.TCPSpec{Send: "x"}, expect: checks.Expect{Duration: time.Nanosecond}, cause: checks.CauseDuration, short: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := 3 * time.Second
			if tt.short {
				timeout = 300 * time.Millisecond
			}
			c, err := checks.NewTCP(tt.spec, tt.expect, checks.Options{Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			r := c.Run(context.Background(), checks.Target{URL: tt.target})
			if r.Cause != tt.cause || r.OK != (tt.cause == "") {
				t.Fatalf("cause %q (%s), want %q; assertions %+v", r.Cause, r.Err, tt.cause, r.Assertions)
			}
			if !strings.Contains(r.Err, tt.errHas) {
				t.Errorf("Err %q, want it to contain %q", r.Err, tt.errHas)
			}
			if tt.cause == "" && r.Phases.Connect <= 0 {
				t.Errorf("connect phase %v", r.Phases.Connect)
			}
		})
	}
}

func TestTLSCheck(t *testing.T) {
	o := checktest.NewTLSOrigin(checktest.WithCert(checktest.CertOptions{NotAfter: time.Now().Add(10*24*time.Hour + time.Hour)}))
	defer o.Close()
	ca, err := o.CAFile()
	if err != nil {
		t.Fatal(err)
	}
	plain := checktest.NewOrigin()
	defer plain.Close()
	hole := checktest.NewOrigin(checktest.WithMode(checktest.ModeBlackhole))
	defer hole.Close()
	target := "tls://" + o.Addr()

	tests := []struct {
		name    string
		target  string
		spec    checks.TLSSpec
		expect  checks.Expect
		cause   checks.Cause
		errHas  string
		failing string // the failing assertion
		listed  string // every assertion name:ok, in order
	}{
		{name: "ok", target: target, spec: checks.TLSSpec{CAFile: ca}, expect: checks.Expect{CertMinDays: 7},
			listed: "cert chain:true cert hostname:true cert_min_days:true"},
		{name: "https url", target: o.URL(), spec: checks.TLSSpec{CAFile: ca}, listed: "cert chain:true cert hostname:true"},
		{name: "unknown authority", target: target, cause: checks.CauseCert, errHas: "unknown authority", failing: "cert chain",
			listed: "cert chain:false cert hostname:true"},
		{name: "hostname mismatch", target: target, spec: checks.TLSSpec{CAFile: ca, ServerName: "api.example"}, cause: checks.CauseCert,
			errHas: "not valid for api.example (valid for localhost, 127.0.0.1, ::1)", failing: "cert hostname"},
		{name: "days left", target: target, spec: checks.TLSSpec{CAFile: ca}, expect: checks.Expect{CertMinDays: 14}, cause: checks.CauseCert,
			errHas: "certificate expires in 10 days", failing: "cert_min_days"},
		{name: "insecure", target: target, spec: checks.TLSSpec{InsecureSkipVerify: true}, expect: checks.Expect{CertMinDays: 3},
			listed: "cert_min_days:true"},
		{name: "plain http", target: "tls://" + plain.Addr(), cause: checks.CauseTLS},
		{name: "blackhole", target: "tls://" + hole.Addr(), cause: checks.CauseTLS, errHas: "handshake not finished within"},
		{name: "refused", target: "tls://" + deadAddr(t), cause: checks.CauseConnectRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := 3 * time.Second
			if tt.name == "blackhole" {
				timeout = 300 * time.Millisecond
			}
			c, err := checks.NewTLS(tt.spec, tt.expect, checks.Options{Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			r := c.Run(context.Background(), checks.Target{URL: tt.target})
			if r.Cause != tt.cause || r.OK != (tt.cause == "") {
				t.Fatalf("cause %q (%s), want %q; assertions %+v", r.Cause, r.Err, tt.cause, r.Assertions)
			}
			if !strings.Contains(r.Err, tt.errHas) {
				t.Errorf("Err %q, want it to contain %q", r.Err, tt.errHas)
			}
			var listed []string
			failingFound := tt.failing == ""
			for _, a := range r.Assertions {
				listed = append(listed, a.Name+":"+map[bool]string{true: "true", false: "false"}[a.OK])
				if a.Name == tt.failing && !a.OK {
					failingFound = true
				}
			}
			if tt.listed != "" && strings.Join(listed, " ") != tt.listed {
				t.Errorf("assertions %q, want %q", strings.Join(listed, " "), tt.listed)
			}
			if !failingFound {
				t.Errorf("assertion %q not failing in %+v", tt.failing, r.Assertions)
			}
			if tt.cause == "" || tt.cause == checks.CauseCert {
				if !r.CertExpiry.Equal(o.Certificate().NotAfter) {
					t.Errorf("CertExpiry %v, want %v", r.CertExpiry, o.Certificate().NotAfter)
				}
				if r.Phases.TLS <= 0 || r.Phases.Connect <= 0 {
					t.Errorf("phases %+v", r.Phases)
				}
			}
		})
	}
}

// TestTLSMinVersion: the tls check offers TLS 1.2 and later by default, as
// http checks do; an origin that speaks only TLS 1.0/1.1 fails the
// handshake unless min_version allows it. Warnings name the settings that
// weaken a check.
func TestTLSMinVersion(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	srv.StartTLS()
	defer srv.Close()
	target := checks.Target{URL: strings.Replace(srv.URL, "https://", "tls://", 1)}
	for _, tc := range []struct {
		min  string
		ok   bool
		warn []string
	}{
		{"", false, nil},
		{"1.2", false, nil},
		{"1.1", true, []string{`min_version: "1.1": TLS 1.1 is accepted, which is deprecated (RFC 8996)`}},
		{"1.0", true, []string{`min_version: "1.0": TLS 1.0 is accepted, which is deprecated (RFC 8996)`}},
	} {
		spec := checks.TLSSpec{InsecureSkipVerify: true, MinVersion: tc.min}
		c, err := checks.NewTLS(spec, checks.Expect{}, checks.Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("min_version %q: %v", tc.min, err)
		}
		r := c.Run(context.Background(), target)
		if r.OK != tc.ok || (!tc.ok && r.Cause != checks.CauseTLS) {
			t.Errorf("min_version %q against a TLS 1.0/1.1 origin: ok %v, cause %s (%s); want ok %v", tc.min, r.OK, r.Cause, r.Err, tc.ok)
		}
		want := append([]string{"insecure_skip_verify: true: certificates are not verified"}, tc.warn...)
		if got := spec.Warnings(); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("min_version %q: warnings %q, want %q", tc.min, got, want)
		}
	}
	if _, err := checks.NewTLS(checks.TLSSpec{MinVersion: "1.4"}, checks.Expect{}, checks.Options{}); err == nil || !strings.Contains(err.Error(), `tls.min_version: "1.4"`) {
		t.Errorf("min_version 1.4: %v", err)
	}
	if w := (&checks.TLSOptions{}).Warnings(); len(w) != 0 {
		t.Errorf("default http.tls warnings %q", w)
	}
}

// TestTTFBNoByteFails: a ttfb assertion on a run that received no byte (the
// server closed without answering) fails showing "(no byte received)"; a
// TTFB of 0 is not "fast enough".
func TestTTFBNoByteFails(t *testing.T) {
	closer := lineServer(t, func(c net.Conn) {})
	c, err := checks.NewTCP(checks.TCPSpec{}, checks.Expect{TTFB: time.Second}, checks.Options{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Run(context.Background(), checks.Target{URL: closer})
	var got *checks.AssertionResult
	for i := range r.Assertions {
		if r.Assertions[i].Name == "ttfb" {
			got = &r.Assertions[i]
		}
	}
	if r.OK || got == nil || got.OK || got.Got != "(no byte received)" {
		t.Fatalf("ok %v, ttfb assertion %+v; want a failed ttfb assertion that got \"(no byte received)\"", r.OK, got)
	}
}
