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
