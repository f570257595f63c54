package proxy

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkProxy measures keep-alive GETs of a 1 KiB body through the proxy
// over real sockets, against httputil.ReverseProxy as a reference.
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
	}{{"vigil", p.Handler()}, {"httputil", rp}} {
		b.Run(bc.name, func(b *testing.B) {
			front := httptest.NewServer(bc.h)
			defer front.Close()
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
