package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkProxy measures keep-alive GETs of a 1 KiB body through the proxy
// over real sockets, against httputil.ReverseProxy as a reference. "vigil"
// serves with net/http's server (engine stdlib), "vigil-fast-engine" with
// the fast engine; client and origin are net/http, so their allocations are
// counted too (BenchmarkEngine counts the proxy's alone).
func BenchmarkProxy(b *testing.B) {
	page := strings.Repeat("x", 1024)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, page)
	}))
	defer origin.Close()

	p, err := New(pool1(PolicyRoundRobin, origin.URL), nil, slog.New(slog.NewTextHandler(io.Discard, nil)),
		WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse(origin.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 1024}
	for _, bc := range []struct {
		name string
		h    http.Handler
		fast bool
	}{{"vigil", p.Handler(), false}, {"vigil-fast-engine", p.Handler(), true}, {"httputil", rp, false}} {
		b.Run(bc.name, func(b *testing.B) {
			front := httptest.NewUnstartedServer(bc.h)
			if bc.fast {
				eng := newEngine(bc.h, p.state.Load().cfg, p.log)
				go eng.Serve(front.Listener)
				defer eng.Shutdown(context.Background())
				front.URL = "http://" + front.Listener.Addr().String()
			} else {
				front.Start()
				defer front.Close()
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}}
			b.SetParallelism(8)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(front.URL + "/asset")
					if err != nil {
						b.Error(err)
						return
					}
					n, _ := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if n != 1024 || resp.StatusCode != 200 {
						b.Errorf("got %d bytes, status %d", n, resp.StatusCode)
						return
					}
				}
			})
		})
	}
}

// rawOrigin is a minimal keep-alive HTTP/1.1 origin answering every request
// with the same 1 KiB response (the head nginx sends for a static file), so
// that a benchmark's allocations and CPU are the proxy's own.
func rawOrigin(b *testing.B) string {
	return rawResponder(b, "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Mon, 30 Nov 2026 10:20:47 GMT\r\n"+
		"Content-Type: text/plain\r\nContent-Length: 1024\r\nLast-Modified: Mon, 30 Nov 2026 10:11:51 GMT\r\n"+
		"Connection: keep-alive\r\nETag: \"6b0d4be7-400\"\r\nAccept-Ranges: bytes\r\n\r\n"+strings.Repeat("x", 1024), false)
}

// BenchmarkEngine measures keep-alive GETs of a 1 KiB body through the
// proxy with each engine, with raw-socket clients and origin so that B/op and
// allocs/op are the proxy's own.
func BenchmarkEngine(b *testing.B) {
	origin := rawOrigin(b)
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		b.Run(engineName, func(b *testing.B) {
			cfg := pool1(PolicyRoundRobin, origin)
			cfg.Engine = engineName
			p, err := New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), WithRegistry(prometheus.NewRegistry()))
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var srv interface {
				Serve(net.Listener) error
				Shutdown(context.Context) error
			}
			if engineName == EngineFast {
				srv = newEngine(p.Handler(), p.state.Load().cfg, p.log)
			} else {
				srv = p.server(p.state.Load().cfg)
			}
			go srv.Serve(ln)
			defer srv.Shutdown(context.Background())
			req := []byte("GET /asset HTTP/1.1\r\nHost: bench.example\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n") // as curl sends it
			b.SetParallelism(4)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				br := bufio.NewReader(c)
				for pb.Next() {
					if _, err := c.Write(req); err != nil {
						b.Error(err)
						return
					}
					status, n, err := readRawResponse(br)
					if err != nil || n != 1024 || status != 200 {
						b.Errorf("got %d bytes, status %d, err %v", n, status, err)
						return
					}
				}
			})
		})
	}
}

// readRawResponse reads one response with a Content-Length body without
// allocating; it returns the status and the body length.
func readRawResponse(br *bufio.Reader) (status, n int, err error) {
	cl := -1
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, 0, err
		}
		if first {
			if len(line) < 12 {
				return 0, 0, fmt.Errorf("bad status line %q", line)
			}
			status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
			continue
		}
		if len(line) <= 2 {
			break
		}
		if len(line) > 16 && strings.EqualFold(string(line[:15]), "Content-Length:") {
			cl = 0
			for _, c := range line[15:] {
				if c >= '0' && c <= '9' {
					cl = cl*10 + int(c-'0')
				}
			}
		}
	}
	if cl < 0 {
		return status, 0, errors.New("no Content-Length")
	}
	d, err := br.Discard(cl)
	return status, d, err
}

// BenchmarkEngine5xx measures the fast engine passing an origin's 503
// through (one origin, so no retry): the "try failed" line is rate-limited,
// so nearly every request's line is left out and must cost nothing.
func BenchmarkEngine5xx(b *testing.B) {
	origin := rawResponder(b, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 1024\r\n"+
		"Connection: keep-alive\r\n\r\n"+strings.Repeat("x", 1024), false)
	cfg := pool1(PolicyRoundRobin, origin)
	cfg.Engine = EngineFast
	p, err := New(cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := newEngine(p.Handler(), p.state.Load().cfg, p.log)
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	req := []byte("GET /asset HTTP/1.1\r\nHost: bench.example\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		status, n, err := readRawResponse(br)
		if err != nil || n != 1024 || status != 503 {
			b.Fatalf("got %d bytes, status %d, err %v", n, status, err)
		}
	}
}
