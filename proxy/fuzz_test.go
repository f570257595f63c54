package proxy

import (
	"strings"
	"testing"
)

func FuzzHostPattern(f *testing.F) {
	for _, s := range []string{"*", "www.example.com", "*.example.com", "a.*.b", "", "[::1]", "EXAMPLE.com:80"} {
		f.Add(s, "www.example.com:8080")
	}
	f.Fuzz(func(t *testing.T, pattern, host string) {
		hp, err := parseHostPattern(pattern)
		h := hostOf(host)
		if strings.ContainsAny(h, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			t.Fatalf("hostOf(%q) = %q is not lower-case", host, h)
		}
		if err != nil {
			return
		}
		if hp.any && !hp.match(h) {
			t.Fatalf("* does not match %q", h)
		}
		if hp.exact != "" && hp.match(h) != (h == hp.exact) {
			t.Fatalf("exact %q vs %q", hp.exact, h)
		}
	})
}

func FuzzHashKey(f *testing.F) {
	for _, s := range []string{"path", "client_ip", "header:X-User", "cookie:sid", "header:", "query:x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		hk := parseHashKey(k)
		if (hk.kind == 1 || hk.kind == 2) && hk.name == "" {
			t.Fatalf("%q parsed with an empty name", k)
		}
	})
}
