package main

import (
	"net"
	"strings"
	"testing"
)

// TestDemoFaultCheckedLocally: a fault command with an unknown origin or
// mode is a usage error (exit 2) whether or not a demo answers, and one
// that cannot reach a demo (exit 1) says, without --addr, where `vigil demo
// origins` listens.
func TestDemoFaultCheckedLocally(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{{"origin-b", "nosuch"}, {"origin-b", "slow:abc"}, {"origin-z", "ok"}, {"origin-a", "corrupt:5"}} {
		out, code := runCLI(t, append([]string{"demo", "fault", "--addr", dead}, args...)...)
		if code != 2 || !strings.Contains(out, "usage: vigil demo fault") || strings.Contains(out, "connection refused") {
			t.Errorf("demo fault %s with no demo running: exit %d, %q; want exit 2 with the usage, not a connection error", strings.Join(args, " "), code, out)
		}
	}
	out, code := runCLI(t, "demo", "fault", "--addr", dead, "origin-b", "corrupt")
	if code != 1 || !strings.Contains(out, "is 'vigil demo' running on "+dead+"?") || strings.Contains(out, "9204") {
		t.Errorf("valid fault, no demo, --addr given: exit %d, %q; want exit 1 naming %s only", code, out, dead)
	}
	if c, err := net.Dial("tcp", defaultDemoListen); err == nil {
		c.Close()
		t.Logf("SKIP the default-address hint: %s is in use here", defaultDemoListen)
		return
	}
	out, code = runCLI(t, "demo", "fault", "origin-b", "corrupt")
	if code != 1 || !strings.Contains(out, "'vigil demo origins' listens on 127.0.0.1:9204 by default") {
		t.Errorf("valid fault, no demo, no --addr: exit %d, %q; want exit 1 pointing at 127.0.0.1:9204", code, out)
	}
}
