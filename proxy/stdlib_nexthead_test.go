package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// nextHeadRig runs a proxy with engine in front of origin on a plain and a
// TLS listener, read_header_timeout 300ms and idle_timeout 5s, and returns
// a dialer of kept-alive client connections to the listener tls names.
func nextHeadRig(t *testing.T, engine, origin string) (dial func(isTLS bool) (net.Conn, *bufio.Reader), h *harness) {
	t.Helper()
	cfg := pool1(PolicyRoundRobin, origin)
	cfg.Engine = engine
	cfg.ReadHeaderTimeout = 300 * time.Millisecond
	cfg.IdleTimeout = 5 * time.Second
	certFile, keyFile, roots := selfSigned(t)
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	reg := prometheus.NewRegistry()
	p, err := New(cfg, nil, testLogger(t), WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	addrs := runProxyOn(t, p, 2)
	dial = func(isTLS bool) (net.Conn, *bufio.Reader) {
		t.Helper()
		raw, err := net.Dial("tcp", addrs[map[bool]int{false: 0, true: 1}[isTLS]])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
		raw.SetDeadline(time.Now().Add(15 * time.Second))
		if !isTLS {
			return raw, bufio.NewReader(raw)
		}
		c := tls.Client(raw, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		return c, bufio.NewReader(c)
	}
	return dial, &harness{t: t, p: p, reg: reg}
}

// readStatus reads one answer from br and returns its status (0 and the
// error when none came).
func readStatus(br *bufio.Reader) (int, error) {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestNextHeadTimeoutEngines: on both engines and both listeners,
// read_header_timeout runs from the first byte of a kept-alive
// connection's next head, also one of fewer than 4 bytes (net/http
// starts it only at the 4th) and one begun right behind the last request
// (pipelined): a client that sends 1 to 3 bytes of it and stalls is cut
// off at read_header_timeout (300ms), not idle_timeout (5s), counted as
// header_timeout; so is one that sends only an empty line. A connection
// that sends nothing stays open past
// read_header_timeout, and serves its next request.
func TestNextHeadTimeoutEngines(t *testing.T) {
	for _, engine := range []string{EngineFast, EngineStdlib} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			origin := rawResponder(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
			dial, h := nextHeadRig(t, engine, origin)
			const req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
			cases := []struct {
				name       string
				first, tag string // the first request (and what follows it in the same write), then the stall's bytes
			}{
				{"1 byte", req, "G"},
				{"3 bytes", req, "GET"},
				{"pipelined", req + "GE", ""},
				{"empty line and 1 byte", req, "\r\nG"},
				{"empty line", req, "\r\n"},
			}
			cuts := 0
			for _, isTLS := range []bool{false, true} {
				for _, tc := range cases {
					c, br := dial(isTLS)
					io.WriteString(c, tc.first)
					if code, err := readStatus(br); code != 200 {
						t.Fatalf("tls %v %s: first request: %d, %v", isTLS, tc.name, code, err)
					}
					start := time.Now()
					if tc.tag != "" {
						io.WriteString(c, tc.tag)
					}
					n, err := io.Copy(io.Discard, br)
					took := time.Since(start)
					if err != nil || n != 0 {
						t.Errorf("tls %v %s: read %d bytes, %v; want the connection closed without an answer", isTLS, tc.name, n, err)
					}
					if took < 200*time.Millisecond || took > 2500*time.Millisecond {
						t.Errorf("tls %v %s: closed after %v, want read_header_timeout (300ms), not idle_timeout (5s)", isTLS, tc.name, took)
					}
					cuts++
				}
				// Nothing sent: idle, kept past read_header_timeout.
				c, br := dial(isTLS)
				io.WriteString(c, req)
				if code, err := readStatus(br); code != 200 {
					t.Fatalf("tls %v idle: first request: %d, %v", isTLS, code, err)
				}
				time.Sleep(900 * time.Millisecond)
				io.WriteString(c, req)
				if code, err := readStatus(br); code != 200 {
					t.Errorf("tls %v: a request after 900ms idle: %d, %v; want 200 (idle_timeout 5s)", isTLS, code, err)
				}
			}
			const name = "vigil_proxy_client_connections_cut_total"
			eventually(t, "the cuts counted", func() bool {
				v, _ := h.metric(name, map[string]string{"reason": cutHeaderTimeout})
				return v == float64(cuts)
			})
			if v, _ := h.metric(name, map[string]string{"reason": cutIdle}); v != 0 {
				t.Errorf("%s{reason=idle} = %v, want 0", name, v)
			}
		})
	}
}

// TestLeadingEmptyLinesEngines: on both engines and both listeners, empty
// lines (CRLF or LF) before a request line are ignored (RFC 9112 §2.2):
// on a new connection, on a kept-alive one sent apart from the request
// before (also a CRLF split over two writes, and one sent while the
// answer is still being made), and the request after them is served. A
// bare CR before one is no empty line: 400. A request pipelined in two
// writes split at a line's end is served whole.
func TestLeadingEmptyLinesEngines(t *testing.T) {
	for _, engine := range []string{EngineFast, EngineStdlib} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/slow" {
					time.Sleep(300 * time.Millisecond)
				}
				io.WriteString(w, "ok")
			}))
			t.Cleanup(slow.Close)
			dial, _ := nextHeadRig(t, engine, slow.URL)
			const req = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
			pause := func() { time.Sleep(50 * time.Millisecond) }
			cases := []struct {
				name   string
				writes []string // written apart, with a pause between
				want   []int    // the answers' statuses
			}{
				{"new connection", []string{"\r\n\n\r\n" + req}, []int{200}},
				{"kept alive", []string{req, "\r\n", "\n", req}, []int{200, 200}},
				{"split CRLF", []string{req, "\r", "\n" + req}, []int{200, 200}},
				{"CRLF then the request", []string{req, "\r\n" + req}, []int{200, 200}},
				{"while answering", []string{"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n", "\r\n", "\r\n", req}, []int{200, 200}},
				{"bare CR", []string{req, "\r", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"}, []int{200, 400}},
				{"pipelined, split", []string{req + "GET / HTTP/1.1\r\nHost: x", "\r\n\r\n"}, []int{200, 200}},
				{"pipelined, split at a CRLF", []string{req + "GET / HTTP/1.1\r\nHost: x\r\n", "\r\n"}, []int{200, 200}},
			}
			for _, isTLS := range []bool{false, true} {
				for _, tc := range cases {
					c, br := dial(isTLS)
					for i, s := range tc.writes {
						if i > 0 {
							pause()
						}
						io.WriteString(c, s)
					}
					for i, want := range tc.want {
						if code, err := readStatus(br); code != want {
							t.Errorf("tls %v %s: answer %d: %d, %v; want %d", isTLS, tc.name, i+1, code, err, want)
							break
						}
					}
				}
			}
		})
	}
}
