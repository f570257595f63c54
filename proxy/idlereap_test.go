package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleOriginConnsReaped: the fast path's idle origin connections are
// closed once idle for the idle timeout, also when no request comes (was:
// only checked when a request popped one, so after a burst the connections
// left at the bottom of the LIFO stack stayed open until the origin closed
// them). Counted at the origin, on both engines; a connection is kept while
// younger than the timeout.
func TestIdleOriginConnsReaped(t *testing.T) {
	const idle = time.Second
	for _, engineName := range bothEngines {
		t.Run(engineName, func(t *testing.T) {
			var open atomic.Int64
			release := make(chan struct{})
			var inHandler sync.WaitGroup
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inHandler.Done()
				<-release // every request holds its connection until all arrived
				w.Write([]byte("ok"))
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				switch s {
				case http.StateNew:
					open.Add(1)
				case http.StateClosed, http.StateHijacked:
					open.Add(-1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			h := startWith(t, pool1(PolicyFirst, srv.URL), nil, false, engineName)
			h.origin("web", "o0").h1.setIdleTimeout(idle)

			const n = 8
			inHandler.Add(n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if code, body, _ := h.do("GET", "/", ""); code != 200 {
						t.Errorf("GET: %d %q", code, body)
					}
				}()
			}
			inHandler.Wait()
			close(release)
			wg.Wait()
			if got := open.Load(); got != n {
				t.Fatalf("the origin has %d connections open after %d concurrent requests, want %d", got, n, n)
			}
			time.Sleep(idle / 4)
			if got := open.Load(); got != n {
				t.Fatalf("%v after the burst the origin has %d connections open, want %d kept for reuse", idle/4, got, n)
			}
			// Closed within the timeout plus one reaper period (and slack).
			deadline := time.Now().Add(idle + idle/h1ReapDivisor + 2*time.Second)
			for open.Load() != 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := open.Load(); got != 0 {
				t.Fatalf("%d idle origin connections still open %v after the last request (idle timeout %v)", got, idle+2*time.Second, idle)
			}
			// The pool still works afterwards, on a new connection.
			inHandler.Add(1)
			if code, body, _ := h.do("GET", "/", ""); code != 200 || body != "ok" {
				t.Fatalf("GET after the reap: %d %q", code, body)
			}
		})
	}
}
