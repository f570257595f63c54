package proxy

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A verdicts answer over 16 MiB is refused, with or without a
// Content-Length, and the source counts as failing (VerdictHealth names
// it); one under the limit is read.
func TestVerdictBodyLimit(t *testing.T) {
	doc := func(size int) []byte { // a valid JSON array padded with spaces
		return append(append([]byte("["), bytes.Repeat([]byte(" "), size-2)...), ']')
	}
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		want    string // in the error; "" for success
	}{
		{"under the limit", 16<<20 - 1, false, ""},
		{"over, with Content-Length", 17 << 20, false, "answer larger than the 16 MiB limit for a verdicts document (Content-Length 17825792)"},
		{"over, chunked", 17 << 20, true, "answer larger than the 16 MiB limit for a verdicts document"},
		{"one byte over, chunked", 16<<20 + 1, true, "answer larger than the 16 MiB limit for a verdicts document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := doc(tc.size)
			canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				} else {
					w.(http.Flusher).Flush() // headers out: no Content-Length
				}
				w.Write(body)
			}))
			defer canary.Close()
			src := HTTPSource(canary.URL, &http.Client{Timeout: 10 * time.Second})
			vs, err := src.Verdicts(context.Background(), time.Minute)
			if tc.want == "" {
				if err != nil || len(vs) != 0 {
					t.Fatalf("got %d verdicts, %v; want an empty list", len(vs), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), canary.URL) {
				t.Fatalf("err = %v, want the source named and %q", err, tc.want)
			}
			if tc.chunked {
				return
			}
			// Through the proxy: the source is reported failing.
			cfg := pool1(PolicyRoundRobin, "http://127.0.0.1:1")
			cfg.VerdictPoll = 50 * time.Millisecond
			h := start(t, cfg, src, true)
			eventually(t, "VerdictHealth to report the oversized answer", func() bool {
				err := h.p.VerdictHealth()
				return err != nil && strings.Contains(err.Error(), tc.want)
			})
		})
	}
}
