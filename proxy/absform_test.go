package proxy

import (
	"testing"
)

// TestAbsoluteFormTargets: an absolute-form request target is served only
// as an http or https URL (RFC 9112 §3.2.2) for a host a pool names,
// exactly or by a wildcard (nginx picks the server by the URL's host,
// wildcard server_names included); another scheme ("ftp://…", which a
// forward proxy would fetch by FTP) and a host only a "*" pool takes get
// 400 and reach no origin. Both engines.
func TestAbsoluteFormTargets(t *testing.T) {
	for _, eng := range []string{EngineFast, EngineStdlib} {
		t.Run(eng, func(t *testing.T) {
			a, b := newBackend(t, "a"), newBackend(t, "b")
			cfg := pool1(PolicyFirst, a.srv.URL)
			cfg.Pools[0].Hosts = []string{"www.example.com", "*.example.com"}
			any := pool1(PolicyFirst, b.srv.URL).Pools[0]
			any.Name, any.Hosts = "any", []string{"*"}
			cfg.Pools = append(cfg.Pools, any)
			h := startWith(t, cfg, nil, false, eng)
			served := 0
			for _, tc := range []struct {
				target, host string
				want         int
			}{
				{"http://www.example.com/", "www.example.com", 200},
				{"https://www.example.com/x", "www.example.com", 200},
				{"HTTP://www.example.com/", "www.example.com", 200},
				{"http://foo.example.com/", "foo.example.com", 200},
				{"ftp://www.example.com/", "www.example.com", 400},
				{"FTP://www.example.com/", "www.example.com", 400},
				{"ws://www.example.com/", "www.example.com", 400},
				{"gopher://foo.example.com/", "foo.example.com", 400},
				{"http://other.example.net/", "other.example.net", 400},
			} {
				req := "GET " + tc.target + " HTTP/1.1\r\nHost: " + tc.host + "\r\n\r\n"
				code, _ := rawRequest(t, h.front.URL, req)
				if code != tc.want {
					t.Errorf("GET %s: %d, want %d", tc.target, code, tc.want)
				}
				if tc.want == 200 {
					served++
				}
			}
			if n := a.hits.Load() + b.hits.Load(); n != int64(served) {
				t.Errorf("the origins saw %d requests, want only the %d served", n, served)
			}
			if n := b.hits.Load(); n != 0 {
				t.Errorf("the \"*\" pool's origin saw %d absolute-form requests, want none", n)
			}
		})
	}
}
