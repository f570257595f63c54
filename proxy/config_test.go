package proxy

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{Pools: []PoolConfig{{Name: "web", Origins: []OriginConfig{{Target: "a", URL: "http://127.0.0.1:1"}}}}}
	if err := c.ValidateAndSetDefaults(); err != nil {
		t.Fatal(err)
	}
	p := c.Pools[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", c.Listen, "127.0.0.1:8080"},
		{"max_header_bytes", int64(c.MaxHeaderBytes), int64(64 << 10)},
		{"max_body", int64(c.MaxBody), int64(10 << 20)},
		{"read_header_timeout", c.ReadHeaderTimeout, 10 * time.Second},
		{"idle_timeout", c.IdleTimeout, 60 * time.Second},
		{"verdict_poll", c.VerdictPoll, 2 * time.Second},
		{"signal_window", c.SignalWindow, 10 * time.Second},
		{"hosts", strings.Join(p.Hosts, ","), "*"},
		{"path_prefix", p.PathPrefix, "/"},
		{"policy", p.Policy, PolicyRoundRobin},
		{"hash.key", p.Hash.Key, "client_ip"},
		{"hash.bounded_load", p.Hash.BoundedLoad, 1.25},
		{"weight", p.Origins[0].Weight, 1},
		{"verdicts.quorum", p.Verdicts.Quorum, 1},
		{"verdicts.max_age", p.Verdicts.MaxAge, 60 * time.Second},
		{"passive.consecutive_5xx", p.Passive.Consecutive5xx, 5},
		{"passive.window", p.Passive.Window, 30 * time.Second},
		{"passive.min_requests", p.Passive.MinRequests, 20},
		{"passive.success_rate_stdev", p.Passive.SuccessRateStdev, 1.9},
		{"passive.ejection", p.Passive.Ejection, 30 * time.Second},
		{"passive.max_ejection", p.Passive.MaxEjection, 300 * time.Second},
		{"max_ejected", float64(p.MaxEjected), 50.0},
		{"retry.tries", p.Retry.Tries, 3},
		{"retry.try_timeout", p.Retry.TryTimeout, 15 * time.Second},
		{"retry.budget", p.Retry.Budget, 30 * time.Second},
		{"retry.retry_budget", float64(p.Retry.RetryBudget), 20.0},
		{"retry.max_buffered_body", int64(p.Retry.MaxBufferedBody), int64(64 << 10)},
		{"connect_timeout", p.ConnectTimeout, 2 * time.Second},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	// Defaults are idempotent (Reload validates again).
	before := c.Pools[0].Retry
	if err := c.ValidateAndSetDefaults(); err != nil || c.Pools[0].Retry != before {
		t.Fatalf("second validation changed the config or failed: %v", err)
	}
}

func TestConfigInvalid(t *testing.T) {
	origin := []OriginConfig{{Target: "a", URL: "http://127.0.0.1:1"}}
	tests := []struct {
		name    string
		cfg     Config
		want    string // substring of the error text
		wantErr error  // optional sentinel
	}{
		{"no pools", Config{}, "pools: at least one pool is required", ErrNoPools},
		{"bad listen", Config{Listen: "8080", Pools: []PoolConfig{{Name: "w", Origins: origin}}}, `listen: "8080": want host:port`, nil},
		{"tls without cert", Config{TLSListen: ":8443", Pools: []PoolConfig{{Name: "w", Origins: origin}}}, "cert_file: required with tls_listen", nil},
		{"no name", Config{Pools: []PoolConfig{{Origins: origin}}}, "pools[0].name: required", nil},
		{"no origins", Config{Pools: []PoolConfig{{Name: "w"}}}, "pools[0].origins: at least one origin", ErrNoOrigins},
		{"bad policy", Config{Pools: []PoolConfig{{Name: "w", Policy: "random", Origins: origin}}}, `pools[0].policy: "random": unknown policy`, ErrUnknownPolicy},
		{"bad hash key", Config{Pools: []PoolConfig{{Name: "w", Policy: "hash", Hash: HashConfig{Key: "query:x"}, Origins: origin}}}, `pools[0].hash.key: "query:x"`, ErrBadHashKey},
		{"no url", Config{Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{Target: "a"}}}}}, "pools[0].origins[0].url: url is required", ErrNoURL},
		{"url with path", Config{Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{URL: "http://x:1/app"}}}}}, "pools[0].origins[0].url: \"http://x:1/app\": only scheme://host[:port]", nil},
		{"url with user info", Config{Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{URL: "http://ouser:opass12345@127.0.0.1:27193"}}}}},
			`pools[0].origins[0].url: "http://ouser:…@127.0.0.1:27193": user info (user:password@) is not allowed`, nil},
		{"url with a token as user", Config{Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{URL: "https://tok3nABCDEF@127.0.0.1:9/"}}}}},
			`pools[0].origins[0].url: "https://…@127.0.0.1:9/": user info (user:password@) is not allowed`, nil},
		{"ftp url", Config{Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{URL: "ftp://x:1"}}}}}, "want http:// or https://", nil},
		{"weight", Config{Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{URL: "http://x:1", Weight: 5000}}}}}, "pools[0].origins[0].weight: 5000: want 1..1000", nil},
		{"duplicate origin", Config{Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{URL: "http://x:1"}, {URL: "http://x:1/"}}}}}, "pools[0].origins[1].url", ErrDuplicate},
		{"duplicate pool", Config{Pools: []PoolConfig{{Name: "w", Origins: origin}, {Name: "w", PathPrefix: "/a", Origins: origin}}}, `pools[1].name: "w": duplicate pool name`, ErrDuplicate},
		{"duplicate route", Config{Pools: []PoolConfig{{Name: "a", Origins: origin}, {Name: "b", Origins: origin}}}, `pools[1]: duplicate route: no hosts, so every host ("*"), with path_prefix "/", as pool "a" (which gives no hosts either); this pool would never get a request: give one of the two pools hosts or another path_prefix`, ErrDuplicate},
		{"duplicate route, hosts given", Config{Pools: []PoolConfig{{Name: "a", Hosts: []string{"*"}, Origins: origin}, {Name: "b", Hosts: []string{"*"}, Origins: origin}}}, `pools[1].hosts: "*" with path_prefix "/": duplicate route (pool "a"); hosts[0] of this pool would never get a request`, ErrDuplicate},
		{"duplicate route, one gives hosts", Config{Pools: []PoolConfig{{Name: "a", Hosts: []string{"*"}, Origins: origin}, {Name: "b", Origins: origin}}}, `pools[1]: duplicate route: no hosts, so every host ("*"), with path_prefix "/", as pool "a"; this pool`, ErrDuplicate},
		{"bad host", Config{Pools: []PoolConfig{{Name: "w", Hosts: []string{"a.*.com"}, Origins: origin}}}, "pools[0].hosts[0]", nil},
		{"bad prefix", Config{Pools: []PoolConfig{{Name: "w", PathPrefix: "api", Origins: origin}}}, `pools[0].path_prefix: "api": must start with /`, nil},
		{"quorum", Config{Pools: []PoolConfig{{Name: "w", Verdicts: VerdictConfig{Quorum: -2}, Origins: origin}}}, "pools[0].verdicts.quorum: -2: must be ≥ 1", nil},
		{"max ejection", Config{Pools: []PoolConfig{{Name: "w", Passive: PassiveConfig{Ejection: time.Minute, MaxEjection: time.Second}, Origins: origin}}}, "pools[0].passive.max_ejection: 1s is shorter than ejection 1m0s", nil},
		{"budget", Config{Pools: []PoolConfig{{Name: "w", Retry: RetryConfig{TryTimeout: 10 * time.Second, Budget: time.Second}, Origins: origin}}}, "pools[0].retry.budget: 1s is shorter than try_timeout 10s", nil},
		{"connect vs try", Config{Pools: []PoolConfig{{Name: "w", ConnectTimeout: 5 * time.Second, Retry: RetryConfig{TryTimeout: time.Second, Budget: time.Second}, Origins: origin}}}, "pools[0].connect_timeout: 5s is longer than retry.try_timeout 1s", nil},
		{"origin named none", Config{Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{Target: "none", URL: "http://127.0.0.1:1"}}}}}, `pools[0].origins[0].target: origin name "none" is reserved`, ErrReservedName},
		{"origin host none", Config{Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{URL: "http://none"}}}}}, `pools[0].origins[0].url: origin name "none" is reserved`, ErrReservedName},
		{"tries", Config{Pools: []PoolConfig{{Name: "w", Retry: RetryConfig{Tries: 100}, Origins: origin}}}, "pools[0].retry.tries: 100: want 1..64", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.ValidateAndSetDefaults()
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not contain %q", err, tt.want)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %q is not %v", err, tt.wantErr)
			}
		})
	}
}

func TestConfigSecretNotInErrors(t *testing.T) {
	c := Config{AdminToken: "s3cr3t-token", Listen: "bad"}
	err := c.ValidateAndSetDefaults()
	if err == nil || strings.Contains(err.Error(), "s3cr3t-token") {
		t.Fatalf("want an error without the token, got %v", err)
	}
}

// An origin URL the config refuses is shown without its password or query
// values.
func TestConfigOriginURLRedactedInErrors(t *testing.T) {
	for _, u := range []string{"http://ou:OrigLitPw@127.0.0.1:9/", "ftp://ou:OrigLitPw@127.0.0.1:9", "http://127.0.0.1:9/?key=OrigLitPw"} {
		c := Config{Pools: []PoolConfig{{Name: "w", Origins: []OriginConfig{{URL: u}}}}}
		err := c.ValidateAndSetDefaults()
		if err == nil || strings.Contains(err.Error(), "OrigLitPw") || !strings.Contains(err.Error(), "127.0.0.1:9") {
			t.Errorf("url %s: %v; want an error naming the host without the secret", u, err)
		}
	}
}

func TestHostPatterns(t *testing.T) {
	tests := []struct {
		pattern, host string
		want          bool
	}{
		{"*", "anything.example", true},
		{"www.example.com", "www.example.com", true},
		{"WWW.Example.com", "www.example.com", true},
		{"www.example.com", "example.com", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "badexample.com", false},
	}
	for _, tt := range tests {
		hp, err := parseHostPattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := hp.match(hostOf(tt.host)); got != tt.want {
			t.Errorf("%q matches %q: got %v, want %v", tt.pattern, tt.host, got, tt.want)
		}
	}
	if hostOf("WWW.Example.COM:8080") != "www.example.com" || hostOf("[::1]:80") != "::1" {
		t.Errorf("hostOf: %q %q", hostOf("WWW.Example.COM:8080"), hostOf("[::1]:80"))
	}
}
