package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/vigil-synthetics/vigil/checks/checktest"
)

// TestHostCheckDemo: the demo listens on 127.0.0.1, so a request naming
// another host (a DNS-rebinding page in the user's browser) is refused with
// 421 on the status page, the API and /demo/fault, while localhost and
// 127.0.0.1 are served.
func TestHostCheckDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("demo test skipped in -short mode")
	}
	d, stop := startTestDemo(t)
	defer stop()
	addr := d.app.Addr()
	_, port, _ := net.SplitHostPort(addr)

	reqs := []struct {
		name, method, path, body string
		ok                       int
	}{
		{"status page", "GET", "/", "", 200},
		{"verdicts API", "GET", "/api/v1/verdicts", "", 200},
		{"demo fault", "POST", "/demo/fault", "origin=origin-b&mode=ok", 200},
	}
	hosts := []struct {
		host  string
		allow bool
	}{
		{"rebind.attacker.example:" + port, false},
		{"rebind.attacker.example", false},
		{"localhost.attacker.example:" + port, false},
		{"127.0.0.1.nip.io:" + port, false},
		{"localhost:" + port, true},
		{"LOCALHOST.:" + port, true},
		{"127.0.0.1:" + port, true},
		{"127.1.2.3", true},
		{"[::1]:" + port, true},
	}
	for _, r := range reqs {
		for _, h := range hosts {
			t.Run(r.name+"/"+h.host, func(t *testing.T) {
				raw := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", r.method, r.path, h.host)
				if r.body != "" {
					raw += fmt.Sprintf("Content-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n", len(r.body))
				}
				raw += "\r\n" + r.body
				code, _, body := rawExchange(t, addr, raw)
				switch {
				case h.allow && code != r.ok:
					t.Errorf("Host %s: %d %q, want %d", h.host, code, body, r.ok)
				case !h.allow && code != 421:
					t.Errorf("Host %s: %d %q, want 421", h.host, code, body)
				case !h.allow && !strings.Contains(body, "loopback") && !strings.Contains(body, "localhost"):
					t.Errorf("421 body does not name the rule: %q", body)
				}
			})
		}
	}
}

// allInterfaces is a listener on 127.0.0.1 that reports the address of a
// listener on every interface (0.0.0.0, same port): the agent judges the
// address it listens on, and the test exposes nothing beyond loopback.
type allInterfaces struct{ net.Listener }

func (l allInterfaces) Addr() net.Addr {
	a := *l.Listener.Addr().(*net.TCPAddr)
	a.IP = net.IPv4zero
	return &a
}

// TestHostCheckExposedListener: an agent listening on all interfaces was
// exposed on purpose and serves any Host.
func TestHostCheckExposedListener(t *testing.T) {
	o := checktest.NewOrigin()
	defer o.Close()
	c, err := loadConfig(writeConfig(t, healthzConfig(t.TempDir(), o.URL())), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	lo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := allInterfaces{lo}
	a, err := newApp(c, appOptions{roles: roles{canary: true, page: true}, listener: ln, log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer runApp(t, a)()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, host := range []string{"vigil.example.net:" + port, "127.0.0.1:" + port} {
		code, _, body := rawExchange(t, "127.0.0.1:"+port, "GET /healthz HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
		if code != 200 {
			t.Errorf("listener on 0.0.0.0, Host %s: %d %q, want 200", host, code, body)
		}
	}
}

func TestHostCheckLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "localhost:80": true, "LocalHost.:9": true, "127.0.0.1": true, "127.255.0.9:1": true,
		"[::1]": true, "[::1]:8080": true, "::1": true,
		"": false, "example.com": false, "localhost.example.com": false, "128.0.0.1": false, "10.0.0.1:80": false,
		"[::ffff:127.0.0.1]:80": false, "[fe80::1%25lo]:80": false, "0.0.0.0": false, "127.0.0.1.example": false,
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
