package proxy

import (
	"bufio"
	"net"
	"net/http"
	"testing"
	"time"
)

// "OPTIONS *" is answered by the proxy itself (200, before any pool is
// chosen): it is counted in vigil_proxy_refused_total{code="200"}, as every
// request answered before a pool was chosen is, on both engines. Was: in
// the access log but in no metric.
func TestServerOptionsCounted(t *testing.T) {
	for _, engineName := range []string{EngineFast, EngineStdlib} {
		t.Run(engineName, func(t *testing.T) {
			a := newBackend(t, "a")
			h := startWith(t, pool1(PolicyFirst, a.srv.URL), nil, false, engineName)
			c, err := net.DialTimeout("tcp", h.front.Listener.Addr().String(), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write([]byte("OPTIONS * HTTP/1.1\r\nHost: www.example.test\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("OPTIONS *: %d, want 200", resp.StatusCode)
			}
			if v, _ := h.metric("vigil_proxy_refused_total", map[string]string{"code": "200"}); v != 1 {
				t.Fatalf("refused_total{code=200} = %v, want 1", v)
			}
			if a.hits.Load() != 0 {
				t.Fatalf("the origin was asked %d times", a.hits.Load())
			}
		})
	}
}
