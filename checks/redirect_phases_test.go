package checks_test

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// httptestCAFile writes the certificate of an httptest TLS server (every
// such server presents the same one, valid for 127.0.0.1) to a PEM file
// for tls.ca_file.
func httptestCAFile(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// slowRedirect answers after wait with a 302 to next.
func slowRedirect(wait time.Duration, next string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(wait):
		case <-r.Context().Done():
			return
		}
		http.Redirect(w, r, next, http.StatusFound)
	})
}

// TestRedirectPhasesSumOverHops: with follow_redirects each of dns,
// connect and tls is the sum of the hops' own spans (blackbox_exporter's
// reading), so a first hop whose server thinks for 400 ms shows that time
// as server wait (ttfb − dns − connect − tls), not as a 400 ms connect or
// TLS handshake stretched from the first hop's start to the last hop's end.
func TestRedirectPhasesSumOverHops(t *testing.T) {
	const wait = 400 * time.Millisecond
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			t.Parallel()
			final := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "landed")
			}))
			var first *httptest.Server
			if scheme == "https" {
				final.StartTLS()
				first = httptest.NewUnstartedServer(slowRedirect(wait, final.URL+"/landed"))
				first.StartTLS()
			} else {
				final.Start()
				first = httptest.NewServer(slowRedirect(wait, final.URL+"/landed"))
			}
			t.Cleanup(final.Close)
			t.Cleanup(first.Close)
			spec := checks.HTTPSpec{URL: first.URL + "/start", FollowRedirects: true}
			if scheme == "https" {
				spec.TLS.CAFile = httptestCAFile(t, first)
			}
			h, err := checks.NewHTTP(spec, checks.Expect{Body: checks.BodyExpect{Contains: []string{"landed"}}},
				checks.Options{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			r := h.Run(context.Background(), checks.Target{URL: first.URL})
			if !r.OK {
				t.Fatalf("run failed: %s %s", r.Cause, r.Err)
			}
			p := r.Phases
			// Loopback connects and handshakes take well under 100 ms each;
			// the 400 ms wait must not land in them.
			if p.Connect <= 0 || p.Connect > wait/4 {
				t.Errorf("connect = %s, want the two hops' connects (> 0, well under %s); phases %+v", p.Connect, wait, p)
			}
			if scheme == "https" && (p.TLS <= 0 || p.TLS > wait/4) {
				t.Errorf("tls = %s, want the two hops' handshakes (> 0, well under %s); phases %+v", p.TLS, wait, p)
			}
			if processing := p.TTFB - p.DNS - p.Connect - p.TLS; processing < wait {
				t.Errorf("ttfb − dns − connect − tls = %s, want at least the first hop's %s wait; phases %+v", processing, wait, p)
			}
			if p.TTFB+p.Transfer > p.Total {
				t.Errorf("ttfb %s + transfer %s > total %s", p.TTFB, p.Transfer, p.Total)
			}
		})
	}
}

// TestRedirectHopCause: the cause of a run that fails on a redirect hop is
// that hop's: a hop that never connects is connect_timeout, a hop that
// connected but never answered is a timeout with no response and no ttfb
// (the first hop's byte does not count).
func TestRedirectHopCause(t *testing.T) {
	blackhole := checktest.NewOrigin(checktest.WithMode(checktest.ModeBlackhole))
	t.Cleanup(blackhole.Close)
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // headers read, no answer
	}))
	t.Cleanup(silent.Close)
	cases := []struct {
		name   string
		next   func(t *testing.T) string
		cause  checks.Cause
		errHas string
	}{
		{"SYN dropped", func(t *testing.T) string { return "http://" + fullBacklogAddr(t) + "/x" },
			checks.CauseConnectTimeout, "connect: no connection within"},
		{"accepted, never answered", func(*testing.T) string { return blackhole.URL() + "/healthz" },
			checks.CauseTimeout, "timeout: no response within"},
		{"request read, never answered", func(*testing.T) string { return silent.URL + "/x" },
			checks.CauseTimeout, "timeout: no response within"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			next := tc.next(t)
			first := httptest.NewServer(slowRedirect(0, next))
			t.Cleanup(first.Close)
			h, err := checks.NewHTTP(checks.HTTPSpec{URL: first.URL + "/go", FollowRedirects: true}, checks.Expect{},
				checks.Options{Timeout: 400 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			r := h.Run(context.Background(), checks.Target{URL: first.URL})
			if r.Cause != tc.cause || !strings.Contains(r.Err, tc.errHas) {
				t.Fatalf("cause %q err %q, want cause %q with %q", r.Cause, r.Err, tc.cause, tc.errHas)
			}
			if r.Phases.TTFB != 0 || r.Phases.Transfer != 0 {
				t.Errorf("ttfb %s transfer %s: the last hop got no byte, want 0 (phases %+v)", r.Phases.TTFB, r.Phases.Transfer, r.Phases)
			}
		})
	}
}

// TestRedirectHopCauseReusedConnection: a redirect to the same origin with
// reuse_connections goes out on the kept-alive connection of the first hop;
// when that hop never answers, the cause is timeout, not connect_timeout
// (the reused connection reports no ConnectDone).
func TestRedirectHopCauseReusedConnection(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/go" {
			http.Redirect(w, r, "/hang", http.StatusFound)
			return
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	h, err := checks.NewHTTP(checks.HTTPSpec{URL: srv.URL + "/go", FollowRedirects: true, ReuseConnections: true}, checks.Expect{},
		checks.Options{Timeout: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := h.Run(context.Background(), checks.Target{URL: srv.URL})
	if r.Cause != checks.CauseTimeout || !strings.Contains(r.Err, "timeout: no response within") {
		t.Fatalf("cause %q err %q, want timeout: no response within", r.Cause, r.Err)
	}
}

// TestTTFBAfterInterimResponse: a 103 Early Hints sent at once does not
// stop ttfb; it runs to the first byte of the final response (RFC 9110
// §15.2: a 1xx is interim). Over HTTP/1.1 and h2.
func TestTTFBAfterInterimResponse(t *testing.T) {
	const wait = 300 * time.Millisecond
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints)
		if r.URL.Path == "/hang" {
			<-r.Context().Done()
			return
		}
		time.Sleep(wait)
		io.WriteString(w, "final")
	})
	plain := httptest.NewServer(handler)
	t.Cleanup(plain.Close)
	h2 := httptest.NewUnstartedServer(handler)
	h2.EnableHTTP2 = true
	h2.StartTLS()
	t.Cleanup(h2.Close)
	ca := httptestCAFile(t, h2)
	cases := []struct {
		name  string
		spec  checks.HTTPSpec
		proto string
	}{
		{"HTTP/1.1", checks.HTTPSpec{URL: plain.URL + "/"}, "HTTP/1.1"},
		{"h2", checks.HTTPSpec{URL: h2.URL + "/", HTTP2: checks.HTTP2Required, TLS: checks.TLSOptions{CAFile: ca}}, "HTTP/2.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h, err := checks.NewHTTP(tc.spec, checks.Expect{TTFB: wait / 2, Body: checks.BodyExpect{Contains: []string{"final"}}},
				checks.Options{Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			r := h.Run(context.Background(), checks.Target{URL: tc.spec.URL})
			if r.Proto != tc.proto || r.StatusCode != 200 {
				t.Fatalf("proto %q status %d (%s %s), want %s 200", r.Proto, r.StatusCode, r.Cause, r.Err, tc.proto)
			}
			if r.Phases.TTFB < wait {
				t.Errorf("ttfb = %s, want at least %s (the final response's first byte, not the 103's)", r.Phases.TTFB, wait)
			}
			if r.Cause != checks.CauseTTFB || !strings.Contains(r.Err, "ttfb ") {
				t.Errorf("cause %q err %q, want the ttfb objective of %s to fail", r.Cause, r.Err, wait/2)
			}
		})
	}
	t.Run("no final response", func(t *testing.T) {
		t.Parallel()
		h, err := checks.NewHTTP(checks.HTTPSpec{URL: plain.URL + "/hang"}, checks.Expect{}, checks.Options{Timeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		r := h.Run(context.Background(), checks.Target{URL: plain.URL})
		if r.Cause != checks.CauseTimeout || !strings.Contains(r.Err, "no response within") || !strings.Contains(r.Err, "only an interim 103") {
			t.Errorf("cause %q err %q, want timeout: no response … (only an interim 103)", r.Cause, r.Err)
		}
		if r.Phases.TTFB != 0 {
			t.Errorf("ttfb = %s, want 0: no final response came", r.Phases.TTFB)
		}
	})
}
