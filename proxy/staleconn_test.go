package proxy

import (
	"bufio"
	"crypto/tls"
	"net"
	"net/textproto"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// keepAliveRacer is an origin on a real socket that answers the first
// request on each connection (keep-alive) and, on a later one, reads the
// request and then ends the connection with second (written first, may be
// empty): an origin closing an idle connection just as a request arrives.
// reqs counts the requests it read.
func keepAliveRacer(t *testing.T, second string) (url string, reqs *atomic.Int64) {
	t.Helper()
	return keepAliveRacerTLS(t, nil, second)
}

// keepAliveRacerTLS is keepAliveRacer, behind TLS with cfg when it is set.
func keepAliveRacerTLS(t *testing.T, cfg *tls.Config, second string) (url string, reqs *atomic.Int64) {
	t.Helper()
	reqs = &atomic.Int64{}
	serve := func(c net.Conn, br *bufio.Reader) {
		tp := textproto.NewReader(br)
		for n := 0; ; n++ {
			if _, err := tp.ReadLine(); err != nil {
				return
			}
			if _, err := tp.ReadMIMEHeader(); err != nil {
				return
			}
			reqs.Add(1)
			if n > 0 {
				c.Write([]byte(second))
				return
			}
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		}
	}
	if cfg != nil {
		return checktest.RawTLSOrigin(t, cfg, serve), reqs
	}
	return checktest.RawOrigin(t, serve), reqs
}

// TestStaleConnRetryCounted: a GET on a reused origin connection that the
// origin closes before any byte of an answer is sent once more on a new
// connection to the same origin (the one exception to "never the same
// origin twice"), and that first attempt is counted in
// vigil_proxy_tries_total under reset and logged with the origin (was:
// neither), without charging the passive detector. An origin that began to
// answer (part of a head) before closing is not sent the request again: the
// try fails (was: retried on a new connection, the origin getting it twice).
func TestStaleConnRetryCounted(t *testing.T) {
	for _, engineName := range bothEngines {
		t.Run(engineName+"/closed before any answer", func(t *testing.T) {
			origin, reqs := keepAliveRacer(t, "")
			checkResentOnce(t, pool1(PolicyFirst, origin), engineName, reqs)
		})
		t.Run(engineName+"/closed after part of a head", func(t *testing.T) {
			origin, reqs := keepAliveRacer(t, "HTTP/1.1 200 OK\r\nContent-Le")
			cfg := pool1(PolicyFirst, origin)
			cfg.Pools[0].Passive.Consecutive5xx = -1
			h, logs := startCapturing(t, cfg, engineName)
			if code, body, _ := h.do("GET", "/x", ""); code != 200 || body != "ok" {
				t.Fatalf("GET: %d %q, want 200 ok", code, body)
			}
			if code, _, _ := h.do("GET", "/x", ""); code != 502 {
				t.Fatalf("GET on the connection the origin broke mid-head: %d, want 502", code)
			}
			if n := reqs.Load(); n != 2 {
				t.Fatalf("the origin read %d requests for 2 GETs, want 2 (one that began to answer is not sent the request again)", n)
			}
			if got := logs.lines("request sent again"); len(got) != 0 {
				t.Errorf("logged a resend: %q", got)
			}
		})
	}
}

// TestStaleConnRetryCountedHTTPS: to an https:// origin (Go's transport, not
// the fast path) a GET on a reused connection that the origin closes before
// any answer is sent again on a new connection by the transport; that
// resend is counted under reset and logged with the origin like the fast
// path's (was: neither, the origin getting the request twice unseen).
func TestStaleConnRetryCountedHTTPS(t *testing.T) {
	chain := checktest.NewChain(t, time.Now().Add(24*time.Hour), time.Now().Add(48*time.Hour))
	srvTLS := &tls.Config{Certificates: []tls.Certificate{{
		Certificate: [][]byte{chain.Leaf.Raw, chain.Inter.Raw}, PrivateKey: chain.LeafKey}}}
	for _, engineName := range bothEngines {
		t.Run(engineName, func(t *testing.T) {
			origin, reqs := keepAliveRacerTLS(t, srvTLS, "")
			cfg := pool1(PolicyFirst, origin)
			cfg.Pools[0].TLS = OriginTLSConfig{CAFile: checktest.PEMFile(t, chain.Root)}
			checkResentOnce(t, cfg, engineName, reqs)
		})
	}
}

// checkResentOnce runs two GETs through a proxy with cfg in front of a
// keepAliveRacer that closes the second request's reused connection before
// answering: both are answered 200, the origin reads 3 requests, the
// attempt on the closed connection is counted under reset and logged once
// with the origin, and the passive detector (consecutive_5xx 1) is not
// charged.
func checkResentOnce(t *testing.T, cfg Config, engineName string, reqs *atomic.Int64) {
	t.Helper()
	cfg.Pools[0].Passive.Consecutive5xx = 1
	h, logs := startCapturing(t, cfg, engineName)
	for i := 0; i < 2; i++ {
		if code, body, _ := h.do("GET", "/x", ""); code != 200 || body != "ok" {
			t.Fatalf("GET %d: %d %q, want 200 ok", i, code, body)
		}
	}
	if n := reqs.Load(); n != 3 {
		t.Fatalf("the origin read %d requests for 2 GETs, want 3 (the second sent again on a new connection)", n)
	}
	if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": CauseReset}); v != 1 {
		t.Errorf("tries_total{result=reset} = %v, want 1 (the attempt on the closed connection)", v)
	}
	if v, _ := h.metric("vigil_proxy_tries_total", map[string]string{"origin": "o0", "result": "ok"}); v != 2 {
		t.Errorf("tries_total{result=ok} = %v, want 2", v)
	}
	if got := logs.lines("request sent again on a new connection", "origin=o0", "cause=reset", "path=/x"); len(got) != 1 {
		t.Errorf("want one log line for the resend, got %q", got)
	}
	if st := h.p.Origins()[0]; st.PassiveEjected {
		t.Errorf("the origin was ejected for a closed keep-alive connection: %+v", st)
	}
}
