package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// scriptedOrigin is a keep-alive origin on a real socket that answers each
// request with answer(path): the raw bytes to write (then, when late is
// non-empty, late after a pause, as a second write). closeIdle > 0 closes a
// connection idle that long (a short keepalive_timeout). It counts requests
// and connections.
type scriptedOrigin struct {
	url       string
	mu        sync.Mutex
	requests  int
	conns     int
	answer    func(path string) (now, late string)
	closeIdle time.Duration
}

func newScriptedOrigin(t *testing.T, closeIdle time.Duration, answer func(path string) (string, string)) *scriptedOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &scriptedOrigin{url: "http://" + ln.Addr().String(), answer: answer, closeIdle: closeIdle}
	var wg sync.WaitGroup
	var open sync.Map // net.Conn -> struct{}
	t.Cleanup(func() {
		ln.Close()
		open.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.mu.Lock()
			o.conns++
			o.mu.Unlock()
			open.Store(c, struct{}{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer open.Delete(c)
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					if o.closeIdle > 0 {
						c.SetReadDeadline(time.Now().Add(o.closeIdle))
					} else {
						c.SetReadDeadline(time.Now().Add(30 * time.Second))
					}
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					o.mu.Lock()
					o.requests++
					o.mu.Unlock()
					now, late := o.answer(req.URL.Path)
					if _, err := c.Write([]byte(now)); err != nil {
						return
					}
					if late != "" {
						time.Sleep(20 * time.Millisecond)
						c.Write([]byte(late))
					}
				}
			}()
		}
	}()
	return o
}

func (o *scriptedOrigin) counts() (requests, conns int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.requests, o.conns
}

func okAnswer(body string) string {
	return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// An origin that sends bytes past the end of an answer (a body after a 204,
// a body to a HEAD, more than Content-Length) must not get them read as the
// next request's answer: that would hand one client's bytes to another.
func TestOriginExtraBytesNeverReachAnotherRequest(t *testing.T) {
	const smuggled = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nX-Smuggled: yes\r\n\r\nsmuggled"
	for _, tc := range []struct {
		name, method, path string
	}{
		{"after a 204, same write", "GET", "/204"},
		{"after a 204, later write", "GET", "/204late"},
		{"body to a HEAD", "HEAD", "/head"},
		{"past Content-Length", "GET", "/cl"},
		{"past Content-Length, later write", "GET", "/cllate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newScriptedOrigin(t, 0, func(path string) (string, string) {
				switch path {
				case "/204":
					return "HTTP/1.1 204 No Content\r\n\r\n" + smuggled, ""
				case "/204late":
					return "HTTP/1.1 204 No Content\r\n\r\n", smuggled
				case "/head":
					return okAnswer("head-body"), ""
				case "/cl":
					return okAnswer("short") + smuggled, ""
				case "/cllate":
					return okAnswer("short"), smuggled
				}
				return okAnswer("private:" + path), ""
			})
			cfg := pool1(PolicyRoundRobin, o.url)
			cfg.Pools[0].Retry.Tries = 1 // a wrong answer must not be hidden by a retry
			h := start(t, cfg, nil, false)
			h.do(tc.method, tc.path, "")
			time.Sleep(60 * time.Millisecond) // the late write has arrived
			for i := 0; i < 5; i++ {
				code, body, hdr := h.do("GET", fmt.Sprintf("/user-%d", i), "")
				if code != 200 || body != fmt.Sprintf("private:/user-%d", i) || hdr.Get("X-Smuggled") != "" {
					t.Fatalf("request %d after %s: got %d %q (X-Smuggled %q), want 200 %q", i, tc.path, code, body,
						hdr.Get("X-Smuggled"), fmt.Sprintf("private:/user-%d", i))
				}
			}
		})
	}
}

// Origins close idle keep-alive connections after a few seconds (Node,
// Apache, gunicorn); the proxy must not answer 502 to the first requests
// after a quiet spell, nor count those closes as retries.
func TestStaleOriginConnectionsAfterIdleGap(t *testing.T) {
	o := newScriptedOrigin(t, 150*time.Millisecond, func(path string) (string, string) { return okAnswer("ok"), "" })
	cfg := pool1(PolicyRoundRobin, o.url)
	cfg.Pools[0].Retry.Tries = 1
	h := start(t, cfg, nil, false)
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		codes := make([]int, 10)
		for i := range codes {
			wg.Add(1)
			go func() { defer wg.Done(); codes[i], _, _ = h.do("GET", "/", "") }()
		}
		wg.Wait()
		time.Sleep(400 * time.Millisecond) // the origin closed every idle connection
		for i := 0; i < 5; i++ {
			if code, body, _ := h.do("GET", "/", ""); code != 200 {
				t.Fatalf("round %d, request %d after the idle gap: %d %q, want 200", round, i, code, body)
			}
		}
		for i, c := range codes {
			if c != 200 {
				t.Fatalf("round %d, concurrent request %d: %d", round, i, c)
			}
		}
	}
	if v, _ := h.metric("vigil_proxy_retries_total", map[string]string{"cause": CauseReset}); v != 0 {
		t.Errorf("vigil_proxy_retries_total{cause=reset} = %v, want 0", v)
	}
	if _, conns := o.counts(); conns < 2 {
		t.Errorf("the origin saw %d connections: the idle gaps closed none", conns)
	}
}
