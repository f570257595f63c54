package proxy

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// hostRecorder is an origin that records the Host (or :authority), the
// TLS server name and X-Forwarded-Host of every request it gets.
type hostRecorder struct {
	mu   sync.Mutex
	seen []string // "proto host sni xfh"
}

func (hr *hostRecorder) handler(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	sni := "-"
	if r.TLS != nil {
		sni = r.TLS.ServerName
	}
	hr.mu.Lock()
	hr.seen = append(hr.seen, r.Proto+" "+r.Host+" "+sni+" "+r.Header.Get("X-Forwarded-Host"))
	hr.mu.Unlock()
	io.WriteString(w, "ok")
}

func (hr *hostRecorder) take() []string {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	s := hr.seen
	hr.seen = nil
	return s
}

// TestOriginHost: origin_host is the Host every origin of the pool gets,
// on both engines, on the fast path (a GET) and through http.Transport (a
// POST), over HTTP/2 as :authority, and for an https origin also the TLS
// server name verified (unless tls.server_name says otherwise); the client's
// host goes on in X-Forwarded-Host. Without it the origin gets the
// client's Host, so a virtual-hosted bucket (bucket.s3.example) could not
// be fronted.
func TestOriginHost(t *testing.T) {
	const bucket = "media-bucket.s3.test"
	send := func(t *testing.T, h *harness, method string) {
		t.Helper()
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader("payload")
		}
		req, err := http.NewRequest(method, h.front.URL+"/obj.png", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "www.shop.example"
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
		}
	}
	check := func(t *testing.T, hr *hostRecorder, want ...string) {
		t.Helper()
		got := hr.take()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("the origin saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}

	for _, engine := range bothEngines {
		t.Run("http1/"+engine, func(t *testing.T) {
			hr := &hostRecorder{}
			o := httptest.NewServer(http.HandlerFunc(hr.handler))
			defer o.Close()
			cfg := pool1(PolicyFirst, o.URL)
			cfg.Pools[0].OriginHost = bucket
			h := startWith(t, cfg, nil, false, engine)
			send(t, h, "GET")
			send(t, h, "POST")
			check(t, hr, "HTTP/1.1 "+bucket+" - www.shop.example", "HTTP/1.1 "+bucket+" - www.shop.example")
		})
	}

	t.Run("http2", func(t *testing.T) {
		hr := &hostRecorder{}
		cfg := pool1(PolicyFirst, h2cOrigin(t, hr.handler))
		cfg.Pools[0].OriginProtocol = OriginHTTP2
		cfg.Pools[0].OriginHost = bucket + ":9000"
		h := start(t, cfg, nil, false)
		send(t, h, "GET")
		check(t, hr, "HTTP/2.0 "+bucket+":9000 - www.shop.example")
	})

	t.Run("https", func(t *testing.T) {
		tmpl := serverCertTemplate(bucket)
		tmpl.DNSNames = []string{bucket}
		certFile, keyFile, _ := writeSelfSigned(t, tmpl, newECKey(t))
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		hr := &hostRecorder{}
		o := httptest.NewUnstartedServer(http.HandlerFunc(hr.handler))
		o.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
		o.StartTLS()
		defer o.Close()
		cfg := pool1(PolicyFirst, o.URL) // https://127.0.0.1:port: the certificate does not name it
		cfg.Pools[0].OriginHost = bucket
		cfg.Pools[0].TLS.CAFile = certFile
		cfg.Pools[0].Retry.Tries = 1
		h := start(t, cfg, nil, false)
		send(t, h, "GET")
		send(t, h, "POST")
		check(t, hr, "HTTP/1.1 "+bucket+" "+bucket+" www.shop.example", "HTTP/1.1 "+bucket+" "+bucket+" www.shop.example")

		// tls.server_name still wins for the TLS name.
		cfg.Pools[0].TLS.ServerName = "other.test"
		if err := h.p.Reload(cfg); err != nil {
			t.Fatal(err)
		}
		if code, _, _ := h.do("GET", "/", ""); code != http.StatusBadGateway {
			t.Fatalf("tls.server_name other.test, not in the certificate: %d, want 502", code)
		}
	})
}

// TestOriginHostConfig: origin_host must be a host[:port].
func TestOriginHostConfig(t *testing.T) {
	for _, bad := range []string{"a b", "http://x", "x/y", "*.example", "user@x", "x:port", " x"} {
		cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
		cfg.Pools[0].OriginHost = bad
		err := cfg.ValidateAndSetDefaults()
		if err == nil || !strings.Contains(err.Error(), "pools[0].origin_host: ") {
			t.Errorf("origin_host %q: %v, want an error naming pools[0].origin_host", bad, err)
		}
	}
	for _, good := range []string{"bucket.s3.example", "bucket.s3.example:9000", "127.0.0.1", "[::1]:80"} {
		cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
		cfg.Pools[0].OriginHost = good
		if err := cfg.ValidateAndSetDefaults(); err != nil {
			t.Errorf("origin_host %q: %v", good, err)
		}
	}
}

// TestRequestHeaders: request_headers.set replaces a field (the client's
// value included) and remove deletes one, on both engines and both paths
// (a GET on the fast path, a POST through http.Transport); hop-by-hop
// names, Host and Content-Length are config errors naming the key.
func TestRequestHeaders(t *testing.T) {
	for _, engine := range bothEngines {
		t.Run(engine, func(t *testing.T) {
			var mu sync.Mutex
			var got []http.Header
			o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				got = append(got, r.Header.Clone())
				mu.Unlock()
			}))
			defer o.Close()
			cfg := pool1(PolicyFirst, o.URL)
			cfg.Pools[0].RequestHeaders = RequestHeadersConfig{
				Set:    map[string]string{"x-bucket-auth": "s3cr3t", "X-Env": "prod"},
				Remove: []string{"cookie", "X-Debug"},
			}
			h := startWith(t, cfg, nil, false, engine)
			for _, m := range []string{"GET", "POST"} {
				body := ""
				if m == "POST" {
					body = "x"
				}
				if code, b, _ := h.do(m, "/", body, "Cookie", "sid=1", "X-Debug", "1", "X-Env", "dev", "X-Keep", "k"); code != 200 {
					t.Fatalf("%s: %d %s", m, code, b)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 2 {
				t.Fatalf("the origin got %d requests", len(got))
			}
			for i, hd := range got {
				if hd.Get("X-Bucket-Auth") != "s3cr3t" || len(hd["X-Env"]) != 1 || hd.Get("X-Env") != "prod" ||
					hd.Get("Cookie") != "" || hd.Get("X-Debug") != "" || hd.Get("X-Keep") != "k" {
					t.Errorf("request %d reached the origin with %v", i, hd)
				}
			}
		})
	}
}

func TestRequestHeadersConfig(t *testing.T) {
	for _, tc := range []struct {
		rh   RequestHeadersConfig
		want string
	}{
		{RequestHeadersConfig{Set: map[string]string{"Host": "x"}}, `pools[0].request_headers.set: "Host": use origin_host`},
		{RequestHeadersConfig{Set: map[string]string{"Connection": "x"}}, `pools[0].request_headers.set: "Connection": a hop-by-hop field`},
		{RequestHeadersConfig{Set: map[string]string{"X A": "x"}}, `pools[0].request_headers.set: "X A": not a field name`},
		{RequestHeadersConfig{Set: map[string]string{"X-A": "a\r\nX-B: b"}}, `pools[0].request_headers.set: "X-A": the value holds a control character`},
		{RequestHeadersConfig{Remove: []string{"ok", "transfer-encoding"}}, `pools[0].request_headers.remove[1]: "transfer-encoding": a hop-by-hop field`},
		{RequestHeadersConfig{Remove: []string{"Content-Length"}}, `pools[0].request_headers.remove[0]: "Content-Length": the proxy frames`},
	} {
		cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
		cfg.Pools[0].RequestHeaders = tc.rh
		err := cfg.ValidateAndSetDefaults()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.rh, err, tc.want)
		}
	}
}
