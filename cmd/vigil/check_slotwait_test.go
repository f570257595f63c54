package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/canary"
	"github.com/vigil-synthetics/vigil/checks"
	"github.com/vigil-synthetics/vigil/scripts"
	"github.com/vigil-synthetics/vigil/scripts/scripttest"
)

// endTimed is a script probe that records when its Run returned.
type endTimed struct {
	*scripts.Runner
	mu    sync.Mutex
	ended time.Time
	done  chan struct{}
}

func (e *endTimed) Run(ctx context.Context, t checks.Target) checks.Result {
	defer close(e.done)
	res := e.Runner.Run(ctx, t)
	e.mu.Lock()
	e.ended = time.Now()
	e.mu.Unlock()
	return res
}

// TestCheckInterruptEndsBrowserSlotWait: vigil check's browser run is
// queued for the browser's only slot (held by another run) past its check's
// timeout; SIGINT (the cancelled context) then ends the queued run within
// a second, instead of leaving it waiting for the slot after runOnce gave
// up on it.
func TestCheckInterruptEndsBrowserSlotWait(t *testing.T) {
	// Another run holds the only slot for about 5s.
	b, url := scripttest.HoldBrowserSlot(t)
	target := checks.Target{Name: "o", URL: url}

	const timeout = 300 * time.Millisecond
	page := "/"
	r, err := scripts.New(scripts.Script{{Browser: &scripts.BrowserStep{Navigate: &page}}},
		scripts.Options{Check: "queued", Timeout: timeout, Browser: b})
	if err != nil {
		t.Fatal(err)
	}
	probe := &endTimed{Runner: r, done: make(chan struct{})}
	pair := canary.Pair{Check: &canary.CheckConfig{Name: "queued", Timeout: timeout}, Target: target, Probe: probe}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	time.AfterFunc(3*timeout, func() { // SIGINT after the timeout passed
		probe.mu.Lock()
		cancelled = time.Now()
		probe.mu.Unlock()
		cancel()
	})
	results := runOnce(ctx, []canary.Pair{pair}, 1)
	if len(results) != 1 || !results[0].Interrupted {
		t.Errorf("results %+v, want the queued run interrupted", results)
	}
	select {
	case <-probe.done:
		probe.mu.Lock()
		took := probe.ended.Sub(cancelled)
		probe.mu.Unlock()
		if took > time.Second {
			t.Errorf("the queued run ended %s after the interrupt, want within 1s", took)
		}
	case <-time.After(10 * time.Second):
		t.Error("the queued run did not end within 10s of the interrupt")
	}
}
