package canary

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// The publisher batches verdicts for the sink: one goroutine collects them
// for up to PublishEvery or PublishBatch verdicts and makes one Publish
// call, so a store writes one transaction per batch rather than per run.
// Runs never wait for it: when its queue is full the verdict is dropped and
// counted in vigil_canary_publish_dropped_total (the in-memory latest
// verdict is kept regardless).

func (c *Canary) startPublisher() chan struct{} {
	done := make(chan struct{})
	if c.sink == nil {
		close(done)
		return done
	}
	// The readers of the stores this canary writes report duplicate
	// canaries (reporting.Duplicates) in this registry's
	// vigil_duplicate_canaries.
	if err := reporting.Duplicates.Register(c.reg); err != nil {
		c.log.Warn("register vigil_duplicate_canaries", "err", err)
	}
	c.Instance() // drawn at start
	ch := make(chan reporting.Verdict, c.o.PublishQueue)
	c.pubMu.Lock()
	c.pubCh = ch
	c.pubMu.Unlock()
	go func() {
		defer close(done)
		batch := make([]reporting.Verdict, 0, c.o.PublishBatch)
		tick := time.NewTicker(c.o.PublishEvery)
		defer tick.Stop()
		flush := func() {
			if len(batch) > 0 {
				c.deliver(batch)
				batch = make([]reporting.Verdict, 0, c.o.PublishBatch)
			}
		}
		for {
			select {
			case v, ok := <-ch:
				if !ok {
					flush()
					return
				}
				batch = append(batch, v)
				if len(batch) >= c.o.PublishBatch {
					flush()
				}
			case <-tick.C:
				flush()
			}
		}
	}()
	return done
}

// stopPublisher flushes what is queued and switches to direct publishing.
func (c *Canary) stopPublisher(done chan struct{}) {
	c.pubMu.Lock()
	ch := c.pubCh
	c.pubCh = nil
	c.pubMu.Unlock()
	if ch != nil {
		close(ch)
	}
	<-done
}

// publish hands one verdict to the sink without blocking on it, signed
// with the canary's instance.
func (c *Canary) publish(v reporting.Verdict) {
	if c.sink == nil {
		return
	}
	v.Instance = c.Instance()
	c.pubMu.RLock()
	ch := c.pubCh
	if ch != nil {
		select {
		case ch <- v:
		default:
			c.m.publishDropped.Add(1)
		}
		c.pubMu.RUnlock()
		return
	}
	c.pubMu.RUnlock()
	c.deliver([]reporting.Verdict{v})
}

// deliver calls the sink, logging errors and panics.
func (c *Canary) deliver(batch []reporting.Verdict) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("sink panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.sink.Publish(ctx, batch); err != nil {
		c.log.Warn("publish verdicts", "n", len(batch), "err", err)
	}
}
