package proxy

import (
	"bufio"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestIdleConnMemory: on the fast engine's plain listener, a keep-alive
// connection idle between requests holds no 4 KiB read and write buffers:
// 1000 idle connections add under 10 KiB of Go heap each (the buffers alone
// were 8 KiB, the whole about 14 KiB), and each is served again at once
// when its next request comes. Linux only: elsewhere idle connections keep
// their buffers.
func TestIdleConnMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("buffers are given back while idle on Linux only (idlewait_linux.go)")
	}
	if testEngine() != EngineFast {
		t.Skip("the fast engine's buffers")
	}
	origin := rawResponder(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
	h := startWith(t, pool1(PolicyRoundRobin, origin), nil, false, EngineFast)
	addr := strings.TrimPrefix(h.front.URL, "http://")
	const req = "GET /x HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: t\r\nAccept: */*\r\n\r\n"
	buf := make([]byte, 4096)
	get := func(c net.Conn) {
		t.Helper()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		got := ""
		for !strings.HasSuffix(got, "\r\n\r\nok") && len(got) < 2000 {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("after %q: %v", got, err)
			}
			got += string(buf[:n])
		}
	}
	heap := func() int64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapInuse)
	}
	// settled is the heap once what earlier tests left running has ended:
	// two readings 100 ms apart within 64 KiB (at most 3 s).
	settled := func() int64 {
		last := heap()
		for range 30 {
			time.Sleep(100 * time.Millisecond)
			h := heap()
			if d := h - last; d > -64<<10 && d < 64<<10 {
				return h
			}
			last = h
		}
		return last
	}
	// Warm the pools and the origin connection.
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		get(c)
		c.Close()
	}
	before := settled()
	const n = 1000
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		get(c)
	}
	time.Sleep(200 * time.Millisecond) // every connection back waiting
	per := float64(heap()-before) / n
	t.Logf("%.0f bytes of heap per idle keep-alive connection (proxy and client side)", per)
	if per > 10<<10 {
		t.Errorf("%.0f bytes of heap per idle keep-alive connection, want under 10 KiB (no 4 KiB buffers held while idle)", per)
	}
	// Every connection serves its next request, twice.
	for range 2 {
		for _, c := range conns {
			get(c)
		}
	}
}

// TestIdleWaitPipelined: requests pipelined in one write, more than a
// buffer's worth (so bytes wait in the socket after a read), are all
// answered in order, the connection going idle in between.
func TestIdleWaitPipelined(t *testing.T) {
	origin := rawResponder(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
	h := startWith(t, pool1(PolicyRoundRobin, origin), nil, false, testEngine())
	c, err := net.Dial("tcp", strings.TrimPrefix(h.front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for round := range 3 {
		var b strings.Builder
		const n = 8
		for i := range n {
			b.WriteString("GET /x HTTP/1.1\r\nHost: www.example.com\r\nX-Pad: " + strings.Repeat("p", 1500+i) + "\r\n\r\n")
		}
		if _, err := io.WriteString(c, b.String()); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			status, body, err := readRawResponse(br)
			if err != nil || status != 200 || body != 2 {
				t.Fatalf("round %d, answer %d: status %d, %d body bytes, %v", round, i, status, body, err)
			}
		}
		time.Sleep(50 * time.Millisecond) // idle between rounds
	}
}
