package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// runPlainProxy runs cfg's plain listener (engine as given) and returns its
// address.
func runPlainProxy(t *testing.T, cfg Config, engineName string) string {
	t.Helper()
	cfg.Engine = engineName
	p, err := New(cfg, nil, testLogger(t), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	return runProxyOn(t, p, 1)[0]
}

// h2cClient speaks HTTP/2 with prior knowledge over plain TCP, as gRPC
// clients with insecure credentials do.
func h2cClient() *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestPlainListenerH2C: with h2c, the plain listener serves HTTP/2 with
// prior knowledge (a gRPC-style stream to an HTTP/2 origin, message by
// message, trailers included) and HTTP/1.1 on the same port, on both
// engines; without it, a prior-knowledge client gets no HTTP/2.
func TestPlainListenerH2C(t *testing.T) {
	origin := h2cOrigin(t, grpcEcho)
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			cfg := pool1(PolicyFirst, origin)
			cfg.Pools[0].OriginProtocol = OriginHTTP2
			cfg.H2C = true
			addr := runPlainProxy(t, cfg, engineName)
			checkGRPCStream(t, h2cClient().Transport, "http://"+addr+"/svc.Echo/Chat")

			// HTTP/1.1 on the same port still works.
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/grpc\r\nContent-Length: 4\r\nConnection: close\r\n\r\nhey\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("HTTP/1.1 POST on an h2c listener: %v %v", resp, err)
			}
		})
	}
}

// TestPlainListenerNoH2CByDefault: without h2c, a client with prior
// knowledge of HTTP/2 gets no HTTP/2 answer from the plain listener.
func TestPlainListenerNoH2CByDefault(t *testing.T) {
	b := newBackend(t, "a")
	addr := runPlainProxy(t, pool1(PolicyFirst, b.srv.URL), EngineFast)
	resp, err := h2cClient().Get("http://" + addr + "/")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("h2c request on a listener without h2c: %s %d, want an error", resp.Proto, resp.StatusCode)
	}
	if n := b.hits.Load(); n != 0 {
		t.Fatalf("origin hits %d", n)
	}
}

// TestIsH2CPreface: the preface is recognized however its bytes arrive
// (one at a time too), and an HTTP/1 request is told apart within its
// first bytes, without waiting for more than it sent.
func TestIsH2CPreface(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{h2cPreface + "\x00\x00\x00\x04", true},
		{h2cPreface, true},
		{"POST / HTTP/1.1\r\n\r\n", false},
		{"PROPFIND / HTTP/1.1\r\n\r\n", false},
		{"PRI * HTTP/1.1\r\n\r\n", false},
		{"GET / HTTP/1.1\r\n\r\n", false},
		{"P", false}, // then the client closes
	} {
		for _, oneByOne := range []bool{false, true} {
			pr, pw := io.Pipe()
			go func() {
				if oneByOne {
					for i := 0; i < len(tc.in); i++ {
						pw.Write([]byte{tc.in[i]})
					}
				} else {
					pw.Write([]byte(tc.in))
				}
				pw.Close()
			}()
			got := isH2CPreface(bufio.NewReader(pr))
			pr.Close() // ends the writer
			if got != tc.want {
				t.Errorf("%q (one byte at a time: %v): %v, want %v", tc.in, oneByOne, got, tc.want)
			}
		}
	}
}
