package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestCutHeadAccessLogEngines: on both engines and both listeners, a
// connection cut off in the middle of a request head gets one access log
// line: 408 with cut header_timeout when read_header_timeout ran out
// (slowloris, a kept-alive connection whose next head stalls), 400 with cut
// closed_in_head when the client left or reset it, each with the client,
// tls, when the head began, the duration since and head_bytes received; it
// is counted in vigil_proxy_client_connections_cut_total and not as a
// refusal. A connection that never sent a byte (no_request), a kept-alive
// one that stays idle past idle_timeout (idle) and an h2c one that leaves
// after the preface are counted only (the first two) and get no line.
func TestCutHeadAccessLogEngines(t *testing.T) {
	for _, engine := range []string{EngineFast, EngineStdlib} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			testCutHeadAccessLog(t, engine)
		})
	}
}

func testCutHeadAccessLog(t *testing.T, engine string) {
	origin := rawResponder(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
	path := filepath.Join(t.TempDir(), "access.log")
	cfg := pool1(PolicyRoundRobin, origin)
	cfg.Engine = engine
	cfg.AccessLog = path
	cfg.ReadHeaderTimeout = 400 * time.Millisecond
	cfg.IdleTimeout = 400 * time.Millisecond
	cfg.H2C = true
	certFile, keyFile, roots := selfSigned(t)
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	reg := prometheus.NewRegistry()
	p, err := New(cfg, nil, testLogger(t), WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	addrs := runProxyOn(t, p, 2)
	h := &harness{t: t, p: p, reg: reg}

	wants := map[string]cutWant{} // by the client's address
	var all []net.Conn
	const (
		slowHead = "GET /slow HTTP/1.1\r\nHost: x\r\nX-A"
		nextHead = "GET /next HTTP/1.1\r\nHo"
		halfHead = "GET / HTTP/1.1\r\nHo"
		rstHead  = "GET /reset HTTP/1.1\r\nHost: x\r\nX-B: 1"
	)
	for _, isTLS := range []bool{false, true} {
		dial := func() net.Conn {
			raw, err := net.Dial("tcp", addrs[map[bool]int{false: 0, true: 1}[isTLS]])
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { raw.Close() })
			raw.SetDeadline(time.Now().Add(10 * time.Second))
			if !isTLS {
				return raw
			}
			c := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
			if err := c.Handshake(); err != nil {
				t.Fatal(err)
			}
			return c
		}
		slow := dial()
		io.WriteString(slow, slowHead)
		wants[slow.LocalAddr().String()] = cutWant{408, cutHeaderTimeout, len(slowHead), isTLS}
		silent := dial()
		// A kept-alive connection whose next head stalls, one that stays idle.
		next, idle := dial(), dial()
		for _, c := range []net.Conn{next, idle} {
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		io.WriteString(next, nextHead)
		wants[next.LocalAddr().String()] = cutWant{408, cutHeaderTimeout, len(nextHead), isTLS}
		all = append(all, slow, silent, next, idle)

		half := dial()
		io.WriteString(half, halfHead)
		wants[half.LocalAddr().String()] = cutWant{400, cutClosedInHead, len(halfHead), isTLS}
		if !isTLS {
			// A client that resets the connection in the middle of a head.
			rst := dial()
			io.WriteString(rst, rstHead)
			wants[rst.LocalAddr().String()] = cutWant{400, cutClosedInHead, len(rstHead), false}
			// An h2c connection that leaves after the preface and SETTINGS:
			// no head of a request.
			h2c := dial()
			io.WriteString(h2c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
			time.Sleep(100 * time.Millisecond)
			rst.(*net.TCPConn).SetLinger(0)
			rst.Close()
			h2c.Close()
		}
		time.Sleep(100 * time.Millisecond)
		half.Close()
	}
	// Each is closed by the proxy, without an answer.
	for _, c := range all {
		if n, err := io.Copy(io.Discard, c); err != nil || n != 0 {
			t.Errorf("read %d bytes, %v; want the proxy to close the connection without an answer", n, err)
		}
	}

	var lines []cutLogLine
	read := func() { lines = readCutLog(t, path) }
	const served = 4 // the first requests of next and idle, on each listener
	total := served + len(wants)
	eventually(t, "the access log lines", func() bool { read(); return len(lines) >= total })
	time.Sleep(1500 * time.Millisecond) // a line more would be flushed by now
	read()
	ok := checkCutLines(t, lines, wants)
	if ok != served || len(wants) != 0 {
		t.Fatalf("%d lines of served requests (want %d), cut connections without a line: %v\nlines: %+v", ok, served, wants, lines)
	}
	const cuts = "vigil_proxy_client_connections_cut_total"
	for reason, n := range map[string]float64{cutHeaderTimeout: 4, cutClosedInHead: 3, cutNoRequest: 2, cutIdle: 2} {
		if v, _ := h.metric(cuts, map[string]string{"reason": reason}); v != n {
			t.Errorf("%s{reason=%q} = %v, want %v", cuts, reason, v, n)
		}
	}
	if v, _ := h.metric("vigil_proxy_refused_total", map[string]string{"code": "400"}); v != 0 {
		t.Errorf(`vigil_proxy_refused_total{code="400"} = %v, want 0: a client that left is no refusal`, v)
	}
}
