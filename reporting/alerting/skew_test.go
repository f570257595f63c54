package alerting

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vigil-synthetics/vigil/reporting"
)

// TestRegionClockSkew: regions whose clocks are off by 10s publish every
// 2s to one store. A region whose clock is behind is neither reported dead
// while it runs nor left out of a down alert's quorum; once the regions
// stop, every one of them, slow, right or fast, is reported dead within
// the same evaluation or the next.
func TestRegionClockSkew(t *testing.T) {
	const every = 2 * time.Second
	skew := map[string]time.Duration{ // region clock − alerter clock
		"us-east": 0, "eu-west": 0, "slow10a": -10 * time.Second, "fast10a": 10 * time.Second,
	}
	clock := &fakeClock{t: t0}
	// The store shows verdicts dated up to a minute ahead: fast10a's.
	store := &memStore{clock: func() time.Time { return clock.Now().Add(time.Minute) }}
	hook := newRecorder(t)
	cfg := Config{Quorum: 2, EvaluationInterval: every, Down: DownRule{For: every}, Retry: RetryConfig{Backoff: 5 * time.Millisecond},
		Receivers: []Receiver{{Name: "ops", Webhook: &WebhookConfig{URL: Secret(hook.srv.URL + "/hook")}}}}
	a, err := New(cfg, nil, store, Options{Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(context.Background()) })
	a.SetChecks([]string{"healthz"})

	// step publishes one verdict per region in states, dated on the
	// region's clock as written 300ms ago, then evaluates.
	step := func(states map[string]reporting.State) {
		t.Helper()
		now := clock.Add(every)
		for region, st := range states {
			store.add(verdict("healthz", "origin-a", region, now.Add(skew[region]-300*time.Millisecond), st, every))
		}
		if err := a.Evaluate(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	all := func(st reporting.State, unhealthy ...string) map[string]reporting.State {
		m := map[string]reporting.State{}
		for r := range skew {
			m[r] = st
		}
		for _, r := range unhealthy {
			m[r] = U
		}
		return m
	}

	for range 30 {
		step(all(H))
	}
	if got := hook.webhooks(t); len(got) != 0 {
		t.Fatalf("every region healthy and publishing for 60s: %d notifications, first %q; want none", len(got), got[0].Text)
	}

	// origin-a fails in slow10a and eu-west: a quorum of 2, for down.for.
	for range 2 {
		step(all(H, "slow10a", "eu-west"))
	}
	got := hook.webhooks(t)
	if len(got) != 1 || got[0].Rule != RuleDown ||
		!strings.Contains(got[0].Text, "healthz × origin-a down in 2 regions (eu-west, slow10a)") {
		t.Fatalf("origin-a failing in eu-west and slow10a: %+v, want one down alert naming both", got)
	}
	for range 3 {
		step(all(H))
	}
	if got := statuses(t, hook); strings.Join(got, " ") != "firing:down resolved:down" {
		t.Fatalf("origin-a healthy again: %v, want the down alert resolved", got)
	}

	// Every canary stops. Right clocks are reported dead after 3 × 2s
	// silent plus dead_man.for (2 × 2s); the skewed ones no later than one
	// evaluation after them.
	var dead []string
	for i := 1; i <= 8 && len(dead) < len(skew); i++ {
		step(nil)
		dead = dead[:0]
		for _, al := range a.Active() {
			if al.Rule == RuleDeadMan {
				dead = append(dead, al.Region)
				if i < 5 {
					t.Fatalf("%s after the canaries stopped: %s", time.Duration(i)*every, al.Summary)
				}
			}
		}
		if len(dead) > 0 && len(dead) < len(skew) && i > 5 {
			t.Fatalf("%s after the canaries stopped only %v are reported dead, want all of %d regions",
				time.Duration(i)*every, dead, len(skew))
		}
	}
	if len(dead) != len(skew) {
		t.Fatalf("16s after the canaries stopped %v are reported dead, want all of %d regions", dead, len(skew))
	}
}
