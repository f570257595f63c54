package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// limitedServer serves 200 behind a connLimit of maxClient connections
// with perClient per address (exempt not counted), on 127.0.0.1.
func limitedServer(t *testing.T, maxClient, perClient int, exempt []netip.Prefix) (string, *connLimit) {
	t.Helper()
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	lim := newConnLimit(maxClient, m, testLogger(t))
	lim.perClient(perClient, exempt)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(lim.listener(ln))
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), lim
}

// dialFrom connects to addr from the local address from (127.0.0.x); nil
// when the connection was refused or reset at once (a connection the
// per-client limit closed at accept can be reset before connect returns).
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Logf("dial from %s: %v", from, err)
		return nil
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends one GET on c and reports whether a 200 came back within d
// (false for a nil c).
func get(c net.Conn, d time.Duration) bool {
	if c == nil {
		return false
	}
	c.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// TestMaxConnsPerClient: one address's idle connections fill no more than
// its share, so max_client_conns is never full of one client's and another
// client is served at once; its connections over the limit are closed at
// accept, and it gets a new one when one of its own closes.
func TestMaxConnsPerClient(t *testing.T) {
	addr, lim := limitedServer(t, 8, 4, nil)
	// The attacker opens max_client_conns idle connections.
	var idle []net.Conn
	for i := 0; i < 8; i++ {
		idle = append(idle, dialFrom(t, "127.0.0.1", addr))
	}
	// Another client is served at once.
	if !get(dialFrom(t, "127.0.0.2", addr), 2*time.Second) {
		t.Fatal("a client from another address was not served while one address held max_client_conns idle connections")
	}
	// The attacker's first 4 are open, the others were closed at accept.
	served := 0
	for _, c := range idle {
		if get(c, 2*time.Second) {
			served++
		}
	}
	if served != 4 {
		t.Fatalf("%d of the address's 8 connections were served, want max_conns_per_client (4)", served)
	}
	if n := lim.per.closed(); n != 4 {
		t.Fatalf("closed at accept: %d, want 4", n)
	}
	// One of its connections closes: it may open another.
	for _, c := range idle {
		if c != nil {
			c.Close()
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for ok := false; !ok; { // bounded by deadline
		if time.Now().After(deadline) {
			t.Fatal("the address got no new connection after its others closed")
		}
		ok = get(dialFrom(t, "127.0.0.1", addr), time.Second)
	}
}

// TestMaxConnsPerClientExempt: a peer in trusted_proxies or
// proxy_protocol_from (a load balancer carrying many clients) is not
// limited.
func TestMaxConnsPerClientExempt(t *testing.T) {
	addr, lim := limitedServer(t, 100, 2, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	var conns []net.Conn
	for i := 0; i < 5; i++ {
		conns = append(conns, dialFrom(t, "127.0.0.1", addr))
	}
	for i, c := range conns {
		if !get(c, 2*time.Second) {
			t.Fatalf("connection %d of an exempt peer not served", i)
		}
	}
	if lim.per.closed() != 0 {
		t.Fatal("an exempt peer's connections were closed")
	}
}

func TestClientKeyIPv6Prefix(t *testing.T) {
	l := newClientLimit(1, nil, testLogger(t))
	a, _ := l.clientKey(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa::1")})
	b, _ := l.clientKey(&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:bbbb::9")})
	c, _ := l.clientKey(&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7")})
	if a != b || a.String() != "2001:db8:1:2::" || c.String() != "192.0.2.7" {
		t.Fatalf("keys %s %s %s", a, b, c)
	}
}
