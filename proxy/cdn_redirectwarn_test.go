package proxy

import (
	"strings"
	"testing"
)

// TestRedirectHTTPSUncoveredHostWarns: with redirect_https, a pool host
// that no served certificate covers gets a warning (vigil validate, start
// and reload print Config.Warnings) naming the pool and the host: its
// plain-HTTP clients would get a cached permanent 308 to a certificate
// error. Covered hosts, wildcards included, and "*" pools get none; so
// does every host without redirect_https.
func TestRedirectHTTPSUncoveredHostWarns(t *testing.T) {
	tmpl := serverCertTemplate("shop")
	tmpl.DNSNames = []string{"www.shop.example", "*.img.example"}
	certFile, keyFile, _ := writeSelfSigned(t, tmpl, newECKey(t))
	build := func(redirect bool) Config {
		cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
		cfg.Pools[0].Hosts = []string{"www.shop.example", "blog.shop.example"}
		cfg.Pools = append(cfg.Pools,
			PoolConfig{Name: "img", Hosts: []string{"*.img.example", "*.cdn.example"}, Origins: []OriginConfig{{URL: "http://127.0.0.1:2"}}},
			PoolConfig{Name: "any", Hosts: []string{"*"}, Origins: []OriginConfig{{URL: "http://127.0.0.1:3"}}})
		cfg.TLSListen, cfg.CertFile, cfg.KeyFile = "127.0.0.1:0", certFile, keyFile
		cfg.RedirectHTTPS = redirect
		if err := cfg.ValidateAndSetDefaults(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := build(true)
	var got []string
	for _, w := range cfg.Warnings() {
		if strings.Contains(w, "redirect_https") {
			got = append(got, w)
		}
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], `pools[0].hosts[1]: "blog.shop.example" (pool web): redirect_https`) ||
		!strings.HasPrefix(got[1], `pools[1].hosts[1]: "*.cdn.example" (pool img): redirect_https`) {
		t.Fatalf("warnings:\n%s\nwant one for blog.shop.example (pool web) and one for *.cdn.example (pool img)", strings.Join(got, "\n"))
	}
	cfg = build(false)
	for _, w := range cfg.Warnings() {
		if strings.Contains(w, "redirect_https") {
			t.Fatalf("without redirect_https: %s", w)
		}
	}
}
