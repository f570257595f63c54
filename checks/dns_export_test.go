package checks

import (
	"context"
	"testing"
)

// RunDNSWithResolvConf compiles a dns check that reads the system
// resolver from file instead of /etc/resolv.conf, and runs it once.
func RunDNSWithResolvConf(t testing.TB, spec DNSSpec, e Expect, file string, target Target) Result {
	t.Helper()
	c, err := NewDNS(spec, e, Options{Timeout: 5e9})
	if err != nil {
		t.Fatalf("NewDNS: %v", err)
	}
	c.resolvConf = file
	return c.Run(context.Background(), target)
}
