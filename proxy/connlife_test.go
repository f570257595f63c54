package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"
)

// TestKeepaliveLimits: keepalive_requests ends a client connection with
// the answer to its last request (Connection: close over HTTP/1, a GOAWAY
// over HTTP/2 that lets the client go on on a new connection), and
// keepalive_time with the answer to the first request after it, both on
// the plain and the TLS listener of both engines; every request is
// answered, and a reload changes the limits for connections already
// open. Without them a client kept its connection (and the proxy it
// landed on behind a load balancer) for as long as it liked.
func TestKeepaliveLimits(t *testing.T) {
	for _, eng := range []string{EngineFast, EngineStdlib} {
		t.Run(eng, func(t *testing.T) {
			origin := newBackend(t, "a")
			cfg := pool1(PolicyFirst, origin.srv.URL)
			certFile, keyFile, roots := selfSigned(t)
			cfg.Engine = eng
			cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
			cfg.KeepaliveRequests = 3
			p, err := New(cfg, nil, testLogger(t), WithRegistry(prometheus.NewRegistry()))
			if err != nil {
				t.Fatal(err)
			}
			addrs := runProxyOn(t, p, 2)
			dialPlain := func() (net.Conn, error) { return net.Dial("tcp", addrs[0]) }
			dialTLS := func() (net.Conn, error) {
				return tls.Dial("tcp", addrs[1], &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
			}
			for _, l := range []struct {
				name string
				dial func() (net.Conn, error)
			}{{"plain", dialPlain}, {"tls", dialTLS}} {
				c, err := l.dial()
				if err != nil {
					t.Fatal(err)
				}
				closes := h1Closes(t, c, 3, 0)
				if want := "keep keep close"; closes != want {
					t.Errorf("%s HTTP/1.1 with keepalive_requests 3: %s, want %s", l.name, closes, want)
				}
				if !closedSoon(c) {
					t.Errorf("%s: the connection stayed open after the answer that closed it", l.name)
				}
				c.Close()
			}
			if dials, err := h2Dials(addrs[1], roots, 6); err != nil || dials != 2 {
				t.Errorf("HTTP/2, 6 requests with keepalive_requests 3: %d connections (%v), want 2 and every request answered", dials, err)
			}

			// A reload applies to connections already open.
			c, err := dialPlain()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := h1Closes(t, c, 1, 0); got != "keep" {
				t.Fatalf("first request: %s", got)
			}
			next := p.state.Load().cfg
			next.KeepaliveRequests = 0
			next.KeepaliveTime = 500 * time.Millisecond
			if err := p.Reload(next); err != nil {
				t.Fatal(err)
			}
			// The connection is past keepalive_requests 3 after two more
			// requests; with 0 it is not, and it is younger than 500 ms
			// only for the first of them (given a loaded machine, the
			// wait makes sure the last one is past it).
			if got := h1Closes(t, c, 2, 600*time.Millisecond); got != "keep close" && got != "close" {
				t.Errorf("after a reload to keepalive_requests 0, keepalive_time 500ms: %s, want keep close", got)
			}
			if !closedSoon(c) {
				t.Errorf("keepalive_time: the connection stayed open after the answer that closed it")
			}
		})
	}
}

// h1Closes sends n GETs on c one after the other, waiting pause before
// the last, and returns for each answer "keep" or "close" (its
// Connection: close); a failed exchange fails the test.
func h1Closes(t *testing.T, c net.Conn, n int, pause time.Duration) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	var out []string
	for i := range n {
		if i == n-1 && pause > 0 {
			time.Sleep(pause)
		}
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i+1, resp.StatusCode)
		}
		if resp.Close {
			out = append(out, "close")
			break
		}
		out = append(out, "keep")
	}
	return strings.Join(out, " ")
}

// closedSoon reports whether the peer closes c within 5 s.
func closedSoon(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// h2Dials sends n GETs one after the other over HTTP/2 to addr and
// returns how many connections they took.
func h2Dials(addr string, roots *x509.CertPool, n int) (int, error) {
	var dials atomic.Int32
	tr := &http2.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"},
		DialTLSContext: func(ctx context.Context, network, _ string, tc *tls.Config) (net.Conn, error) {
			dials.Add(1)
			return (&tls.Dialer{Config: tc}).DialContext(ctx, network, addr)
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	for i := range n {
		resp, err := client.Get("https://" + addr + "/")
		if err != nil {
			return int(dials.Load()), fmt.Errorf("request %d: %w", i+1, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return int(dials.Load()), fmt.Errorf("request %d: %d", i+1, resp.StatusCode)
		}
	}
	return int(dials.Load()), nil
}

// TestKeepaliveConfig: keepalive_time defaults to 1h, an explicit 0 turns
// it off, and negative values of either key are errors naming the key.
func TestKeepaliveConfig(t *testing.T) {
	cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
	if err := cfg.ValidateAndSetDefaults(); err != nil || cfg.KeepaliveTime != time.Hour || cfg.KeepaliveRequests != 0 {
		t.Fatalf("defaults: %s %d (%v), want 1h and 0", cfg.KeepaliveTime, cfg.KeepaliveRequests, err)
	}
	cfg = pool1(PolicyFirst, "http://127.0.0.1:1")
	cfg.SetKeys([]string{"keepalive_time"})
	if err := cfg.ValidateAndSetDefaults(); err != nil || cfg.KeepaliveTime != 0 {
		t.Fatalf("explicit keepalive_time 0: %s (%v), want 0 (no limit)", cfg.KeepaliveTime, err)
	}
	cfg = pool1(PolicyFirst, "http://127.0.0.1:1")
	cfg.KeepaliveTime, cfg.KeepaliveRequests = -time.Second, -1
	err := cfg.ValidateAndSetDefaults()
	for _, want := range []string{"keepalive_time: -1s: must not be negative", "keepalive_requests: -1: must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
}

// TestKeepaliveLimitLingers: a connection that keepalive_requests ends
// while the client has already sent its next request (pipelined, or sent
// before the Connection: close arrived) is closed only after the unread
// request is read away, so the kernel does not reset it: a client reading
// a large answer slowly gets all of it. Closing at once over the unread
// bytes cut the answer off with "connection reset by peer" (nginx lingers
// too: lingering_close).
func TestKeepaliveLimitLingers(t *testing.T) {
	const size = 8 << 20
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(make([]byte, size))
	}))
	defer origin.Close()
	cfg := pool1(PolicyFirst, origin.URL)
	cfg.Engine = EngineFast
	cfg.KeepaliveRequests = 1
	p, err := New(cfg, nil, testLogger(t), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	addr := runProxy(t, p)
	for i := range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).SetReadBuffer(64 << 10)
		c.SetDeadline(time.Now().Add(20 * time.Second))
		io.WriteString(c, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n")
		time.Sleep(30 * time.Millisecond)
		io.WriteString(c, "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
		time.Sleep(700 * time.Millisecond)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		c.Close()
		if n != size || err != nil || !resp.Close {
			t.Fatalf("round %d: got %d of %d bytes (%v), Connection: close %v", i, n, size, err, resp.Close)
		}
	}
}
