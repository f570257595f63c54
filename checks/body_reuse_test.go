package checks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

const jsonBodySize = 5 << 20

// bigJSONOrigin serves a 5 MiB JSON document chunked (no Content-Length), in
// 64 KiB writes, each flushed.
func bigJSONOrigin(tb testing.TB) string {
	tb.Helper()
	var sb strings.Builder
	sb.WriteString(`{"status":"ok","items":[`)
	for i := 0; sb.Len() < jsonBodySize-64; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"id":12345,"name":"item","tags":["a","b","c"]}`)
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for off := 0; off < len(body); off += 64 << 10 {
			w.Write(body[off:min(off+64<<10, len(body))])
			w.(http.Flusher).Flush()
		}
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// bigJSONCheck is a check of bigJSONOrigin: with a json assertion (the body is
// kept) or with none (it is streamed).
func bigJSONCheck(tb testing.TB, kept bool) *checks.HTTP {
	tb.Helper()
	var e checks.Expect
	if kept {
		e.JSON = []checks.JSONExpect{{Path: "status", Equals: "ok"}}
	}
	h, err := checks.NewHTTP(checks.HTTPSpec{Path: "/"}, e, checks.Options{Timeout: 10 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	return h
}

// TestKeptBodyBufferReused: a check whose json assertion keeps a 5 MiB
// chunked body reads it, from its second run on, into the buffer its
// earlier runs used: the run allocates well under the body's size (it
// allocated about 3× the body, 64 KiB → 256 KiB → 1 MiB → 4 MiB → 10 MiB
// buffers, fresh memory on every run that the origin's transfer time
// paid for). Counted in bytes, so it does not depend on the machine's speed.
func TestKeptBodyBufferReused(t *testing.T) {
	url := bigJSONOrigin(t)
	h := bigJSONCheck(t, true)
	tg := checks.Target{Name: "o", URL: url}
	run := func() checks.Result {
		res := h.Run(context.Background(), tg)
		if !res.OK {
			t.Fatalf("%s: %s", res.Cause, res.Err)
		}
		return res
	}
	run() // the first run sizes the buffer
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const runs = 3
	for range runs {
		run()
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / runs
	t.Logf("%.2f MiB allocated per run for a %d MiB kept body", float64(per)/(1<<20), jsonBodySize>>20)
	if per > jsonBodySize/4 {
		t.Errorf("%.2f MiB allocated per run after the first, want under %.2f MiB: the kept body's buffer is not reused",
			float64(per)/(1<<20), float64(jsonBodySize/4)/(1<<20))
	}
}

// BenchmarkKeptBodyTransfer: the transfer phase of a 5 MiB chunked JSON body
// streamed (no content assertion) and kept for a json assertion.
//
//	go test -run '^$' -bench KeptBodyTransfer -benchtime 20x ./checks
func BenchmarkKeptBodyTransfer(b *testing.B) {
	url := bigJSONOrigin(b)
	for _, kept := range []bool{false, true} {
		name := "streamed"
		if kept {
			name = "kept"
		}
		b.Run(name, func(b *testing.B) {
			h := bigJSONCheck(b, kept)
			tg := checks.Target{Name: "o", URL: url}
			var transfer, total time.Duration
			for b.Loop() {
				res := h.Run(context.Background(), tg)
				if !res.OK {
					b.Fatalf("%s: %s", res.Cause, res.Err)
				}
				transfer += res.Phases.Transfer
				total += res.Phases.Total
			}
			b.ReportMetric(float64(transfer.Microseconds())/1000/float64(b.N), "transfer-ms/run")
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "total-ms/run")
		})
	}
}
