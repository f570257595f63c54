package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// sleepyOrigin answers the paths in slow only after d (or when the request
// is cancelled), every other path at once with "ok NAME"; failing paths in
// fail answer 500.
func sleepyOrigin(t *testing.T, name string, d time.Duration, slow, fail []string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range slow {
			if p == "*" || p == r.URL.Path {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(d):
				}
			}
		}
		for _, p := range fail {
			if p == r.URL.Path {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
		}
		w.Write([]byte("ok " + name))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestForwardStatusOfLastFailure: when every try failed, the client gets
// the status of the last failure, as nginx does: a try that timed out then
// two refused connections is 502 (was: 504, the first try's timeout
// deciding), two refused connections then a timeout is 504.
func TestForwardStatusOfLastFailure(t *testing.T) {
	for _, engineName := range bothEngines {
		for _, tc := range []struct {
			name  string
			slowN int // index of the slow origin among three; the others refuse
			want  int
			msg   string
		}{
			{"timeout, refused, refused", 0, http.StatusBadGateway, "all origins failed"},
			{"refused, timeout, refused", 1, http.StatusBadGateway, "all origins failed"},
			{"refused, refused, timeout", 2, http.StatusGatewayTimeout, "no origin answered in time"},
		} {
			t.Run(engineName+"/"+tc.name, func(t *testing.T) {
				var us []string
				for i := 0; i < 3; i++ {
					if i == tc.slowN {
						us = append(us, sleepyOrigin(t, "slow", 3*time.Second, []string{"*"}, nil))
					} else {
						us = append(us, deadURL(t))
					}
				}
				cfg := pool1(PolicyFirst, us...)
				cfg.Pools[0].Passive.Consecutive5xx = -1
				cfg.Pools[0].Retry = RetryConfig{Tries: 3, TryTimeout: 300 * time.Millisecond, Budget: 10 * time.Second}
				cfg.Pools[0].ConnectTimeout = 100 * time.Millisecond
				h := startWith(t, cfg, nil, false, engineName)
				began := time.Now()
				code, body, _ := h.do("GET", "/mixed", "")
				if code != tc.want || !strings.Contains(body, tc.msg) {
					t.Fatalf("GET: %d %q after %v, want %d %q", code, body, time.Since(began).Round(time.Millisecond), tc.want, tc.msg)
				}
			})
		}
	}
}
