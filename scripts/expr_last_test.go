package scripts

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/checks"
)

// An expr that reads `last` before any http step has run has no response
// to read: a script of expr steps only passed without a request. It is a
// config error, as a ${var} before its extraction is.
func TestExprReadingLastBeforeHTTPIsConfigError(t *testing.T) {
	for _, tc := range []struct{ name, src, key string }{
		{"expr only", `
- expr: 'last.status_code == 0'
`, "script[0].expr: "},
		{"inside a function", `
- expr: 'true'
- expr: 'len(last.body) >= 0 && all([1], {# > 0})'
`, "script[1].expr: "},
		{"after browser steps only", `
- browser: {navigate: /}
- expr: 'last.status_code == 200'
`, "script[1].expr: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(mustScript(t, tc.src), Options{Check: "c", Timeout: 10 * time.Second})
			if !errors.Is(err, ErrLastBeforeHTTP) || !strings.Contains(err.Error(), tc.key+"last is read before any http step") {
				t.Fatalf("err %v, want %s%v", err, tc.key, ErrLastBeforeHTTP)
			}
		})
	}

	// After an http step it reads that step's response.
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	r, err := New(mustScript(t, `
- expr: 'true'
- http: {path: /}
  expect: {status: 418}
- expr: 'last.status_code == 418'
`), Options{Check: "c", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res := r.Run(context.Background(), checks.Target{Name: "t", URL: srv.URL}); !res.OK || hits.Load() != 1 {
		t.Errorf("run %v %s %s, %d requests", res.OK, res.Cause, res.Err, hits.Load())
	}
}
