package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// countingWriter counts the bytes an answer puts on the wire.
type countingWriter struct {
	http.ResponseWriter
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += n
	return n, err
}

// TestVerdictsPollAsksOnlyForThePoolsVerdicts: a proxy reading a canary
// (--verdicts-from) asks GET /api/v1/verdicts for the checks its pools
// count and its origins' targets only, and for a gzipped answer; against a
// canary that knows the filter it reads a few verdicts where the canary
// holds 1,200. Against a canary that ignores the parameters (an older
// vigil) and answers every verdict, uncompressed, the pool judges its
// origins as before: the counted check's unhealthy verdict takes o1 out,
// the other checks' and targets' verdicts do nothing.
func TestVerdictsPollAsksOnlyForThePoolsVerdicts(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(map[bool]string{false: "filtering canary", true: "older canary"}[old], func(t *testing.T) {
			a, b := newBackend(t, "a"), newBackend(t, "b")
			var mu sync.Mutex
			var queries, encodings []string
			var wire []int
			canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				now := time.Now()
				// 60 checks × 20 targets, every one unhealthy but the
				// pool's: only api on o1 may take an origin out.
				var vs []reporting.Verdict
				for c := range 60 {
					for tg := range 20 {
						check, target := fmt.Sprintf("c%02d", c), fmt.Sprintf("t%02d", tg)
						vs = append(vs, verdict(target, check, "eu", reporting.StateUnhealthy, now))
					}
				}
				vs = append(vs, verdict("o0", "other", "eu", reporting.StateUnhealthy, now),
					verdict("o0", "api", "eu", reporting.StateHealthy, now),
					verdict("o1", "api", "eu", reporting.StateUnhealthy, now))
				cw := &countingWriter{ResponseWriter: w}
				if old {
					json.NewEncoder(cw).Encode(vs)
				} else {
					reporting.WriteJSONGzip(cw, r, http.StatusOK, reporting.ParseVerdictFilter(r.URL.Query()).Apply(vs))
				}
				mu.Lock()
				queries, encodings, wire = append(queries, r.URL.RawQuery), append(encodings, r.Header.Get("Accept-Encoding")), append(wire, cw.n)
				mu.Unlock()
			}))
			defer canary.Close()
			cfg := pool1(PolicyRoundRobin, urls(a, b)...)
			cfg.Pools[0].MaxEjected = 100
			cfg.Pools[0].Verdicts.Checks = []string{"api"}
			cfg.VerdictPoll = 20 * time.Millisecond
			h := start(t, cfg, HTTPSource(canary.URL, &http.Client{Timeout: time.Second}), true)
			eventually(t, "o1 taken out by the api verdict", func() bool { return !h.origin("web", "o1").Available() })
			time.Sleep(60 * time.Millisecond) // more polls: o0 stays in
			if !h.origin("web", "o0").Available() {
				t.Fatal("o0 taken out by a verdict of a check the pool does not count")
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(queries[0], "check=api") || !strings.Contains(queries[0], "target=o0%2Co1") || !strings.Contains(queries[0], "max_age=") {
				t.Errorf("the proxy asked ?%s; want check=api, target=o0,o1 and max_age", queries[0])
			}
			if encodings[0] != "gzip" {
				t.Errorf("Accept-Encoding %q, want gzip", encodings[0])
			}
			t.Logf("bytes on the wire per poll: %d", wire[0])
			if !old && wire[0] > 1000 {
				t.Errorf("a filtering canary sent %d bytes for the pool's 2 verdicts", wire[0])
			}
		})
	}
}
