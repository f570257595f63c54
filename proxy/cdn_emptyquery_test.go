package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestEmptyQueryKept: a target with an empty query ("/rl?") reaches the
// origin as written on every path: a GET on the fast path, a POST and an
// https origin through http.Transport (which dropped the "?": some origins
// sign or cache on the raw target), on both engines.
func TestEmptyQueryKept(t *testing.T) {
	for _, engine := range bothEngines {
		t.Run(engine, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			rec := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				got = append(got, r.Method+" "+r.RequestURI)
				mu.Unlock()
			})
			plain := httptest.NewServer(rec)
			defer plain.Close()
			tlsO := httptest.NewTLSServer(rec)
			defer tlsO.Close()
			cfg := pool1(PolicyFirst, plain.URL)
			cfg.Pools[0].PathPrefix = "/"
			cfg.Pools = append(cfg.Pools, PoolConfig{Name: "tls", PathPrefix: "/s/", Origins: []OriginConfig{{URL: tlsO.URL}},
				TLS: OriginTLSConfig{InsecureSkipVerify: true}})
			h := startWith(t, cfg, nil, false, engine)
			for _, req := range []string{"GET /rl? HTTP/1.1\r\nHost: a\r\n\r\n",
				"POST /rl? HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx",
				"GET /s/rl? HTTP/1.1\r\nHost: a\r\n\r\n"} {
				c, err := net.Dial("tcp", h.front.Listener.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(c, req)
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				c.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("%q: %d", req, resp.StatusCode)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if s := strings.Join(got, ", "); s != "GET /rl?, POST /rl?, GET /s/rl?" {
				t.Fatalf("the origins got %s, want GET /rl?, POST /rl?, GET /s/rl?", s)
			}
		})
	}
}
