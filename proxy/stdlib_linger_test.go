package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCloseAfterAnswerLingersEngines: on both engines, a connection closed
// after an answer by keepalive_requests while the client is still sending
// a pipelined request is half-closed and read away, not closed over the
// unread bytes: the kernel's reset would destroy the end of the answer the
// client has not read yet (net/http closes at once there). The client,
// reading a 4 MiB answer only after a second, gets it whole and then the
// connection's end.
func TestCloseAfterAnswerLingersEngines(t *testing.T) {
	big := strings.Repeat("x", 4<<20)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, big)
	}))
	t.Cleanup(origin.Close)
	for _, engine := range []string{EngineFast, EngineStdlib} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			cfg := pool1(PolicyRoundRobin, origin.URL)
			cfg.Engine = engine
			cfg.KeepaliveRequests = 1
			p, err := New(cfg, nil, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			c, err := net.Dial("tcp", runProxy(t, p))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			go func() {
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"+
					"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
				c.Write(make([]byte, 200000)) // ends when the proxy closes
			}()
			time.Sleep(time.Second)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			if err != nil || n != int64(len(big)) || !resp.Close {
				t.Fatalf("read %d of %d bytes of the answer, %v (Connection: close %v); want it whole, with Connection: close", n, len(big), err, resp.Close)
			}
			if n, err := br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Errorf("after the answer: %d bytes, %v; want the connection's end", n, err)
			}
		})
	}
}

// TestRefusalFreesSlotEngines: on both engines, a connection refused with
// 431 (a head over max_header_bytes, and net/http's 4 KiB of slack) gives its max_client_conns slot back
// as soon as the client closes after the answer; net/http alone holds it
// 500 ms (rstAvoidanceDelay). With max_client_conns 1, the next
// connection's request is answered at once.
func TestRefusalFreesSlotEngines(t *testing.T) {
	origin := rawResponder(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
	for _, engine := range []string{EngineFast, EngineStdlib} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			cfg := pool1(PolicyRoundRobin, origin)
			cfg.Engine = engine
			cfg.MaxClientConns = 1
			cfg.MaxHeaderBytes = 1024
			p, err := New(cfg, nil, testLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			addr := runProxy(t, p)
			do := func(head string) (int, error) {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return 0, err
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				io.WriteString(c, head)
				br := bufio.NewReader(c)
				code, err := readStatus(br)
				io.Copy(io.Discard, br) // to the proxy's half-close
				return code, err
			}
			for i := 0; i < 3; i++ {
				if code, err := do("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 8000) + "\r\n\r\n"); code != 431 {
					t.Fatalf("a head over max_header_bytes: %d, %v; want 431", code, err)
				}
				start := time.Now()
				code, err := do("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
				if took := time.Since(start); code != 200 || took > 400*time.Millisecond {
					t.Errorf("the next connection's request: %d, %v after %v; want 200 at once (max_client_conns 1: the refused connection's slot given back)", code, err, took)
				}
			}
		})
	}
}
