package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// hostGet sends one HTTP/1.1 GET for target with Host host to the proxy
// and returns the status code.
func hostGet(t *testing.T, h *harness, host, target string) int {
	t.Helper()
	c, err := net.Dial("tcp", h.front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s (Host %s): %v", target, host, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestPathPrefixMustBeClean: request paths are routed decoded and cleaned
// (routePath), so a path_prefix written otherwise could never match and
// every request for it got 421. Such a prefix is a config error naming the
// key and saying what to write; the prefix it suggests routes.
func TestPathPrefixMustBeClean(t *testing.T) {
	for _, tt := range []struct{ prefix, want string }{
		{"/api//", `pools[0].path_prefix: "/api//": not a clean path (request paths are matched after cleaning: path parameters dropped, dot segments resolved, repeated slashes merged): write "/api/"`},
		{"/v1/../v2", `pools[0].path_prefix: "/v1/../v2": not a clean path (request paths are matched after cleaning: path parameters dropped, dot segments resolved, repeated slashes merged): write "/v2"`},
		{"/v1/./x", `write "/v1/x"`},
		{"//api", `write "/api"`},
		{"/api;v=1/x", `write "/api/x"`},
		{"/api/..;/x", `pools[0].path_prefix: "/api/..;/x": not a clean path: a segment that is . or .. once its path parameters (;…) are dropped gets 400, never routed`},
		{"/%61bc", `pools[0].path_prefix: "/%61bc": not a clean path: percent-encoded, but request paths are matched decoded (and cleaned): write "/abc"`},
		{"/my%20app", `write "/my app"`},
		{"/a%2Fb", `write "/a/b"`},
		{"/%2e%2e/admin", `write "/admin"`},
		{"/x%00", `pools[0].path_prefix: "/x%00": %00: a request path with a NUL gets 400, never routed`},
	} {
		c := Config{Pools: []PoolConfig{{Name: "w", PathPrefix: tt.prefix, Origins: []OriginConfig{{URL: "http://127.0.0.1:9"}}}}}
		err := c.ValidateAndSetDefaults()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("path_prefix %q: %v\nwant an error with %s", tt.prefix, err, tt.want)
		}
		if err != nil && tt.prefix != "/x%00" && !errors.Is(err, ErrUncleanPrefix) {
			t.Errorf("path_prefix %q: %v is not ErrUncleanPrefix", tt.prefix, err)
		}
	}
	for _, ok := range []string{"/", "/api", "/api/", "/.well-known/", "/my app", "/100%", "/a%zz", "/café"} {
		c := Config{Pools: []PoolConfig{{Name: "w", PathPrefix: ok, Origins: []OriginConfig{{URL: "http://127.0.0.1:9"}}}}}
		if err := c.ValidateAndSetDefaults(); err != nil {
			t.Errorf("path_prefix %q: %v, want ok", ok, err)
		}
	}

	// The prefixes the errors suggest, and the decoded forms the rule asks
	// for, are reached by the requests the user meant.
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].PathPrefix = "/v2"
	cfg.Pools = append(cfg.Pools,
		PoolConfig{Name: "space", PathPrefix: "/my app", Origins: []OriginConfig{{URL: b.srv.URL}}},
		PoolConfig{Name: "pct", PathPrefix: "/100%", Origins: []OriginConfig{{URL: b.srv.URL}}})
	for _, engine := range bothEngines {
		h := startWith(t, cfg, nil, false, engine)
		for _, target := range []string{"/v2", "/v2/x", "/v1/../v2/x", "/my%20app/x", "/100%25/y"} {
			if got := hostGet(t, h, "shop.test", target); got != 200 {
				t.Errorf("%s: GET %s: %d, want 200", engine, target, got)
			}
		}
	}
}

// TestDuplicateRouteIgnoresCaseAndTrailingDot: hosts are matched in any
// case and without a trailing dot, so "SHOP.test." in a second pool with
// the same path_prefix is the first pool's route: a config error, not a
// pool that never gets a request.
func TestDuplicateRouteIgnoresCaseAndTrailingDot(t *testing.T) {
	origin := []OriginConfig{{URL: "http://127.0.0.1:9"}}
	for _, pair := range [][2]string{{"shop.test", "SHOP.test."}, {"*.shop.test", "*.Shop.Test."}, {"shop.test.", " shop.test"}} {
		c := Config{Pools: []PoolConfig{
			{Name: "a", Hosts: []string{pair[0]}, Origins: origin},
			{Name: "b", Hosts: []string{pair[1]}, Origins: origin},
		}}
		err := c.ValidateAndSetDefaults()
		want := fmt.Sprintf(`pools[1].hosts: %q with path_prefix "/": duplicate route (pool "a" as %q: host names match in any case and without a trailing dot)`, pair[1], pair[0])
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrDuplicate) {
			t.Errorf("hosts %q then %q: %v\nwant %s", pair[0], pair[1], err, want)
		}
	}
	// A different prefix is another route.
	c := Config{Pools: []PoolConfig{
		{Name: "a", Hosts: []string{"shop.test"}, Origins: origin},
		{Name: "b", Hosts: []string{"SHOP.test."}, PathPrefix: "/b", Origins: origin},
	}}
	if err := c.ValidateAndSetDefaults(); err != nil {
		t.Errorf("distinct prefixes: %v", err)
	}
	// Names no Host can have are errors.
	for _, tt := range []struct{ host, want string }{
		{".shop.test", `pools[0].hosts[0]: ".shop.test": a leading dot: write "*.shop.test" for its subdomains, or "shop.test" for the name itself`},
		{"shop..test", `pools[0].hosts[0]: "shop..test": an empty label`},
		{"*..shop.test", `pools[0].hosts[0]: "*..shop.test": an empty label`},
		{".", `pools[0].hosts[0]: ".": an empty label`},
		{"*.shop.test:8080", `pools[0].hosts[0]: "*.shop.test:8080": want a host name (no port, no scheme)`},
	} {
		c := Config{Pools: []PoolConfig{{Name: "a", Hosts: []string{tt.host}, Origins: origin}}}
		if err := c.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("hosts [%q]: %v\nwant %s", tt.host, err, tt.want)
		}
	}
}

// TestHostWithTrailingDotRoutes: a hosts entry written fully qualified
// ("SHOP.test.", "*.Shop.Test.") serves requests for the name, with or
// without the trailing dot, as the request's Host is matched without it.
func TestHostWithTrailingDotRoutes(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.Pools[0].Hosts = []string{"SHOP.test."}
	cfg.Pools = append(cfg.Pools, PoolConfig{Name: "sub", Hosts: []string{"*.Shop.Test."}, Origins: []OriginConfig{{URL: b.srv.URL}}})
	for _, engine := range bothEngines {
		h := startWith(t, cfg, nil, false, engine)
		for _, host := range []string{"shop.test", "Shop.Test.", "shop.test:80", "www.shop.test", "www.shop.test."} {
			if got := hostGet(t, h, host, "/"); got != 200 {
				t.Errorf("%s: Host %s: %d, want 200", engine, host, got)
			}
		}
	}
	if a.hits.Load() == 0 || b.hits.Load() == 0 {
		t.Errorf("origin hits a=%d b=%d: both pools should serve", a.hits.Load(), b.hits.Load())
	}
}

// TestOriginIsTheProxyItself: an origin at the proxy's own listen or
// tls_listen address sends every request back into the proxy, which
// forwards it again until max_client_conns fills: a config error naming
// the key and both addresses.
func TestOriginIsTheProxyItself(t *testing.T) {
	bad := []struct {
		listen, tlsListen, url, want string
	}{
		{"127.0.0.1:18089", "", "http://127.0.0.1:18089",
			`pools[0].origins[0].url: "http://127.0.0.1:18089" (127.0.0.1:18089) is this proxy's own listen 127.0.0.1:18089: a request sent there comes back to the proxy`},
		{"0.0.0.0:18089", "", "http://localhost:18089", `(localhost:18089) is this proxy's own listen 0.0.0.0:18089`},
		{"[::]:18089", "", "http://127.0.0.2:18089", `(127.0.0.2:18089) is this proxy's own listen [::]:18089`},
		{":18089", "", "http://[::1]:18089", `([::1]:18089) is this proxy's own listen :18089`},
		{":80", "", "http://LocalHost.", `(LocalHost.) is this proxy's own listen :80`},
		{"127.0.0.1:8080", ":18443", "https://127.0.0.1:18443", `(127.0.0.1:18443) is this proxy's own tls_listen :18443`},
		{"[::1]:18089", "", "http://[0:0::1]:18089", `is this proxy's own listen [::1]:18089`},
		{"localhost:18089", "", "http://localhost:18089", `is this proxy's own listen localhost:18089`},
	}
	for _, tt := range bad {
		c := Config{Listen: tt.listen, TLSListen: tt.tlsListen, Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{URL: tt.url}}}}}
		err := c.ValidateAndSetDefaults()
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrOriginIsProxy) {
			t.Errorf("listen %s tls_listen %q origin %s: %v\nwant %s", tt.listen, tt.tlsListen, tt.url, err, tt.want)
		}
	}
	// A target's origin is named by its target key.
	c := Config{Listen: "127.0.0.1:18089", Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{Target: "self", URL: "http://127.0.0.1:18089"}}}}}
	if err := c.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), `pools[0].origins[0].target: "http://127.0.0.1:18089" (127.0.0.1:18089) is this proxy's own listen`) {
		t.Errorf("target origin: %v", err)
	}
	good := []struct{ listen, url string }{
		{"127.0.0.1:18089", "http://127.0.0.1:18090"},
		{"127.0.0.1:18089", "http://127.0.0.2:18089"}, // another loopback address: another socket
		{"10.0.0.1:18089", "http://127.0.0.1:18089"},
		{"0.0.0.0:18089", "http://10.0.0.1:18089"},
		{"0.0.0.0:18089", "http://origin.internal:18089"},
		{"127.0.0.1:0", "http://127.0.0.1:18089"},
		{"127.0.0.1:80", "https://127.0.0.1"}, // :443
	}
	for _, tt := range good {
		c := Config{Listen: tt.listen, Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{URL: tt.url}}}}}
		if err := c.ValidateAndSetDefaults(); err != nil {
			t.Errorf("listen %s origin %s: %v, want ok", tt.listen, tt.url, err)
		}
	}
}

// TestConnectTimeoutDefaultNamed: with only retry.try_timeout set below
// 2s, the error says connect_timeout's 2s is its default and how to fix it,
// rather than blaming a key the user never wrote.
func TestConnectTimeoutDefaultNamed(t *testing.T) {
	origin := []OriginConfig{{URL: "http://127.0.0.1:9"}}
	c := Config{Pools: []PoolConfig{{Name: "w", Retry: RetryConfig{TryTimeout: time.Second}, Origins: origin}}}
	want := "pools[0].connect_timeout: 2s (the default) is longer than retry.try_timeout 1s: raise try_timeout or set connect_timeout"
	if err := c.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v\nwant %s", err, want)
	}
	// Validated again (New and reload validate a copy): still the default.
	if err := c.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("second validation: %v\nwant %s", err, want)
	}
	c = Config{Pools: []PoolConfig{{Name: "w", ConnectTimeout: 20 * time.Second, Origins: origin}}}
	want = "pools[0].connect_timeout: 20s is longer than retry.try_timeout 15s (the default): lower connect_timeout or raise try_timeout"
	if err := c.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v\nwant %s", err, want)
	}
}

// TestPoolErrorsDoNotHideOthers: a pool with an error of its own still
// has its name and routes recorded, so a later pool's duplicate name or
// route is reported in the same run.
func TestPoolErrorsDoNotHideOthers(t *testing.T) {
	c := Config{Pools: []PoolConfig{
		{Name: "web", Hosts: []string{"shop.test"}, Origins: []OriginConfig{{URL: "ftp://127.0.0.1:9"}}},
		{Name: "web", Hosts: []string{"other.test"}, Origins: []OriginConfig{{URL: "http://127.0.0.1:9"}}},
		{Name: "api", Hosts: []string{"SHOP.test"}, Origins: []OriginConfig{{URL: "http://127.0.0.1:9"}}},
	}}
	err := c.ValidateAndSetDefaults()
	for _, want := range []string{
		`pools[0].origins[0].url: "ftp://127.0.0.1:9": want http:// or https://`,
		`pools[1].name: "web": duplicate pool name`,
		`pools[2].hosts: "SHOP.test" with path_prefix "/": duplicate route (pool "web"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwant it to list %s", err, want)
		}
	}
}
