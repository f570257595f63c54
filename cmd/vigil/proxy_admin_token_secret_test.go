package main

import (
	"strings"
	"testing"
)

// TestProxyAdminTokenIsASecret: proxy.admin_token written as it is in the
// file is hidden wherever the redactor applies, as agent.admin_token is.
func TestProxyAdminTokenIsASecret(t *testing.T) {
	const tok = "proxy-admin-token-5f3a9c1e7b"
	path := writeConfig(t, `proxy:
  admin_token: `+tok+`
  pools:
    - name: web
      origins: [{url: "http://127.0.0.1:9"}]
`)
	cfg, err := loadConfig(path, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.redactor.redact("drain refused for " + tok); strings.Contains(got, tok) {
		t.Fatalf("redacted text %q still holds proxy.admin_token", got)
	}
}
