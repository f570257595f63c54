package checks_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// protoOrigin is a TLS origin on 127.0.0.1 that records the protocol of
// every request and counts the connections it accepted.
type protoOrigin struct {
	srv   *httptest.Server
	ca    string // PEM file of the server's certificate
	conns atomic.Int32
	last  atomic.Value // string: r.Proto of the last request
}

// newProtoOrigin starts an origin that negotiates h2 when h2 is true and
// speaks HTTP/1.1 only (ALPN "http/1.1") otherwise.
func newProtoOrigin(t *testing.T, h2 bool) *protoOrigin {
	t.Helper()
	o := &protoOrigin{}
	o.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.last.Store(r.Proto)
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("x", 4096)))
	}))
	o.srv.EnableHTTP2 = h2
	o.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.conns.Add(1)
		}
	}
	o.srv.StartTLS()
	t.Cleanup(o.srv.Close)
	o.ca = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: o.srv.Certificate().Raw})
	if err := os.WriteFile(o.ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return o
}

func (o *protoOrigin) serverSaw() string { s, _ := o.last.Load().(string); return s }

func (o *protoOrigin) check(t *testing.T, mode string, reuse bool) *checks.HTTP {
	t.Helper()
	h, err := checks.NewHTTP(checks.HTTPSpec{Path: "/", HTTP2: mode, ReuseConnections: reuse,
		TLS: checks.TLSOptions{CAFile: o.ca}}, checks.Expect{}, checks.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func (o *protoOrigin) run(h *checks.HTTP) checks.Result {
	return h.Run(context.Background(), checks.Target{Name: "edge", URL: o.srv.URL})
}

func findAssertion(r checks.Result, name string) (checks.AssertionResult, bool) {
	for _, a := range r.Assertions {
		if a.Name == name {
			return a, true
		}
	}
	return checks.AssertionResult{}, false
}

func TestHTTP2Modes(t *testing.T) {
	h2 := newProtoOrigin(t, true)
	h1 := newProtoOrigin(t, false)
	tests := []struct {
		name       string
		origin     *protoOrigin
		mode       string
		ok         bool
		cause      checks.Cause
		proto      string
		protoCheck *checks.AssertionResult // the protocol assertion; nil = none listed
		errText    string
	}{
		{name: "auto on h2 edge", origin: h2, mode: "auto", ok: true, proto: "HTTP/2.0"},
		{name: "auto on http/1.1 edge", origin: h1, mode: "auto", ok: true, proto: "HTTP/1.1"},
		{name: "off on h2 edge", origin: h2, mode: "off", ok: true, proto: "HTTP/1.1"},
		{name: "default on h2 edge", origin: h2, mode: "", ok: true, proto: "HTTP/1.1"},
		{name: "required on h2 edge", origin: h2, mode: "required", ok: true, proto: "HTTP/2.0",
			protoCheck: &checks.AssertionResult{Name: "protocol", OK: true, Got: "HTTP/2.0", Want: "HTTP/2.0"}},
		{name: "required on http/1.1 edge", origin: h1, mode: "Required", ok: false, cause: checks.CauseProtocol, proto: "HTTP/1.1",
			protoCheck: &checks.AssertionResult{Name: "protocol", OK: false, Got: "HTTP/1.1", Want: "HTTP/2.0"},
			errText:    "protocol HTTP/1.1, want HTTP/2.0 (http2: required)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.origin.run(tc.origin.check(t, tc.mode, false))
			if r.OK != tc.ok || r.Cause != tc.cause || r.Err != tc.errText {
				t.Fatalf("ok=%v cause=%q err=%q; want ok=%v cause=%q err=%q (assertions %+v)",
					r.OK, r.Cause, r.Err, tc.ok, tc.cause, tc.errText, r.Assertions)
			}
			if r.Proto != tc.proto || tc.origin.serverSaw() != tc.proto {
				t.Errorf("Result.Proto %q, server saw %q; want %q", r.Proto, tc.origin.serverSaw(), tc.proto)
			}
			a, listed := findAssertion(r, "protocol")
			switch {
			case tc.protoCheck == nil && listed:
				t.Errorf("protocol assertion listed without http2: required: %+v", a)
			case tc.protoCheck != nil && a != *tc.protoCheck:
				t.Errorf("protocol assertion %+v, want %+v", a, *tc.protoCheck)
			}
			if tc.protoCheck != nil && r.Assertions[0].Name != "protocol" {
				t.Errorf("protocol is not the first assertion: %+v", r.Assertions)
			}
			if a, _ := findAssertion(r, "status"); !a.OK {
				t.Errorf("status assertion %+v", a)
			}
		})
	}
}

// A protocol failure is "failed" (the edge answered), and it outranks a
// failing status so the cause names the missing h2.
func TestHTTP2RequiredCauseOrder(t *testing.T) {
	o := newProtoOrigin(t, false)
	h, err := checks.NewHTTP(checks.HTTPSpec{HTTP2: checks.HTTP2Required, TLS: checks.TLSOptions{CAFile: o.ca}},
		checks.Expect{Status: checks.StatusList{"404"}}, checks.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r := o.run(h)
	if r.Cause != checks.CauseProtocol || r.CouldNotRun() || len(r.Assertions) != 2 || r.Assertions[1].OK {
		t.Fatalf("cause %q could-not-run %v assertions %+v", r.Cause, r.CouldNotRun(), r.Assertions)
	}
}

// Over h2 a fresh connection per run (the default) still measures connect,
// tls, ttfb and transfer every run; with reuse_connections the second run
// rides the first run's h2 connection and has no connect or tls phase.
func TestHTTP2Phases(t *testing.T) {
	t.Run("fresh connection per run", func(t *testing.T) {
		o := newProtoOrigin(t, true)
		h := o.check(t, checks.HTTP2Auto, false)
		for i := range 2 {
			r := o.run(h)
			if !r.OK || r.Proto != "HTTP/2.0" {
				t.Fatalf("run %d: ok=%v proto=%q %s", i, r.OK, r.Proto, r.Err)
			}
			p := r.Phases
			if p.Connect <= 0 || p.TLS <= 0 || p.TTFB <= 0 || p.Transfer <= 0 || p.Total < p.TTFB {
				t.Errorf("run %d: phases %+v: want connect, tls, ttfb, transfer > 0", i, p)
			}
			if p.TTFB < p.Connect+p.TLS {
				t.Errorf("run %d: ttfb %s shorter than connect %s + tls %s", i, p.TTFB, p.Connect, p.TLS)
			}
		}
		if n := o.conns.Load(); n != 2 {
			t.Errorf("origin accepted %d connections for 2 runs, want 2", n)
		}
	})
	t.Run("reuse_connections", func(t *testing.T) {
		o := newProtoOrigin(t, true)
		h := o.check(t, checks.HTTP2Required, true)
		first, second := o.run(h), o.run(h)
		if !first.OK || !second.OK || second.Proto != "HTTP/2.0" {
			t.Fatalf("runs: %v %q / %v %q %s", first.OK, first.Err, second.OK, second.Proto, second.Err)
		}
		if first.Phases.TLS <= 0 || second.Phases.TLS != 0 || second.Phases.Connect != 0 || second.Phases.TTFB <= 0 {
			t.Errorf("phases first %+v second %+v: want tls only on the first run", first.Phases, second.Phases)
		}
		if n := o.conns.Load(); n != 1 {
			t.Errorf("origin accepted %d connections for 2 kept-alive runs, want 1", n)
		}
	})
}

func TestHTTP2Config(t *testing.T) {
	tests := []struct {
		spec     checks.HTTPSpec
		want     string
		sentinel error
	}{
		{checks.HTTPSpec{HTTP2: "yes"}, `http.http2: "yes": want "auto", "off", "required" or "h2c"`, checks.ErrBadValue},
		{checks.HTTPSpec{HTTP2: "1"}, `http.http2: "1": want "auto", "off", "required" or "h2c" (not a boolean)`, checks.ErrBadValue},
		{checks.HTTPSpec{HTTP2: "required", URL: "http://127.0.0.1:9/"},
			"http.http2: required needs an https:// url (h2 is negotiated by TLS ALPN; plain http:// speaks HTTP/1.1)", checks.ErrConflict},
	}
	for _, tc := range tests {
		t.Run(tc.spec.HTTP2, func(t *testing.T) {
			_, err := checks.NewHTTP(tc.spec, checks.Expect{}, checks.Options{})
			if err == nil || err.Error() != tc.want || !errors.Is(err, tc.sentinel) {
				t.Fatalf("error %v; want %q wrapping %v", err, tc.want, tc.sentinel)
			}
		})
	}
	s := checks.HTTPSpec{}
	if err := s.ValidateAndSetDefaults(); err != nil || s.HTTP2 != checks.HTTP2Off {
		t.Errorf("default http2 %q (err %v), want off", s.HTTP2, err)
	}
}

// A required check against a plain http:// target (the URL comes from the
// target, so the config cannot reject it) fails with a message saying why.
func TestHTTP2RequiredPlainHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	h, err := checks.NewHTTP(checks.HTTPSpec{HTTP2: checks.HTTP2Required}, checks.Expect{}, checks.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := h.Run(context.Background(), checks.Target{URL: srv.URL})
	want := "protocol HTTP/1.1, want HTTP/2.0 (http2: required); plain http:// offers no h2"
	if r.OK || r.Cause != checks.CauseProtocol || r.Err != want {
		t.Fatalf("ok=%v cause=%q err=%q; want %q", r.OK, r.Cause, r.Err, want)
	}
}

// http2: h2c speaks HTTP/2 over plain http:// with prior knowledge; an
// origin that only speaks HTTP/1.1 fails the run with cause protocol.
func TestHTTP2H2C(t *testing.T) {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	p.SetHTTP1(true)
	var saw atomic.Value
	h2c := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		saw.Store(r.Proto)
		w.Write([]byte("ok"))
	}))
	h2c.Config.Protocols = &p
	h2c.Start()
	defer h2c.Close()
	h1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer h1.Close()

	h, err := checks.NewHTTP(checks.HTTPSpec{Path: "/", HTTP2: checks.HTTP2H2C}, checks.Expect{}, checks.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	res := h.Run(context.Background(), checks.Target{Name: "h2c", URL: h2c.URL})
	if !res.OK || res.Proto != "HTTP/2.0" || saw.Load() != "HTTP/2.0" {
		t.Fatalf("h2c origin: ok=%v cause=%s err=%q proto=%q, server saw %v", res.OK, res.Cause, res.Err, res.Proto, saw.Load())
	}
	res = h.Run(context.Background(), checks.Target{Name: "h1", URL: h1.URL})
	if res.OK || res.Cause != checks.CauseProtocol || res.CouldNotRun() {
		t.Fatalf("HTTP/1.1-only origin: ok=%v cause=%s err=%q, want a failure with cause protocol", res.OK, res.Cause, res.Err)
	}
	// h2c needs a plain http:// url.
	spec := checks.HTTPSpec{URL: "https://example.com/", HTTP2: "h2c"}
	if err := spec.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), "http2: h2c is HTTP/2 over plain http://") {
		t.Fatalf("h2c with an https url: %v", err)
	}
}
