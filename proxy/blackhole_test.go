package proxy

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// blackholeURL returns the URL of a listener whose accept queue is full, so
// the kernel drops further SYNs and connects hang (a blackholed address,
// without leaving 127.0.0.1).
func blackholeURL(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		noBlackhole(t, fmt.Sprintf("raw socket: %v", err))
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, _ := syscall.Getsockname(fd)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	// Fill the accept queue until a connect hangs.
	for i := 0; i < 8; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return "http://" + addr
		}
		t.Cleanup(func() { c.Close() })
	}
	noBlackhole(t, "could not fill the accept queue: connects to a full listener do not hang here")
	return ""
}

// noBlackhole stops a test that needs a hanging connect: with CI=true (where
// the connect-timeout paths must be exercised) it fails, elsewhere it skips.
func noBlackhole(t *testing.T, why string) {
	t.Helper()
	if checktest.InCI() {
		t.Fatalf("CI=true: no blackholed address for the connect-timeout test: %s", why)
	}
	t.Skipf("SKIPPING: %s", why)
}

func TestFailoverPOSTRetriedOnConnectTimeout(t *testing.T) {
	hole := blackholeURL(t)
	good := newBackend(t, "good")
	cfg := pool1(PolicyFirst, hole, good.srv.URL)
	cfg.Pools[0].ConnectTimeout = 200 * time.Millisecond
	h := start(t, cfg, nil, false)
	for _, m := range []string{"GET", "POST"} {
		code, body, _ := h.do(m, "/", map[string]string{"GET": "", "POST": "a=1"}[m])
		if code != 200 || body != "ok good" {
			t.Fatalf("%s: got %d %q, want the request moved on after the connect timeout", m, code, body)
		}
	}
	if v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"cause": CauseConnectTimeout}); v != 2 {
		t.Fatalf("retries_total{cause=connect_timeout} = %v, want 2", v)
	}
}
