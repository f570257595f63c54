package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestHashKeyHostAndURI: hash.key header:Host hashes the request's host
// (Go keeps it in r.Host, not in the header map) without its port, so a
// host keeps its origin whatever port or case the client wrote; uri
// hashes path and query. Before, header:Host found no field and every
// request went to a random origin.
func TestHashKeyHostAndURI(t *testing.T) {
	for _, engine := range bothEngines {
		t.Run(engine, func(t *testing.T) {
			bs := []*backend{newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c"), newBackend(t, "d")}
			cfg := pool1(PolicyHash, urls(bs...)...)
			cfg.Pools[0].Hash.Key = "header:Host"
			h := startWith(t, cfg, nil, false, engine)
			get := func(host, target string) string {
				t.Helper()
				req, err := http.NewRequest("GET", h.front.URL+target, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = host
				resp, err := h.client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("%s %s: %d", host, target, resp.StatusCode)
				}
				return resp.Header.Get("X-Origin")
			}
			owners := map[string]bool{}
			for i := 0; i < 20; i++ {
				host := fmt.Sprintf("site%d.example", i)
				first := get(host, "/")
				owners[first] = true
				for j, variant := range []string{host + ":8080", strings.ToUpper(host), host} {
					if got := get(variant, fmt.Sprintf("/p%d", j)); got != first {
						t.Fatalf("host %s went to %s, then as %q to %s: header:Host must hash the host", host, first, variant, got)
					}
				}
			}
			if len(owners) < 2 {
				t.Errorf("20 hosts all went to %v: the hosts must spread over the ring", owners)
			}

			// uri: the query is part of the key; path is not.
			cfg.Pools[0].Hash.Key = "uri"
			if err := h.p.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			owners = map[string]bool{}
			for i := 0; i < 20; i++ {
				target := fmt.Sprintf("/obj?v=%d", i)
				first := get("x.example", target)
				owners[first] = true
				for j := 0; j < 3; j++ {
					if got := get("x.example", target); got != first {
						t.Fatalf("%s went to %s, then to %s", target, first, got)
					}
				}
			}
			if len(owners) < 2 {
				t.Errorf("20 URIs differing only in the query all went to %v: uri must hash the query", owners)
			}
		})
	}
}

// TestHashKeyBadHeaderName: a header or cookie name that is not a token is
// a config error naming the key, not a key that never matches.
func TestHashKeyBadHeaderName(t *testing.T) {
	for _, key := range []string{"header:X Bad", "header:X:Y", "cookie:a b", "header:"} {
		cfg := pool1(PolicyHash, "http://127.0.0.1:1")
		cfg.Pools[0].Hash.Key = key
		err := cfg.ValidateAndSetDefaults()
		if err == nil || !errors.Is(err, ErrBadHashKey) || !strings.Contains(err.Error(), fmt.Sprintf("pools[0].hash.key: %q", key)) {
			t.Errorf("hash.key %q: %v, want an error naming pools[0].hash.key", key, err)
		}
	}
	for _, key := range []string{"header:Host", "header:X-User", "cookie:sid", "uri", "path", "client_ip"} {
		cfg := pool1(PolicyHash, "http://127.0.0.1:1")
		cfg.Pools[0].Hash.Key = key
		if err := cfg.ValidateAndSetDefaults(); err != nil {
			t.Errorf("hash.key %q: %v", key, err)
		}
	}
}
