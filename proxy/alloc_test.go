package proxy

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestSuppressedTryFailedAllocatesNothing: once the "try failed" line of an
// origin and cause was written, the lines the rate limiter leaves out for
// the next second cost no allocation, and neither does a failed try that
// max_ejected forbids to eject (the only origin answering 5xx): both run on
// every 5xx answer passed through to the client.
func TestSuppressedTryFailedAllocatesNothing(t *testing.T) {
	p, err := New(pool1(PolicyFirst, "http://127.0.0.1:1"), nil, slog.New(slog.NewTextHandler(io.Discard, nil)),
		WithRegistry(prometheus.NewRegistry()))
	if err != nil {
		t.Fatal(err)
	}
	pl := p.state.Load().pools[0]
	o := pl.origins[0]
	refused := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	req := httptest.NewRequest("GET", "/p", nil)
	tries := 3
	why := func() string { return notRetried(true, 503, tries > 3, true, true) }          // captures, as serve's
	pl.tryFailed(o.name, CauseStatus5xx, req, 1, nil, http.StatusServiceUnavailable, why) // written
	pl.tryFailed(o.name, CauseConnectRefused, req, 1, refused, 0, nil)                    // written
	for range pl.cfg.Passive.Consecutive5xx {
		pl.observe(o, true, time.Millisecond, time.Now().UnixNano())
	}
	if o.has(flagPassive) {
		t.Fatal("the only origin was ejected; max_ejected should forbid it")
	}
	allocs := testing.AllocsPerRun(200, func() {
		pl.tryFailed(o.name, CauseStatus5xx, req, 1, nil, http.StatusServiceUnavailable, why)
		pl.tryFailed(o.name, CauseConnectRefused, req, 1, refused, 0, nil)
		pl.observe(o, true, time.Millisecond, time.Now().UnixNano())
	})
	if allocs != 0 {
		t.Errorf("a suppressed try-failed line and a refused ejection allocate %v times, want 0", allocs)
	}
}
