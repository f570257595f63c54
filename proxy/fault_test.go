package proxy

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFaultsUnderLoad runs constant GET+POST load through three origins
// while one origin breaks in a different way per case, and checks what the
// clients saw: GET errors, and POSTs that reached more than one origin.
func TestFaultsUnderLoad(t *testing.T) {
	const workers, perWorker = 8, 60
	tests := []struct {
		name      string
		breakIt   func(b *backend, stop <-chan struct{})
		maxGETErr int
		synDrop   bool // origin b is a full listener: connects hang
	}{
		{"killed", func(b *backend, _ <-chan struct{}) { b.srv.CloseClientConnections(); b.srv.Listener.Close() }, 0, false},
		{"503", func(b *backend, _ <-chan struct{}) { b.mode.Store(mode503) }, 0, false},
		{"partial 503", func(b *backend, _ <-chan struct{}) { b.mode.Store(modePartial) }, 0, false},
		{"slow", func(b *backend, _ <-chan struct{}) { b.mode.Store(modeSlow) }, 0, false},
		{"flapping", func(b *backend, stop <-chan struct{}) {
			go func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(15 * time.Millisecond):
					}
					b.mode.Store(int32(i % 2)) // modeOK / mode503
				}
			}()
		}, 0, false},
		// A blackholed origin accepts and never answers: GETs wait for
		// try_timeout then move on; only the budget can fail them.
		{"blackholed", func(b *backend, _ <-chan struct{}) { b.mode.Store(modeHang) }, workers, false},
		// SYNs dropped: connects time out after connect_timeout and every
		// request, POSTs included, moves on.
		{"syn dropped", func(*backend, <-chan struct{}) {}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs := []*backend{newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")}
			us := urls(bs...)
			if tt.synDrop {
				us[1] = blackholeURL(t)
			}
			cfg := pool1(PolicyRoundRobin, us...)
			cfg.Pools[0].ConnectTimeout = 200 * time.Millisecond
			cfg.Pools[0].ConnectTimeout = 200 * time.Millisecond
			// Generous bounds: the machine may be shared and slow.
			cfg.Pools[0].Retry = RetryConfig{TryTimeout: time.Second, Budget: 5 * time.Second}
			cfg.Pools[0].Passive.LatencyP95 = 500 * time.Millisecond
			cfg.Pools[0].Passive.MinRequests = 10
			cfg.Pools[0].Passive.Window = time.Second
			h := start(t, cfg, nil, true)
			var sent, getErr, postErr, posts atomic.Int64
			stop := make(chan struct{})
			var once sync.Once
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for i := 0; i < perWorker; i++ {
						if n := sent.Add(1); n == workers*perWorker/4 {
							once.Do(func() { tt.breakIt(bs[1], stop) })
						}
						method, body := "GET", ""
						if i%4 == 3 {
							method, body = "POST", fmt.Sprintf("order=%d-%d", w, i)
							posts.Add(1)
						}
						req, _ := http.NewRequest(method, h.front.URL+"/load", strings.NewReader(body))
						if body == "" {
							req.Body = nil
						}
						req.Header.Set("X-Req-Id", fmt.Sprintf("%d-%d", w, i))
						resp, err := h.client.Do(req)
						ok := err == nil && resp.StatusCode == 200
						if err == nil {
							io.Copy(io.Discard, resp.Body)
							resp.Body.Close()
						}
						if !ok && method == "GET" {
							getErr.Add(1)
						} else if !ok {
							postErr.Add(1)
						}
					}
				}(w)
			}
			wg.Wait()
			close(stop)
			// A POST reached an origin at most once, across all origins.
			seen := map[string]int{}
			for _, b := range bs {
				b.mu.Lock()
				for id, n := range b.seen {
					seen[id] += n
				}
				b.mu.Unlock()
			}
			replays := 0
			for id, n := range seen {
				if n > 1 && isPost(id) {
					replays++
				}
			}
			t.Logf("%s: %d requests, GET errors %d, POST errors %d (of %d), POST replays %d, origins %+v",
				tt.name, sent.Load(), getErr.Load(), postErr.Load(), posts.Load(), replays, h.p.Origins()[1].Why)
			if replays != 0 {
				t.Errorf("%d POSTs reached an origin more than once", replays)
			}
			if int(getErr.Load()) > tt.maxGETErr {
				t.Errorf("GET errors %d, want ≤ %d", getErr.Load(), tt.maxGETErr)
			}
		})
	}
}

// isPost reports whether the load generator sent request id as a POST.
func isPost(id string) bool {
	var w, i int
	fmt.Sscanf(id, "%d-%d", &w, &i)
	return i%4 == 3
}
