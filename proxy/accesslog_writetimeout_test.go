package proxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestAccessLogWriteTimeoutAborted: an answer cut off because write_timeout
// (the whole answer's limit) ran out while its client kept taking bytes is
// marked "aborted":"write_timeout" in the access log, and its log line
// names write_timeout; one whose client stopped reading is still
// "aborted":"send_timeout" with write_timeout set. Both engines, plain and
// TLS listeners.
func TestAccessLogWriteTimeoutAborted(t *testing.T) {
	const size = 256 << 20
	origin := bigOrigin(t, size)
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		for _, useTLS := range []bool{false, true} {
			name := engineName
			if useTLS {
				name += "/tls"
			}
			t.Run(name, func(t *testing.T) {
				for _, c := range []struct {
					name                  string
					write, send           time.Duration
					slowReader            bool
					want, wantLog, notLog string
				}{
					// Reads 8KiB every 5ms: never stalled for send_timeout,
					// too slow to take 256MiB within write_timeout.
					{"slow reader", time.Second, 5 * time.Second, true, "write_timeout",
						"answer not sent within write_timeout", "for send_timeout"},
					// Reads nothing after the head.
					{"stalled reader", 5 * time.Second, 300 * time.Millisecond, false, "send_timeout",
						"took no bytes of the answer for send_timeout", "within write_timeout"},
				} {
					path := filepath.Join(t.TempDir(), "access.log")
					cfg := pool1(PolicyFirst, origin.URL)
					cfg.Pools[0].Retry.Tries = 1
					cfg.WriteTimeout, cfg.SendTimeout = c.write, c.send
					cfg.AccessLog = path
					dial, logs := runTimeoutFront(t, cfg, engineName, useTLS)

					conn := dial()
					conn.SetDeadline(time.Now().Add(15 * time.Second))
					if _, err := io.WriteString(conn, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
						t.Fatal(err)
					}
					br := bufio.NewReaderSize(conn, 8<<10)
					head, err := http.ReadResponse(br, nil)
					if err != nil || head.StatusCode != http.StatusOK {
						t.Fatalf("%s: GET /big: %v, %v; want a 200 answer under way", c.name, head, err)
					}
					started := time.Now()
					if c.slowReader {
						// Past write_timeout (what the sockets hold still
						// comes after the cut).
						buf := make([]byte, 8<<10)
						got := 0
						for i := 0; i < 3000 && time.Since(started) < c.write+300*time.Millisecond; i++ {
							n, err := head.Body.Read(buf)
							got += n
							if err != nil {
								t.Fatalf("%s: cut off after %s and %d bytes, before write_timeout %s ran out: %v", c.name, time.Since(started), got, c.write, err)
							}
							time.Sleep(5 * time.Millisecond)
						}
					}
					var line map[string]any
					eventually(t, "the access log line of the cut-off answer", func() bool {
						if b, _ := os.ReadFile(path); len(b) == 0 {
							return false
						}
						line = accessLines(t, path)[0]
						return true
					})
					conn.Close()
					if line["aborted"] != c.want || line["status"] != 200.0 {
						t.Errorf("%s: aborted %v status %v, want %s 200\n%v", c.name, line["aborted"], line["status"], c.want, line)
					}
					if lines := logs.lines(c.wantLog, "cause="+c.want); len(lines) != 1 {
						t.Errorf("%s: want one log line %q with cause=%s, got %q", c.name, c.wantLog, c.want, logs.String())
					}
					if lines := logs.lines(c.notLog); len(lines) != 0 {
						t.Errorf("%s: the log names the other timeout: %q", c.name, lines)
					}
				}
			})
		}
	}
}

// runTimeoutFront runs a proxy with cfg on the named engine, logging to the
// returned buffer, and returns a dialer for its plain or its TLS listener
// (HTTP/1.1).
func runTimeoutFront(t *testing.T, cfg Config, engineName string, useTLS bool) (func() net.Conn, *tryLogs) {
	t.Helper()
	certFile, keyFile, roots := selfSigned(t)
	cfg.Engine = engineName
	cfg.Listen = "127.0.0.1:0"
	cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
	logs := &tryLogs{}
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(logs, nil)), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	addrs := runProxyOn(t, p, 2)
	return func() net.Conn {
		var c net.Conn
		var err error
		if useTLS {
			c, err = tls.Dial("tcp", addrs[1], &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}})
		} else {
			c, err = net.Dial("tcp", addrs[0])
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}, logs
}

// TestAccessLogWriteTimeoutAbortedHTTP2: an HTTP/2 stream cut off by
// write_timeout while its client kept granting window and reading is
// marked "aborted":"write_timeout" (TestAccessLogSendTimeoutAbortedHTTP2
// has the stalled stream's send_timeout).
func TestAccessLogWriteTimeoutAbortedHTTP2(t *testing.T) {
	origin := bigOrigin(t, 256<<20)
	path := filepath.Join(t.TempDir(), "access.log")
	cfg := pool1(PolicyFirst, origin.URL)
	cfg.Pools[0].Retry.Tries = 1
	cfg.WriteTimeout, cfg.SendTimeout = time.Second, 5*time.Second
	cfg.AccessLog = path
	addr, roots := runTLSProxy(t, cfg)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr, Timeout: 15 * time.Second}).Get("https://" + addr + "/big")
	if err != nil || resp.ProtoMajor != 2 {
		t.Fatalf("GET /big over HTTP/2: %v %v", resp, err)
	}
	defer resp.Body.Close()
	// Reads 8KiB every 5ms (the transport grants window as it reads) until
	// past write_timeout.
	buf := make([]byte, 8<<10)
	started := time.Now()
	for i := 0; i < 3000 && time.Since(started) < cfg.WriteTimeout+300*time.Millisecond; i++ {
		if _, err := resp.Body.Read(buf); err != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	var line map[string]any
	eventually(t, "the access log line of the cut-off stream", func() bool {
		if b, _ := os.ReadFile(path); len(b) == 0 {
			return false
		}
		line = accessLines(t, path)[0]
		return true
	})
	if line["aborted"] != "write_timeout" || line["status"] != 200.0 || line["proto"] != "HTTP/2.0" {
		t.Fatalf("aborted %v status %v proto %v, want write_timeout 200 HTTP/2.0\n%v", line["aborted"], line["status"], line["proto"], line)
	}
}

// TestAccessLogWriteTimeoutTransportPath: on the fast engine, an answer
// that comes through the pool's http.Transport rather than the inline fast
// path (a request with a body; a GET to an https origin), or to a request
// the engine hands to net/http's parser (absolute-form, an upgrade the
// origin does not take), and is cut off by write_timeout while its client
// kept reading is marked "aborted":"write_timeout" and logged with
// cause=write_timeout, as on the fast path, on the plain and the TLS
// listener.
func TestAccessLogWriteTimeoutTransportPath(t *testing.T) {
	const size = 256 << 20
	plain := bigOrigin(t, size)
	secure := httptest.NewTLSServer(plain.Config.Handler)
	t.Cleanup(secure.Close)
	for _, c := range []struct {
		name, origin, req string
		useTLS            bool
	}{
		{"body", plain.URL, "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", false},
		{"body/tls", plain.URL, "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", true},
		{"https origin", secure.URL, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"absolute-form", plain.URL, "GET http://x/big HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"upgrade not taken", plain.URL, "GET /big HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "access.log")
			cfg := pool1(PolicyFirst, c.origin)
			cfg.Pools[0].Hosts = []string{"x"} // a "*" pool serves no host named in a URL
			cfg.Pools[0].Retry.Tries = 1
			if strings.HasPrefix(c.origin, "https:") {
				cfg.Pools[0].TLS.CAFile = writeCertPEM(t, secure.Certificate())
			}
			cfg.WriteTimeout, cfg.SendTimeout = time.Second, 5*time.Second
			cfg.AccessLog = path
			dial, logs := runTimeoutFront(t, cfg, EngineFast, c.useTLS)
			conn := dial()
			conn.SetDeadline(time.Now().Add(15 * time.Second))
			if _, err := io.WriteString(conn, c.req); err != nil {
				t.Fatal(err)
			}
			head, err := http.ReadResponse(bufio.NewReaderSize(conn, 8<<10), nil)
			if err != nil || head.StatusCode != http.StatusOK {
				t.Fatalf("%v, %v; want a 200 answer under way", head, err)
			}
			// Reads 8KiB every 5ms: never stalled for send_timeout, too
			// slow to take 256MiB within write_timeout.
			buf := make([]byte, 8<<10)
			started := time.Now()
			for i := 0; i < 3000 && time.Since(started) < cfg.WriteTimeout+300*time.Millisecond; i++ {
				if _, err := head.Body.Read(buf); err != nil {
					t.Fatalf("cut off after %s, before write_timeout ran out: %v", time.Since(started), err)
				}
				time.Sleep(5 * time.Millisecond)
			}
			var line map[string]any
			eventually(t, "the access log line of the cut-off answer", func() bool {
				if b, _ := os.ReadFile(path); len(b) == 0 {
					return false
				}
				line = accessLines(t, path)[0]
				return true
			})
			conn.Close()
			if line["aborted"] != "write_timeout" || line["status"] != 200.0 {
				t.Errorf("aborted %v status %v, want write_timeout 200\n%v", line["aborted"], line["status"], line)
			}
			if lines := logs.lines("answer not sent within write_timeout", "cause=write_timeout"); len(lines) != 1 {
				t.Errorf("want one log line with cause=write_timeout, got %q", logs.String())
			}
		})
	}
}

// writeCertPEM writes cert to a PEM file (an origin's CA for tls.ca_file)
// and returns its path.
func writeCertPEM(t *testing.T, cert *x509.Certificate) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
