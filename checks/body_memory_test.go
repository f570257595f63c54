package checks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/reporting/units"
)

const bigBody = 64 << 20

// bigOrigin serves a 64 MiB body of "a" ending in "needle", with a
// Content-Length on /cl and chunked (no length) on /chunked.
func bigOrigin(tb testing.TB) string {
	tb.Helper()
	body := make([]byte, bigBody)
	for i := range body {
		body[i] = 'a'
	}
	copy(body[len(body)-6:], "needle")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cl" {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body)
			return
		}
		for off := 0; off < len(body); off += 1 << 20 {
			w.Write(body[off : off+1<<20])
			w.(http.Flusher).Flush()
		}
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

func bigCheck(tb testing.TB, path string) *checks.HTTP {
	tb.Helper()
	h, err := checks.NewHTTP(checks.HTTPSpec{Path: path, BodyLimit: units.ByteSize(bigBody)},
		checks.Expect{Body: checks.BodyExpect{Contains: []string{"needle"}}}, checks.Options{Timeout: 20 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	return h
}

// A body assertion on a body of body_limit keeps one buffer of about the
// body's size: with a Content-Length exactly that, without one at most
// 4/3 of it in all (buffers grow 4× at a time). The whole run, server
// writes included, allocates under 1.5× the body; it used to be about 5×
// (append's growth through 32 KiB chunks), which with GC lag showed as a
// peak RSS of 3–4× body_limit.
func TestBodyAssertionMemory(t *testing.T) {
	url := bigOrigin(t)
	for _, path := range []string{"/cl", "/chunked"} {
		t.Run(path, func(t *testing.T) {
			h := bigCheck(t, path)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res := h.Run(context.Background(), checks.Target{Name: "o", URL: url})
			runtime.ReadMemStats(&after)
			if !res.OK {
				t.Fatalf("%s: %s", res.Cause, res.Err)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %.1f MiB allocated for a %d MiB body", path, float64(alloc)/(1<<20), bigBody>>20)
			if limit := uint64(bigBody) * 3 / 2; alloc > limit {
				t.Errorf("%s: allocated %d MiB for a %d MiB body, want under %d MiB", path, alloc>>20, bigBody>>20, limit>>20)
			}
		})
	}
}

// BenchmarkBodyAssertion64MiB: B/op of one run of a body.contains check on
// a 64 MiB body (body_limit 64MiB), with and without Content-Length.
func BenchmarkBodyAssertion64MiB(b *testing.B) {
	url := bigOrigin(b)
	for _, path := range []string{"/cl", "/chunked"} {
		b.Run(path[1:], func(b *testing.B) {
			h := bigCheck(b, path)
			b.ReportAllocs()
			for b.Loop() {
				if r := h.Run(context.Background(), checks.Target{URL: url}); !r.OK {
					b.Fatalf("%s %s", r.Cause, r.Err)
				}
			}
		})
	}
}
