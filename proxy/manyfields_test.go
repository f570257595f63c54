//go:build unix

package proxy

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// manyFieldsHead is a head's field lines: n distinct names, "X<i>: v".
func manyFieldsHead(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "X%d: v\r\n", i)
	}
	return b.String()
}

// requestCPU is the CPU time of this process (client, proxy and origin
// alike) per keep-alive request of reqs on one connection to addr: CPU
// time, not wall time, so that other work on the machine counts little.
func requestCPU(t *testing.T, addr, req string, reqs int) time.Duration {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReaderSize(c, 64<<10)
	do := func() {
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		status, n, err := readRawResponse(br)
		if err != nil || status != 200 || n != 2 {
			t.Fatalf("status %d, %d body bytes, %v", status, n, err)
		}
	}
	do() // warm: the origin connection, the buffers
	t0 := processCPU(t)
	for i := 0; i < reqs; i++ {
		do()
	}
	return (processCPU(t) - t0) / time.Duration(reqs)
}

// processCPU is the user and system CPU time this process used so far.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestManyFieldsLinear: a request with 6000 distinct header field names
// (59 KB, under max_header_bytes) and an answer with 20,000 (under the
// 256 KiB answer head cap) cost the proxy in proportion to their size: at
// most a small factor above 60 (resp. 100) times the CPU of 100 (resp. 200)
// fields, measured in the same test (15–45 and 65–125 times with the fix;
// 370–1200 and 1800–3700 times without). Writing the fields in their order
// used to scan the list of names for each field, so 6000 fields cost 200–300
// times 100 fields and a few connections sending them slowed every other
// client of the proxy.
func TestManyFieldsLinear(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName+"/request", func(t *testing.T) {
			origin := rawResponder(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
			h := startWith(t, pool1(PolicyRoundRobin, origin), nil, false, engineName)
			addr := strings.TrimPrefix(h.front.URL, "http://")
			req := func(n int) string {
				return "GET /x HTTP/1.1\r\nHost: www.example.com\r\n" + manyFieldsHead(n) + "\r\n"
			}
			small := requestCPU(t, addr, req(100), 300)
			large := requestCPU(t, addr, req(6000), 10)
			ratio := float64(large) / float64(small)
			t.Logf("100 fields: %v, 6000 fields: %v, ratio %.0f", small, large, ratio)
			if ratio > 2.5*60 {
				t.Errorf("a request of 6000 fields took %v of CPU, %.0f times one of 100 (%v); want at most 2.5 × 60", large, ratio, small)
			}
		})
		t.Run(engineName+"/answer", func(t *testing.T) {
			answer := func(n int) string {
				return "HTTP/1.1 200 OK\r\n" + manyFieldsHead(n) + "Content-Length: 2\r\n\r\nok"
			}
			req := "GET /x HTTP/1.1\r\nHost: www.example.com\r\n\r\n"
			smallOrigin := rawResponder(t, answer(200), false)
			largeOrigin := rawResponder(t, answer(20000), false)
			hs := startWith(t, pool1(PolicyRoundRobin, smallOrigin), nil, false, engineName)
			hl := startWith(t, pool1(PolicyRoundRobin, largeOrigin), nil, false, engineName)
			small := requestCPU(t, strings.TrimPrefix(hs.front.URL, "http://"), req, 300)
			large := requestCPU(t, strings.TrimPrefix(hl.front.URL, "http://"), req, 10)
			ratio := float64(large) / float64(small)
			t.Logf("200 fields: %v, 20000 fields: %v, ratio %.0f", small, large, ratio)
			if ratio > 5*100 {
				t.Errorf("an answer of 20,000 fields took %v of CPU, %.0f times one of 200 (%v); want at most 5 × 100", large, ratio, small)
			}
		})
	}
}
