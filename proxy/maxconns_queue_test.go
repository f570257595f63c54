package proxy

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMaxConnsQueue: with every slot of a max_conns origin taken, a burst
// of requests waits up to queue_timeout for a slot instead of getting 503
// at once (HAProxy's timeout queue); an explicit queue_timeout: 0 keeps the
// immediate 503.
func TestMaxConnsQueue(t *testing.T) {
	for _, c := range []struct {
		name    string
		queue   time.Duration
		explict bool // queue_timeout set (an explicit 0)
		want503 bool
	}{
		{"default queue", 0, false, false},
		{"queue_timeout 0", 0, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newBackend(t, "a")
			a.mode.Store(modeSlow) // 50ms a request
			cfg := pool1(PolicyFirst, a.srv.URL)
			cfg.Pools[0].Origins[0].MaxConns = 2
			cfg.Pools[0].QueueTimeout = c.queue
			if c.explict {
				cfg.SetKeys([]string{"pools[0].queue_timeout"})
			}
			h := start(t, cfg, nil, false)
			const n = 8 // 4 rounds of 2: 200ms, well within 500ms
			codes := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					codes[i], _, _ = h.do("GET", "/", "")
				}()
			}
			wg.Wait()
			got503 := 0
			for _, code := range codes {
				if code == http.StatusServiceUnavailable {
					got503++
				} else if code != 200 {
					t.Fatalf("codes %v", codes)
				}
			}
			if c.want503 && got503 == 0 || !c.want503 && got503 > 0 {
				t.Fatalf("%d of %d requests got 503 (codes %v); want503=%v", got503, n, codes, c.want503)
			}
		})
	}
}

// TestMaxConnsFull503Diagnosed: a 503 because every origin is at its
// max_conns comes after queue_timeout, names the full origins in the access
// log (upstreams, cause max_conns) and is logged as such.
func TestMaxConnsFull503Diagnosed(t *testing.T) {
	a := newBackend(t, "a")
	a.mode.Store(modeHang)
	path := filepath.Join(t.TempDir(), "access.log")
	cfg := pool1(PolicyFirst, a.srv.URL)
	cfg.AccessLog = path
	cfg.Pools[0].Origins[0].MaxConns = 1
	cfg.Pools[0].QueueTimeout = 150 * time.Millisecond
	cfg.Pools[0].Retry.TryTimeout = 2 * time.Second // frees the held slot
	var logs syncBuf
	h := startLog(t, cfg, nil, true, testEngine(), slog.New(slog.NewTextHandler(&logs, nil)))
	hold := &http.Client{Timeout: 3 * time.Second}
	go func() {
		if resp, err := hold.Get(h.front.URL + "/hold"); err == nil {
			resp.Body.Close()
		}
	}()
	eventually(t, "the origin's one slot taken", func() bool { return h.origin("web", "o0").full() })
	began := time.Now()
	code, body, _ := h.do("GET", "/second", "")
	waited := time.Since(began)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "max_conns") {
		t.Fatalf("got %d %q, want 503 naming max_conns", code, body)
	}
	if waited < 140*time.Millisecond {
		t.Fatalf("503 after %s, want after queue_timeout (150ms)", waited)
	}
	eventually(t, "the 503's access log line", func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), `"path":"/second"`)
	})
	b, _ := os.ReadFile(path)
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"path":"/second"`) {
			line = l
		}
	}
	if !strings.Contains(line, `"upstreams":[{"origin":"o0","cause":"max_conns"}]`) {
		t.Fatalf("access log line does not name the full origin: %s", line)
	}
	if l := logs.String(); !strings.Contains(l, "at its max_conns; answered 503") || !strings.Contains(l, "origins=o0") {
		t.Fatalf("no log line for the max_conns 503:\n%s", l)
	}
}

func TestQueueTimeoutConfig(t *testing.T) {
	cfg := pool1(PolicyFirst, "http://127.0.0.1:1")
	cfg.Pools[0].QueueTimeout = -time.Second
	if err := cfg.ValidateAndSetDefaults(); err == nil || !strings.Contains(err.Error(), "pools[0].queue_timeout: -1s: must not be negative") {
		t.Fatalf("err = %v", err)
	}
	cfg = pool1(PolicyFirst, "http://127.0.0.1:1")
	if err := cfg.ValidateAndSetDefaults(); err != nil || cfg.Pools[0].QueueTimeout != DefaultQueueTimeout {
		t.Fatalf("omitted: %v, %s", err, cfg.Pools[0].QueueTimeout)
	}
	cfg = pool1(PolicyFirst, "http://127.0.0.1:1")
	cfg.SetKeys([]string{"pools[0].queue_timeout"})
	if err := cfg.ValidateAndSetDefaults(); err != nil || cfg.Pools[0].QueueTimeout != 0 {
		t.Fatalf("explicit 0: %v, %s", err, cfg.Pools[0].QueueTimeout)
	}
}
