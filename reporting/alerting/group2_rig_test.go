package alerting

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// startWith is one process start as gbRig.start makes it, with
// alerting.group_by set to groupBy (nil: the default) and set applied to
// the rest of the config.
func (r *gbRig) startWith(groupBy []string, set func(*Config)) *Alerter {
	r.t.Helper()
	a, err := New(r.configWith(groupBy, set), nil, r.store, Options{Now: r.clock.Now, Registry: prometheus.NewRegistry(),
		StatePath: r.path, Log: slog.New(slog.NewTextHandler(lockedWriter{r.logs}, nil))})
	if err != nil {
		r.t.Fatalf("New: %v", err)
	}
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.Close(ctx)
	})
	return a
}

// configWith is gbRig.config with set applied.
func (r *gbRig) configWith(groupBy []string, set func(*Config)) Config {
	cfg := r.config(groupBy)
	if set != nil {
		set(&cfg)
	}
	return cfg
}

// pdActions are the PagerDuty events received from the from-th on, each
// as its action and dedup_key ("trigger vigil/down/c01/origin-a/page").
func (r *gbRig) pdActions(from int) []string {
	r.t.Helper()
	var out []string
	for i, ev := range r.pdEvents() {
		if i >= from {
			out = append(out, ev.EventAction+" "+ev.DedupKey)
		}
	}
	return out
}
