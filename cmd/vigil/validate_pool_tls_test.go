package main

import (
	"strings"
	"testing"
)

// A proxy pool's tls.insecure_skip_verify is a vigil validate warning at
// its line, as a check's is (exit 0): the proxy's origins get user traffic.
func TestValidateWarnsPoolInsecureSkipVerify(t *testing.T) {
	cfg := writeConfig(t, `proxy:
  listen: 127.0.0.1:0
  pools:
    - name: safe
      hosts: [safe.local]
      origins: [{url: "https://127.0.0.1:1"}]
    - name: p
      hosts: [app.local]
      origins: [{url: "https://127.0.0.1:2"}]
      tls:
        insecure_skip_verify: true
`)
	out, code := runCLI(t, "validate", "-c", cfg)
	want := "ok\nwarning: " + cfg + ":11: proxy.pools[1].tls.insecure_skip_verify: true: certificates are not verified " +
		"(the user traffic the proxy sends to this pool's https origins can be read and changed on the way)"
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("exit %d:\n%s\nwant exit 0 and:\n%s", code, out, want)
	}
}
